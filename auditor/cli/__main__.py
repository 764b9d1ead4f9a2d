"""`python -m auditor.cli`: the same as the `auditor` console script."""

from auditor.cli import main

main()
