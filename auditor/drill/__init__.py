"""Restore drills: compare two environments of a platform (tables, counts, search, Kafka) after a restore."""
