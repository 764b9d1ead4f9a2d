"""DataHub's home: the platform object (`platform.PLATFORM`), its pipelines' entry points, its
repair modes and commands, its triage walk (`triage/`), the V3 index pass (`v3.py`); its checks
in `auditor.checks.datahub`, its repairs in `auditor.rebuild.datahub`.

DataHub was the first platform, so part of its knowledge still sits in the shared layers it
shaped: naming, the registry and the projection in `auditor.core`, its readers and writers in
`auditor.backends`, the scan with its Kafka evidence in `auditor.scan` (docs/architecture.md)."""
