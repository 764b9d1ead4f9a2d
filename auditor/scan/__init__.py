"""The scan pipeline: sample the consumer, join truth and projections, re-observe, judge, record."""
