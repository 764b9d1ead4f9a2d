"""DataHub's entity registry, read from the acryl-datahub wheel's annotated .avsc schemas."""
