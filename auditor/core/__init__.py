"""The kernel: data model, repair plan and repairs as data, classification, the merge-join, the
data of each pipeline's result."""
