"""DataHub's scan pipeline: sample -> join -> re-observe -> judge -> record."""
