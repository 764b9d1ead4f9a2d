"""On-call triage of one entity: walk its boundaries from the row to the index, name the first break."""

from auditor.triage.walk import walk

__all__ = ["walk"]
