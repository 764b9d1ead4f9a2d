"""The steps every platform's scan shares: its options, the report closed, shard plans (each
platform's scan pipeline is in its home)."""
