"""OpenMetadata's home: its entity tables, how its server derives a search document, its readers,
its scan (no change log), triage and reindex. The platform object is `platform.PLATFORM`."""
