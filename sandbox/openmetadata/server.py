"""An OpenMetadata-server-like writer: the repository's DB writes, then its search writes.

As EntityRepository does: commit the row (JSON as stored), its entity_relationship rows
(contains, owns, has) and tag_usage rows, THEN write the search doc synchronously; a search
failure is logged and the commit stands (newer OM also queues it in search_index_retry_queue).
Every write takes an optional `fault` (sandbox.openmetadata.faults.Fault).
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sqlalchemy import Engine

from sandbox.openmetadata import faults
from sandbox.openmetadata import fqn as fqnlib
from sandbox.openmetadata.entities import (
    ADMIN,
    OmEntity,
    new_entity_json,
    next_version,
    now_ms,
)
from sandbox.openmetadata.faults import Fault, SearchWriteError
from sandbox.openmetadata.model import (
    CONTAINS,
    FOLLOWS,
    HAS,
    LABEL_STATES,
    LABEL_TYPES,
    OWNS,
    SERVICE_OF,
    TAG_SOURCES,
    UPSTREAM,
    VOTED,
    entity_type,
)
from sandbox.openmetadata.search_writer import OmSearchWriter
from sandbox.openmetadata.store import OmStore
from sandbox.search import SearchStore

log = logging.getLogger("sandbox.openmetadata.server")
Snapshot = dict[str, list[tuple[str, dict[str, Any]]]]


class OmServer:
    """Creates, updates, soft-deletes, restores and hard-deletes OM entities, with faults."""

    def __init__(self, engine: Engine, search: SearchStore, cluster_alias: str = "") -> None:
        self.store = OmStore(engine)
        self.entities: dict[str, OmEntity] = {}
        self.writer = OmSearchWriter(search, cluster_alias, self.entities.get)
        self.search = search
        self.cluster_alias = cluster_alias
        self.search_failures: list[tuple[str, str]] = []  # (entity id, reason) as logged
        self._lock = threading.RLock()

    # ------------------------------------------------------------ create

    def build(
        self,
        kind: str,
        name: str,
        parent: OmEntity | None = None,
        *,
        description: str | None = None,
        owners: Sequence[OmEntity] = (),
        tags: Sequence[dict[str, Any]] = (),
        display_name: str | None = None,
        entity_id: str | None = None,
        updated_at: int | None = None,
        **extra: Any,
    ) -> OmEntity:
        """An entity as the create API would build it (not yet written)."""
        et = entity_type(kind)
        if display_name is not None:
            extra["displayName"] = display_name
        doc = new_entity_json(
            kind, name, parent, entity_id=entity_id, description=description, updated_at=updated_at, **extra
        )
        if parent is not None:
            for ref_field in ("database", "databaseSchema", "glossary", "classification"):
                if parent.type == ref_field:
                    doc[ref_field] = parent.reference()
                elif ref_field in parent.json and ref_field not in doc:
                    doc[ref_field] = copy.deepcopy(parent.json[ref_field])
            service = parent.reference() if parent.et.is_service else parent.json.get("service")
            if service is not None and kind in SERVICE_OF:
                doc["service"] = copy.deepcopy(service)
                doc["serviceType"] = parent.json.get("serviceType")
        if owners:
            doc["owners"] = [o.reference() for o in owners]
        if tags:
            doc["tags"] = [copy.deepcopy(t) for t in tags]
        if et.key in SERVICE_OF or et.key in ("glossaryTerm", "glossary"):
            doc.setdefault("owners", [])
            doc.setdefault("tags", [])
        return OmEntity(kind, doc, parent.id if parent is not None else None)

    def create(
        self,
        kind: str,
        name: str,
        parent: OmEntity | None = None,
        *,
        fault: Fault | None = None,
        **fields: Any,
    ) -> OmEntity:
        """Create one entity: its row, relationships and tags, then its doc."""
        entity = self.build(kind, name, parent, **fields)
        self.create_many([entity], fault=fault)
        return entity

    def create_many(self, entities: Sequence[OmEntity], *, fault: Fault | None = None) -> None:
        """Create built entities in one transaction, then index their docs in bulk."""
        faults.check("create", fault)
        by_type: dict[str, list[OmEntity]] = {}
        for e in entities:
            by_type.setdefault(e.type, []).append(e)
        with self._lock:
            for e in entities:
                self.entities[e.id] = e
            try:
                with self.store.engine.begin() as conn:
                    for kind, group in by_type.items():
                        self.store.insert(
                            conn, entity_type(kind), [(e.stored_json(), e.fqn_hash) for e in group]
                        )
                    self.store.relate(conn, (r for e in entities for r in self._relations(e)))
                    self.store.apply_tags(conn, (row for e in entities for row in self._tag_rows(e)))
            except Exception:
                for e in entities:
                    self.entities.pop(e.id, None)
                raise
            for e in entities:
                if e.parent_id in self.entities:
                    self.entities[e.parent_id].children.append(e.id)
        self._search(list(entities), "create", fault, lambda: self.writer.create(entities))

    # ------------------------------------------------------------ update

    def update(
        self,
        entity: OmEntity | str,
        *,
        description: str | None = None,
        display_name: str | None = None,
        owners: Sequence[OmEntity] | None = None,
        tags: Sequence[dict[str, Any]] | None = None,
        updated_by: str = ADMIN,
        domains: Sequence[OmEntity] | None = None,
        fault: Fault | None = None,
    ) -> OmEntity:
        """PATCH: description, displayName, owners, tags, domains; version +0.1; then the doc
        (and the docs of the children that inherit owners or domains)."""
        faults.check("update", fault)
        e = self._get(entity)
        with self._lock:
            changes: list[dict[str, Any]] = []
            if description is not None:
                changes.append(self._field("description", e.json.get("description"), description))
                e.json["description"] = description
            if display_name is not None:
                changes.append(self._field("displayName", e.json.get("displayName"), display_name))
                e.json["displayName"] = display_name
            if owners is not None:
                changes.append(self._field("owners", e.json.get("owners"), [o.reference() for o in owners]))
                e.json["owners"] = [o.reference() for o in owners]
            if tags is not None:
                changes.append(self._field("tags", e.json.get("tags"), list(tags)))
                e.json["tags"] = [copy.deepcopy(t) for t in tags]
            if domains is not None:
                changes.append(
                    self._field("domains", e.json.get("domains"), [d.reference() for d in domains])
                )
                e.json["domains"] = [d.reference() for d in domains]
            self._bump(e, changes, updated_by)
            with self.store.engine.begin() as conn:
                self.store.update(conn, e.et, e.id, e.stored_json(), e.fqn_hash)
                if owners is not None:
                    self.store.unrelate_to(conn, e.id, OWNS)
                    self.store.relate(conn, ((o.id, e.id, o.type, e.type, OWNS) for o in owners))
                if tags is not None:
                    self.store.remove_tags(conn, e.fqn_hash)
                    self.store.apply_tags(conn, self._tag_rows(e))
                if domains is not None:
                    self._relate_domains(conn, e, domains)
        if fault is Fault.STALE_UPDATE:
            log.debug("fault %s: update of %s not sent to search", fault.name, e.id)
            return e
        self._search(
            [e],
            "update",
            None if fault is Fault.INHERITED_NOT_PROPAGATED else fault,
            lambda: self.writer.update(e),
        )
        if fault is Fault.INHERITED_NOT_PROPAGATED:
            log.debug("fault %s: %s's heirs keep their inherited fields", fault.name, e.id)
            return e
        inherited = [f for f, given in (("owners", owners), ("domains", domains)) if given is not None]
        if inherited:  # children that inherit its owners or domains: their docs follow
            heirs = [d for d in self._subtree(e)[1:] if any(not d.json.get(f) for f in inherited)]
            self._search(heirs, "update", None, lambda: [self.writer.update(d) for d in heirs])
        return e

    def add_assets(
        self, domain: OmEntity | str, assets: Sequence[OmEntity | str], *, fault: Fault | None = None
    ) -> list[OmEntity]:
        """A domain's "add assets" (PUT /domains/{name}/assets/add): the assets' domain
        relationships change, their rows and versions do not; then their docs."""
        faults.check("add_assets", fault)
        d = self._get(domain)
        moved = [self._get(a) for a in assets]
        with self._lock, self.store.engine.begin() as conn:
            for e in moved:
                e.json["domains"] = [d.reference()]
                self._relate_domains(conn, e, [d])
        if fault is Fault.STALE_UPDATE:
            log.debug("fault %s: the assets' docs keep their old domains", fault.name)
            return moved
        self._search(moved, "update", fault, lambda: [self.writer.update(e) for e in moved])
        return moved

    def add_lineage(
        self,
        upstream: OmEntity | str,
        entity: OmEntity | str,
        details: dict[str, Any] | None = None,
        *,
        fault: Fault | None = None,
    ) -> OmEntity:
        """LineageRepository.addLineage: the `upstream` (13) row from the upstream entity with its
        LineageDetails as JSON; the downstream entity's row and version do not move; then its doc
        (addLineageToSearch: the edge in its upstreamLineage)."""
        faults.check("relate", fault)
        up, e = self._get(upstream), self._get(entity)
        edge = {"source": "Manual", "createdAt": now_ms(), "createdBy": ADMIN, **(details or {})}
        edge.setdefault("updatedAt", edge["createdAt"])
        edge.setdefault("updatedBy", ADMIN)
        with self._lock, self.store.engine.begin() as conn:
            self.store.relate_json(conn, [(up.id, e.id, up.type, e.type, UPSTREAM, edge)])
            e.upstream = [(i, d) for i, d in e.upstream if i != up.id] + [(up.id, edge)]
        return self._relations_written(e, fault)

    def follow(self, entity: OmEntity | str, user: OmEntity, *, fault: Fault | None = None) -> OmEntity:
        """PUT /{id}/followers: the `follows` (11) row from the user; then the doc's followers."""
        faults.check("relate", fault)
        e = self._get(entity)
        with self._lock, self.store.engine.begin() as conn:
            self.store.relate(conn, [(user.id, e.id, user.type, e.type, FOLLOWS)])
            e.json["followers"] = [*e.json.get("followers", []), user.reference()]
        return self._relations_written(e, fault)

    def vote(
        self, entity: OmEntity | str, user: OmEntity, *, up: bool = True, fault: Fault | None = None
    ) -> OmEntity:
        """PUT /{id}/vote: the `voted` (18) row from the user, "votedUp" or "votedDown" as its JSON;
        then the doc's totalVotes."""
        faults.check("relate", fault)
        e = self._get(entity)
        said = "votedUp" if up else "votedDown"
        with self._lock, self.store.engine.begin() as conn:
            self.store.relate_json(conn, [(user.id, e.id, user.type, e.type, VOTED, said)])
            votes = dict(e.json.get("votes") or {"upVotes": 0, "downVotes": 0})
            votes["upVotes" if up else "downVotes"] = votes.get("upVotes" if up else "downVotes", 0) + 1
            e.json["votes"] = votes
        return self._relations_written(e, fault)

    def _relations_written(self, e: OmEntity, fault: Fault | None) -> OmEntity:
        if fault is Fault.STALE_UPDATE:
            log.debug("fault %s: %s's doc keeps its old relationships", fault.name, e.id)
            return e
        self._search([e], "update", fault, lambda: self.writer.update(e))
        return e

    def _relate_domains(self, conn: Any, e: OmEntity, domains: Sequence[OmEntity]) -> None:
        self.store.unrelate_from(conn, e.id, HAS, "domain")
        self.store.relate(conn, ((d.id, e.id, d.type, e.type, HAS) for d in domains))

    # ------------------------------------------------------------ delete, restore

    def soft_delete(
        self, entity: OmEntity | str, *, fault: Fault | None = None, updated_by: str = ADMIN
    ) -> list[OmEntity]:
        """Soft delete (recursive, as OM's delete with recursive=true); returns what it touched."""
        faults.check("soft_delete", fault)
        e = self._get(entity)
        touched = self._set_deleted_rows(e, True, updated_by)
        if fault in (Fault.SOFT_DELETE_NOT_PROPAGATED,):
            return touched
        children = fault is not Fault.CHILDREN_NOT_SOFT_DELETED
        self._search(
            touched, "soft_delete", fault, lambda: self.writer.set_deleted(e, True, children=children)
        )
        return touched

    def restore(
        self, entity: OmEntity | str, *, fault: Fault | None = None, updated_by: str = ADMIN
    ) -> list[OmEntity]:
        """Restore a soft-deleted entity and its children; the docs get deleted='false'."""
        faults.check("restore", fault)
        e = self._get(entity)
        touched = self._set_deleted_rows(e, False, updated_by)
        self._search(touched, "restore", fault, lambda: self.writer.set_deleted(e, False))
        return touched

    def hard_delete(self, entity: OmEntity | str, *, fault: Fault | None = None) -> list[OmEntity]:
        """Hard delete (recursive): rows, relationships, tag usage, then the docs."""
        faults.check("hard_delete", fault)
        e = self._get(entity)
        with self._lock:
            doomed = self._subtree(e)
            with self.store.engine.begin() as conn:
                for d in reversed(doomed):
                    self.store.delete(conn, d.et, d.id)
                    self.store.unrelate_all(conn, d.id)
                    self.store.remove_tags(conn, d.fqn_hash, prefix=True)
            for d in doomed:
                self.entities.pop(d.id, None)
            parent = self.entities.get(e.parent_id or "")
            if parent is not None and e.id in parent.children:
                parent.children.remove(e.id)
        if fault is Fault.ORPHAN_DOC:
            return doomed
        self._search(doomed, "hard_delete", fault, lambda: self.writer.delete(e))
        return doomed

    # ------------------------------------------------------------ snapshots, reads

    def snapshot(self) -> Snapshot:
        """Every OM doc as it stands now (restore it later to put the index behind the DB)."""
        return self.writer.snapshot()

    def restore_snapshot(self, snapshot: Snapshot) -> int:
        """Replace the OM indices by an older snapshot (docs from before later changes)."""
        return self.writer.restore(snapshot)

    def row(self, entity: OmEntity | str) -> dict[str, Any] | None:
        """The entity's stored JSON as the DB holds it (None once hard-deleted)."""
        e = entity if isinstance(entity, OmEntity) else self._get(entity)
        return self.store.read(e.et, e.id)

    def doc(self, entity: OmEntity) -> dict[str, Any] | None:
        """The entity's doc as the index holds it (real-time GET), None when absent."""
        return self.search.get(self.writer.index_of(entity), entity.id)

    def of_type(self, kind: str) -> list[OmEntity]:
        """The live entities of one type this server created."""
        return [e for e in self.entities.values() if e.type == kind]

    # ------------------------------------------------------------ internals

    def _get(self, entity: OmEntity | str) -> OmEntity:
        key = entity.id if isinstance(entity, OmEntity) else entity
        try:
            return self.entities[key]
        except KeyError:
            raise KeyError(f"unknown or hard-deleted entity {key!r}") from None

    def _subtree(self, e: OmEntity) -> list[OmEntity]:
        out = [e]
        for child_id in list(e.children):
            child = self.entities.get(child_id)
            if child is not None:
                out.extend(self._subtree(child))
        return out

    @staticmethod
    def _field(name: str, old: Any, new: Any) -> dict[str, Any]:
        return {"name": name, "oldValue": old, "newValue": new}

    @staticmethod
    def _bump(e: OmEntity, updated: list[dict[str, Any]], updated_by: str) -> None:
        previous = e.json["version"]
        e.json["version"] = next_version(previous)
        e.json["updatedAt"] = now_ms()
        e.json["updatedBy"] = updated_by
        e.json["changeDescription"] = {
            "fieldsAdded": [],
            "fieldsUpdated": updated,
            "fieldsDeleted": [],
            "previousVersion": previous,
        }

    def _set_deleted_rows(self, e: OmEntity, deleted: bool, updated_by: str) -> list[OmEntity]:
        with self._lock:
            touched = [d for d in self._subtree(e) if d.deleted != deleted]
            with self.store.engine.begin() as conn:
                for d in touched:
                    d.json["deleted"] = deleted
                    self._bump(d, [self._field("deleted", not deleted, deleted)], updated_by)
                    self.store.update(conn, d.et, d.id, d.stored_json(), d.fqn_hash)
        return touched

    def _relations(self, e: OmEntity) -> Iterable[tuple[str, str, str, str, int]]:
        parent = self.entities.get(e.parent_id or "")
        if parent is not None:
            yield (parent.id, e.id, parent.type, e.type, CONTAINS)
        for owner in e.json.get("owners", []):
            yield (owner["id"], e.id, owner["type"], e.type, OWNS)
        for user in e.json.get("users", []):
            yield (e.id, user["id"], e.type, "user", HAS)
        for domain in e.json.get("domains", []):
            yield (domain["id"], e.id, "domain", e.type, HAS)

    @staticmethod
    def _tag_rows(e: OmEntity) -> Iterable[dict[str, Any]]:
        """applyTags: the entity's, its columns' (nested ones too) and its tasks' tag labels."""
        targets = [(e.fqn, label) for label in e.json.get("tags", [])]
        columns = list(e.json.get("columns", []))
        while columns:
            col = columns.pop(0)
            targets.extend((col["fullyQualifiedName"], label) for label in col.get("tags", []))
            columns.extend(col.get("children") or [])
        for task in e.json.get("tasks", []):
            targets.extend((task["fullyQualifiedName"], label) for label in task.get("tags", []))
        for target, label in targets:
            yield {
                "source": TAG_SOURCES.index(label["source"]),
                "tagFQN": label["tagFQN"],
                "tagFQNHash": fqnlib.fqn_hash(label["tagFQN"]),
                "targetFQNHash": fqnlib.fqn_hash(target),
                "labelType": LABEL_TYPES.index(label["labelType"]),
                "state": LABEL_STATES.index(label["state"]),
            }

    def _search(
        self, entities: list[OmEntity], operation: str, fault: Fault | None, write: Callable[[], object]
    ) -> None:
        """Write search after the commit; a failure is logged (and queued) and never raised."""
        try:
            if fault in (Fault.SEARCH_WRITE_FAILS, Fault.SEARCH_WRITE_FAILS_QUEUED):
                raise SearchWriteError(f"simulated search failure on {operation}")
            write()
        except Exception as exc:  # OM logs and carries on: the DB commit stands
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("search write for %s failed after commit: %s", operation, reason)
            for e in entities:
                self.search_failures.append((e.id, reason))
                if fault is Fault.SEARCH_WRITE_FAILS_QUEUED:
                    self.store.queue_retry(e.id, e.fqn, e.type, reason)
