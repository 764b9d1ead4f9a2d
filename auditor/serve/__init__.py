"""`auditor serve`: the on-call console, a resident read-only HTTP service (docs/serve.md)."""
