"""On-call triage of one entity, shared by every platform: `place` puts the scan's findings on the
boundary where each breaks. Each platform walks its own boundaries (DataHub's walk:
auditor/platforms/datahub/triage/; OpenMetadata's: auditor/platforms/openmetadata/triage.py)."""
