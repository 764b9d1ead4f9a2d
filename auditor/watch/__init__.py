"""auditor watch and auditor probe: how stale search is, continuously and end to end."""
