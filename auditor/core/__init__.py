"""The kernel: data model, registry, projection, join, classification and scan state."""
