"""Which DataHub release wrote the data, and what each release indexes (rules from its wheel)."""
