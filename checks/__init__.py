"""The checks, one subpackage per platform: checks/datahub/ (a `Check` per divergence, run by
the scan over each entity's aspects and projections) and checks/openmetadata/ (an entity's row
against its document). Each finding carries a stable check id and the repairs that fix it."""
