"""How DataHub derives a search document from its aspect rows (SearchDocumentTransformer, after it)."""
