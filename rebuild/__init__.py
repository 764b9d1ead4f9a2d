"""Repairs (replay of RESTATE MCLs, reindex from the database): not built yet, see the README."""
