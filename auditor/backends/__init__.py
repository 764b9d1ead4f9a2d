"""Backends: the metadata store (SQL), the search index and the event log (Kafka)."""
