"""The heal loop (docs/heal.md): a scheduled scan that repairs what it has proven, within a
policy (policy.py), stopped by guards that page instead (guards.py), one iteration a call
(loop.py's `heal_once`), every write journaled and undoable (`auditor rebuild undo`)."""
