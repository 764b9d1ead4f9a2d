"""A deterministic OpenMetadata catalog: services -> databases -> schemas -> tables, dashboards,
topics, pipelines, glossary terms, users and teams as owners, classifications and tags.
Some columns (nested ones too) and pipeline tasks carry tags, and about a third of the tables
have no owner of their own (they inherit their schema's).

`seed(server, n, seed=...)` creates exactly `n` entities (containers and scaffolding included)
through the server's bulk path (one transaction and one bulk index request per chunk). Ids,
names, owners, tags and timestamps come from the seed alone.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from sandbox.openmetadata.entities import OmEntity, column, tag_label
from sandbox.openmetadata.server import OmServer

BASE_TIME_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z: updatedAt = base + position
TABLES_PER_SCHEMA, SCHEMAS_PER_DATABASE, DATABASES_PER_SERVICE = 8, 3, 2
# asset mix: out of 10 assets, 6 tables, 1 dashboard, 1 topic, 1 pipeline, 1 glossary term
MIX = ("table", "table", "dashboard", "table", "topic", "table", "pipeline", "table", "glossaryTerm", "table")
COLUMN_TYPES = ("BIGINT", "VARCHAR", "TIMESTAMP", "BOOLEAN", "DOUBLE", "DATE")
MIN_ENTITIES = 17


@dataclass
class Catalog:
    """What `seed` created, by type, in creation order."""

    entities: list[OmEntity] = field(default_factory=list)

    def of_type(self, kind: str) -> list[OmEntity]:
        return [e for e in self.entities if e.type == kind]


class _Builder:
    def __init__(self, server: OmServer, n: int, seed: int, prefix: str) -> None:
        self.server, self.n, self.rng, self.prefix = server, n, random.Random(seed), prefix
        self.out: list[OmEntity] = []
        self.owners: list[OmEntity] = []
        self.tags: list[str] = []
        self.containers: dict[str, OmEntity] = {}
        self.counts: dict[str, int] = {}

    def make(self, kind: str, parent: OmEntity | None, **fields: object) -> OmEntity:
        index = self.counts.get(kind, 0)
        self.counts[kind] = index + 1
        name = fields.pop("name", None) or f"{self.prefix}{kind.lower()}_{index:05d}"
        entity = self.server.build(
            kind,
            str(name),
            parent,
            entity_id=str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
            updated_at=BASE_TIME_MS + len(self.out),
            **fields,
        )  # type: ignore[arg-type]
        self.out.append(entity)
        return entity

    def scaffolding(self) -> None:
        users = [
            self.make(
                "user",
                None,
                name=f"{self.prefix}user_{i}",
                email=f"{self.prefix}user_{i}@example.com",
                isBot=False,
                isAdmin=False,
            )
            for i in range(3)
        ]
        teams = [
            self.make(
                "team",
                None,
                name=f"{self.prefix}team_{i}",
                teamType="Group",
                users=[u.reference() for u in users[i::2]],
            )
            for i in range(2)
        ]
        self.owners = users + teams
        pii = self.make(
            "classification",
            None,
            name=f"{self.prefix}PII",
            provider="user",
            mutuallyExclusive=True,
            description="Personal data",
        )
        tier = self.make(
            "classification",
            None,
            name="Tier",
            provider="system",
            mutuallyExclusive=True,
            description="Tiers",
        )
        for parent, name in (
            (pii, "Sensitive"),
            (pii, "NonSensitive"),
            (tier, "Tier1"),
            (tier, "Tier2"),
            (tier, "Tier3"),
        ):
            self.tags.append(self.make("tag", parent, name=name, description=name).fqn)
        self.containers["glossary"] = self.make(
            "glossary", None, name=f"{self.prefix}Glossary", description="Business terms"
        )
        for kind, service_type in (
            ("databaseService", "Postgres"),
            ("dashboardService", "Superset"),
            ("messagingService", "Kafka"),
            ("pipelineService", "Airflow"),
        ):
            self.containers[kind] = self.make(
                kind,
                None,
                serviceType=service_type,
                connection={"config": {"type": service_type, "hostPort": "host:1234"}},
            )

    def labels(self) -> list[dict[str, object]]:
        picked = []
        if self.rng.random() < 0.5:
            picked.append(tag_label(self.tags[self.rng.randrange(2)]))
        if self.rng.random() < 0.3:
            picked.append(tag_label(self.tags[2 + self.rng.randrange(3)]))
        return picked

    def asset_fields(self) -> dict[str, object]:
        fields: dict[str, object] = {"owners": [self.rng.choice(self.owners)]}
        if self.rng.random() < 0.7:
            fields["description"] = f"generated {self.rng.randrange(10**6)}"
        tags = self.labels()
        if tags:
            fields["tags"] = tags
        return fields

    def column_tags(self) -> list[dict[str, object]]:
        return [tag_label(self.tags[self.rng.randrange(2)])] if self.rng.random() < 0.25 else []

    def columns(self, table_fqn: str) -> list[dict[str, object]]:
        cols = []
        for i in range(self.rng.randrange(2, 8)):
            col = column(
                table_fqn,
                f"col_{i}",
                self.rng.choice(COLUMN_TYPES),
                i + 1,
                description=f"column {i}" if self.rng.random() < 0.5 else None,
            )
            col["tags"] = self.column_tags()
            cols.append(col)
        if self.rng.random() < 0.2:  # a struct column with nested children
            parent = column(table_fqn, "address", "STRUCT", len(cols) + 1, description="nested")
            parent["children"] = [
                column(str(parent["fullyQualifiedName"]), name, "VARCHAR", n + 1)
                for n, name in enumerate(("street", "zip.code"))
            ]
            parent["children"][1]["tags"] = [tag_label(self.tags[0])]
            cols.append(parent)
        return cols

    def task(self, pipeline_fqn: str, i: int) -> dict[str, object]:
        name = f"task_{i}"
        return {
            "name": name,
            "displayName": name,
            "taskType": "PythonOperator",
            "fullyQualifiedName": pipeline_fqn + "." + name,
            "tags": self.column_tags(),
        }

    def parent_for(self, kind: str) -> OmEntity:
        if kind == "glossaryTerm":
            return self.containers["glossary"]
        if kind != "table":
            return self.containers[
                {"dashboard": "dashboardService", "topic": "messagingService", "pipeline": "pipelineService"}[
                    kind
                ]
            ]
        schema = self.containers.get("databaseSchema")
        if schema is None or len(schema.children) >= TABLES_PER_SCHEMA:
            database = self.containers.get("database")
            if database is None or len(database.children) >= SCHEMAS_PER_DATABASE:
                service = self.containers["databaseService"]
                if len(service.children) >= DATABASES_PER_SERVICE:
                    service = self.make(
                        "databaseService",
                        None,
                        serviceType="Postgres",
                        connection={"config": {"type": "Postgres"}},
                    )
                    self.containers["databaseService"] = service
                database = self.make("database", service, description="a database")
                service.children.append(database.id)
                self.containers["database"] = database
            schema = self.make("databaseSchema", database, **self.asset_fields())
            database.children.append(schema.id)
            self.containers["databaseSchema"] = schema
        return schema

    def assets(self) -> Iterator[OmEntity]:
        position = 0
        while len(self.out) < self.n:
            kind = MIX[position % len(MIX)]
            position += 1
            parent = self.parent_for(kind)
            if len(self.out) >= self.n:
                break
            fields = self.asset_fields()
            if kind == "table":
                fields["tableType"] = "Regular"
                fields["columns"] = []
                if self.rng.random() < 0.35:  # no owner of its own: inherits its schema's
                    fields.pop("owners")
            entity = self.make(kind, parent, **fields)
            if kind == "table":
                entity.json["columns"] = self.columns(entity.fqn)
            if kind == "pipeline":
                entity.json["tasks"] = [self.task(entity.fqn, i) for i in range(self.rng.randrange(1, 4))]
            parent.children.append(entity.id)
            yield entity


def seed(server: OmServer, n: int, *, seed: int = 0, prefix: str = "", chunk: int = 1000) -> Catalog:
    """Create exactly `n` entities (n >= 17), deterministic by `seed`; returns them."""
    if n < MIN_ENTITIES:
        raise ValueError(
            f"n must be at least {MIN_ENTITIES} (the scaffolding: users, teams, "
            "classifications, tags, a glossary, four services)"
        )
    builder = _Builder(server, n, seed, prefix)
    builder.scaffolding()
    for _ in builder.assets():
        pass
    for entity in builder.out:  # children lists are rebuilt by create_many
        entity.children.clear()
    for start in range(0, len(builder.out), chunk):
        server.create_many(builder.out[start : start + chunk])
    return Catalog(list(builder.out))
