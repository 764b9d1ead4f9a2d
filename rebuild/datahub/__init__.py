"""DataHub's repairs: replay (RESTATE MCLs through DataHub's own consumer), reindex (documents
written from the rows, the auditor's own projection), `--full` (its Stage for the staged-index
engine), verification with the scan's own steps, and the after-restore window. The shared
machinery (the request, checkpoints and locks, throttling, the staged-index engine, shard
workers, federation) is in rebuild/."""
