"""The database side of the OM-like server: entity rows, relationships, tag usage, retry queue.

One SQL text serves both engines (PostgreSQL folds unquoted camelCase names to the lowercase
columns OM's PostgreSQL schema has); only the JSON parameter is cast to jsonb on PostgreSQL.
Statements as CollectionDAO issues them (insert, update json + hash, delete by id, ...).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, text

from sandbox.openmetadata.model import EntityType


def dumps(value: Any) -> str:
    """Compact JSON, as Jackson writes it."""
    return orjson.dumps(value).decode()


class OmStore:
    """Writes OM's rows on one engine (PostgreSQL or MariaDB/MySQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.postgres = engine.dialect.name.startswith("postgres")
        self._json = "CAST(:json AS jsonb)" if self.postgres else ":json"

    # ------------------------------------------------------------ entities

    def insert(self, conn: Connection, et: EntityType, rows: Sequence[tuple[dict[str, Any], str]]) -> None:
        """Insert entities: (stored JSON, fqnHash or nameHash) each."""
        if not rows:
            return
        conn.execute(
            text(f"INSERT INTO {et.table} (json, {et.hash_column}) VALUES ({self._json}, :hash)"),
            [{"json": dumps(j), "hash": h} for j, h in rows],
        )

    def update(
        self, conn: Connection, et: EntityType, entity_id: str, stored: dict[str, Any], hash_value: str
    ) -> None:
        """Replace an entity's JSON (EntityDAO.update: json and the hash, by id)."""
        conn.execute(
            text(f"UPDATE {et.table} SET json = {self._json}, {et.hash_column} = :hash WHERE id = :id"),
            {"json": dumps(stored), "hash": hash_value, "id": entity_id},
        )

    def delete(self, conn: Connection, et: EntityType, entity_id: str) -> None:
        """Hard-delete an entity's row."""
        conn.execute(text(f"DELETE FROM {et.table} WHERE id = :id"), {"id": entity_id})

    def read(self, et: EntityType, entity_id: str) -> dict[str, Any] | None:
        """An entity's stored JSON, None when the row is gone."""
        with self.engine.connect() as conn:
            value = conn.execute(
                text(f"SELECT json FROM {et.table} WHERE id = :id"), {"id": entity_id}
            ).scalar()
        if value is None:
            return None
        return value if isinstance(value, dict) else dict(json.loads(value))

    # ------------------------------------------------------------ relationships, tags

    def relate(self, conn: Connection, rows: Iterable[tuple[str, str, str, str, int]]) -> None:
        """Insert entity_relationship rows: (fromId, toId, fromEntity, toEntity, relation)."""
        params = [{"f": f, "t": t, "fe": fe, "te": te, "r": r} for f, t, fe, te, r in rows]
        if params:
            conn.execute(
                text(
                    "INSERT INTO entity_relationship "
                    "(fromId, toId, fromEntity, toEntity, relation, relationType) "
                    "VALUES (:f, :t, :fe, :te, :r, '')"
                ),
                params,
            )

    def relate_json(self, conn: Connection, rows: Iterable[tuple[str, str, str, str, int, Any]]) -> None:
        """Insert or replace entity_relationship rows carrying JSON (a lineage edge's
        LineageDetails, a vote): (fromId, toId, fromEntity, toEntity, relation, json)."""
        for f, t, fe, te, r, value in rows:
            conn.execute(
                text("DELETE FROM entity_relationship WHERE fromId = :f AND toId = :t AND relation = :r"),
                {"f": f, "t": t, "r": r},
            )
            conn.execute(
                text(
                    "INSERT INTO entity_relationship (fromId, toId, fromEntity, toEntity, relation, "
                    f"relationType, json) VALUES (:f, :t, :fe, :te, :r, '', {self._json})"
                ),
                {"f": f, "t": t, "fe": fe, "te": te, "r": r, "json": dumps(value)},
            )

    def unrelate_to(self, conn: Connection, to_id: str, relation: int) -> None:
        """Delete the rows pointing at `to_id` with `relation` (e.g. its owners)."""
        conn.execute(
            text("DELETE FROM entity_relationship WHERE toId = :t AND relation = :r"),
            {"t": to_id, "r": relation},
        )

    def unrelate_from(self, conn: Connection, to_id: str, relation: int, from_entity: str) -> None:
        """Delete the rows of `relation` pointing at `to_id` from entities of one type (its domains)."""
        conn.execute(
            text("DELETE FROM entity_relationship WHERE toId = :t AND relation = :r AND fromEntity = :f"),
            {"t": to_id, "r": relation, "f": from_entity},
        )

    def unrelate_all(self, conn: Connection, entity_id: str) -> None:
        """Delete every relationship from or to an entity (hard delete's cleanup)."""
        conn.execute(text("DELETE FROM entity_relationship WHERE fromId = :i OR toId = :i"), {"i": entity_id})

    def apply_tags(self, conn: Connection, rows: Iterable[dict[str, Any]]) -> None:
        """Insert tag_usage rows (source, tagFQN, tagFQNHash, targetFQNHash, labelType, state)."""
        params = list(rows)
        if params:
            conn.execute(
                text(
                    "INSERT INTO tag_usage (source, tagFQN, tagFQNHash, targetFQNHash, "
                    "labelType, state) VALUES (:source, :tagFQN, :tagFQNHash, "
                    ":targetFQNHash, :labelType, :state)"
                ),
                params,
            )

    def remove_tags(self, conn: Connection, target_hash: str, *, prefix: bool = False) -> None:
        """Delete a target's tag_usage rows (with `prefix`, its children's too)."""
        conn.execute(
            text(
                "DELETE FROM tag_usage WHERE targetFQNHash = :h"
                + (" OR targetFQNHash LIKE :p" if prefix else "")
            ),
            {"h": target_hash, "p": target_hash + ".%"},
        )

    # ------------------------------------------------------------ search bookkeeping

    def queue_retry(self, entity_id: str, entity_fqn: str, entity_type: str, reason: str) -> None:
        """SearchIndexRetryQueueDAO.upsert: a failed live-indexing write, PENDING."""
        if self.postgres:
            sql = (
                "INSERT INTO search_index_retry_queue (entityId, entityFqn, failureReason, "
                "status, entityType) VALUES (:i, :f, :r, 'PENDING', :t) "
                "ON CONFLICT (entityId, entityFqn) DO UPDATE SET "
                "failureReason = EXCLUDED.failureReason, status = EXCLUDED.status, "
                "entityType = EXCLUDED.entityType"
            )
        else:
            sql = (
                "INSERT INTO search_index_retry_queue (entityId, entityFqn, failureReason, "
                "status, entityType) VALUES (:i, :f, :r, 'PENDING', :t) "
                "ON DUPLICATE KEY UPDATE failureReason = VALUES(failureReason), "
                "status = VALUES(status), entityType = VALUES(entityType)"
            )
        with self.engine.begin() as conn:
            conn.execute(text(sql), {"i": entity_id, "f": entity_fqn, "r": reason, "t": entity_type})

    def retry_queue(self) -> list[dict[str, Any]]:
        """The retry queue's rows (entityId, entityFqn, failureReason, status, entityType)."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT entityId, entityFqn, failureReason, status, "
                    "entityType, retryCount FROM search_index_retry_queue "
                    "ORDER BY entityId"
                )
            ).all()
        keys = ("entityId", "entityFqn", "failureReason", "status", "entityType", "retryCount")
        return [dict(zip(keys, row, strict=True)) for row in rows]
