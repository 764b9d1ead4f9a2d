"""Repairs (`auditor rebuild`): replay or reindex from the rows; checkpointed, sharded, verified."""
