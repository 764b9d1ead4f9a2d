"""DataHub's home: the platform object (`platform.PLATFORM`) and its repair commands.

DataHub was the first platform, so most of its knowledge still sits in the shared layers it
shaped: naming, the registry and the projection in `auditor.core`, its readers and writers in
`auditor.backends`, the scan with its Kafka evidence in `auditor.scan`, its triage walk in
`auditor.triage`, replay and reindex in `auditor.rebuild` (docs/architecture.md)."""
