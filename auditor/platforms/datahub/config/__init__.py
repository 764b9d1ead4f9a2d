"""DataHub's configuration: `auditor config init` for DataHub (init: the plan of the settings found
in a deployment; cloud: its AWS and managed-service entries; pgqueue: its PostgreSQL queue transport)."""
