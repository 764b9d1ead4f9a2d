"""DataHub's home: the platform object (`platform.PLATFORM`) and everything it knows of DataHub:
its names (`naming`, `urns`, `urn_text`), its entity registry (`registry/`), how it derives a
search document (`documents/`), its readers and writers (`backends/`), its scan pipeline
(`scan/`), the V3 index pass (`v3.py`), its triage walk (`triage/`), the watch and the probe
(`watch/`), its repair modes and commands, its configuration from GMS's environment; its checks
in `auditor.checks.datahub`, its repairs in `auditor.rebuild.datahub` (docs/architecture.md)."""
