"""An OpenMetadata-shaped test world: OM's tables, search indices, a server-like writer, faults.

Entry points: `ddl.create_schema`, `indices.create_indices`, `server.OmServer`,
`generator.seed`, `live.LiveWriter`, `databases.scratch_database` (see docs/sandbox-openmetadata.md).
"""
