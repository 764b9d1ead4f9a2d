"""`auditor watch` and `auditor probe` on DataHub: how stale search is, continuously and end to end."""
