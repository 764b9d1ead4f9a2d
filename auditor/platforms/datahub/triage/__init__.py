"""DataHub's triage of one urn: walk its boundaries (the rows, each aspect's own MCL, the MAE
group's position, the document, system metadata, edges) and name the first that breaks; the
shared rule that places findings on boundaries is auditor/triage/place.py."""

from auditor.platforms.datahub.triage.walk import walk

__all__ = ["walk"]
