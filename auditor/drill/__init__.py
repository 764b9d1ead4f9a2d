"""Restore drills: compare two DataHub environments (tables, counts, search, Kafka) after a restore."""
