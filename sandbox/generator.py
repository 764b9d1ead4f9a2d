"""Deterministic catalog generator: realistic entities and the aspects that feed search."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import datahub.emitter.mce_builder as builder
import datahub.metadata.schema_classes as m

from sandbox.registry import entity_facts
from sandbox.urns import key_from_urn

BASE_TIME_MS = 1_700_000_000_000
DEFAULT_OWNER_TYPE = "urn:li:ownershipType:__system__none"

# Share of the catalog per entity type (the rest of the weights sum to 1.0).
ENTITY_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("corpuser", 0.07),
    ("corpGroup", 0.03),
    ("tag", 0.05),
    ("glossaryTerm", 0.05),
    ("domain", 0.03),
    ("container", 0.06),
    ("dataFlow", 0.04),
    ("dataset", 0.40),
    ("dataJob", 0.10),
    ("chart", 0.10),
    ("dashboard", 0.07),
)
# Names that make urns awkward: parentheses, commas, spaces, unicode, ~ * + %, mixed case.
AWKWARD = (
    "orders",
    "Sales.Orders_Mixed",
    "t(1),x",
    "with space",
    "café.naïve",
    "中文.表",
    "tilde~name",
    "star*name",
    "plus+name",
    "percent%name",
    "MiXeD.CaSe",
    "a,b (c)",
)
PEOPLE = ("jdoe", "Jane Doe", "josé", "user+tag", "a~b", "王伟", "O.Brien", "UPPER.lower")
TAG_NAMES = ("PII", "Tier 1", "gdpr~eu", "star*", "c++", "50%", "Ünïcode", "Legacy(old)")
TERMS = ("Classification.Sensitive", "Finance.Revenue (Net)", "Ops.SLA~99", "Méta.Donnée")
PLATFORMS = ("hive", "snowflake", "postgres", "kafka", "bigquery")
TOOLS = ("looker", "tableau", "superset")
ORCHESTRATORS = ("airflow", "dagster")


class AspectWriter(Protocol):
    """What `seed` needs from a writer (GmsWriter fits)."""

    def write(self, urn: str, aspect_name: str, value: dict[str, Any], *, wait: bool = True) -> Any: ...

    def flush(self, timeout: float = 30.0) -> None: ...


@dataclass(frozen=True)
class CatalogEntity:
    """One generated entity and its aspects, in write order (key aspect first)."""

    urn: str
    entity_type: str
    aspects: tuple[tuple[str, dict[str, Any]], ...]

    @property
    def removed(self) -> bool:
        """True when the entity is soft-deleted (status.removed)."""
        return any(name == "status" and value.get("removed") for name, value in self.aspects)


def _obj(aspect: Any) -> dict[str, Any]:
    """Aspect object -> Pegasus JSON dict, exactly as `to_obj()` serializes it."""
    result: dict[str, Any] = json.loads(json.dumps(aspect.to_obj()))
    return result


def _counts(n: int) -> dict[str, int]:
    """How many entities of each type (at least one of each when n allows)."""
    counts = {name: 0 for name, _ in ENTITY_WEIGHTS}
    order = [name for name, _ in ENTITY_WEIGHTS]
    for i in range(min(n, len(order))):  # one of each first, in dependency order
        counts[order[i]] += 1
    remaining = n - sum(counts.values())
    shares = [(name, weight * remaining) for name, weight in ENTITY_WEIGHTS]
    for name, share in shares:
        counts[name] += int(share)
    leftover = n - sum(counts.values())
    for name, _ in sorted(shares, key=lambda s: s[1] - int(s[1]), reverse=True)[:leftover]:
        counts[name] += 1
    return counts


@dataclass
class _Catalog:
    rng: random.Random
    prefix: str
    clock: int = BASE_TIME_MS
    entities: list[CatalogEntity] = field(default_factory=list)
    by_type: dict[str, list[str]] = field(default_factory=dict)

    def tick(self) -> int:
        self.clock += self.rng.randint(1_000, 600_000)
        return self.clock

    def name(self, pool: tuple[str, ...], i: int) -> str:
        base = pool[i % len(pool)]
        suffix = "" if i < len(pool) else f"_{i}"
        return f"{self.prefix}{base}{suffix}"

    def pick(self, entity_type: str, k: int) -> list[str]:
        pool = self.by_type.get(entity_type, [])
        return self.rng.sample(pool, min(k, len(pool))) if pool else []

    def add(self, urn: str, entity_type: str, aspects: list[tuple[str, Any]]) -> None:
        """Record an entity; its key aspect comes first, derived from the urn as GMS does."""
        key_aspect, key = entity_facts().key_aspect(entity_type), key_from_urn(urn)
        assert key_aspect is not None and key is not None, urn
        self.entities.append(
            CatalogEntity(
                urn,
                entity_type,
                (
                    (key_aspect, key),
                    *((name, _obj(a) if not isinstance(a, dict) else a) for name, a in aspects),
                ),
            )
        )
        self.by_type.setdefault(entity_type, []).append(urn)

    # ---------------------------------------------------------- shared aspects

    def audit(self) -> m.AuditStampClass:
        return m.AuditStampClass(time=self.tick(), actor=builder.make_user_urn("datahub"))

    def ownership(self) -> m.OwnershipClass:
        owners = self.pick("corpuser", self.rng.randint(1, 2)) + self.pick("corpGroup", 1)
        kinds = (
            m.OwnershipTypeClass.TECHNICAL_OWNER,
            m.OwnershipTypeClass.BUSINESS_OWNER,
            m.OwnershipTypeClass.DATA_STEWARD,
        )
        owner_objs = [m.OwnerClass(owner=o, type=self.rng.choice(kinds)) for o in owners]
        if owner_objs and self.rng.random() < 0.2:
            owner_objs[0].attribution = m.MetadataAttributionClass(
                time=self.tick(),
                actor=builder.make_user_urn("datahub"),
                source="urn:li:dataHubAction:propagation",
            )
        ownership = m.OwnershipClass(owners=owner_objs, lastModified=self.audit())
        if owners:  # what GMS's OwnerTypeMap mutation hook stores
            ownership.ownerTypes = {DEFAULT_OWNER_TYPE: sorted(set(owners))}
        return ownership

    def global_tags(self) -> m.GlobalTagsClass:
        tags = []
        for tag in self.pick("tag", self.rng.randint(0, 3)):
            association = m.TagAssociationClass(tag=tag)
            if self.rng.random() < 0.2:
                association.attribution = m.MetadataAttributionClass(
                    time=self.tick(), actor=builder.make_user_urn("datahub")
                )
            tags.append(association)
        return m.GlobalTagsClass(tags=tags)

    def glossary_terms(self) -> m.GlossaryTermsClass:
        terms = [
            m.GlossaryTermAssociationClass(urn=t) for t in self.pick("glossaryTerm", self.rng.randint(0, 2))
        ]
        return m.GlossaryTermsClass(terms=terms, auditStamp=self.audit())

    def status(self) -> m.StatusClass:
        return m.StatusClass(removed=self.rng.random() < 0.06)

    def browse_paths(self, *parts: str, container: str | None = None) -> m.BrowsePathsV2Class:
        path = [m.BrowsePathEntryClass(id=p) for p in parts]
        if container:
            path.append(m.BrowsePathEntryClass(id=container, urn=container))
        return m.BrowsePathsV2Class(path=path)

    def domains(self) -> m.DomainsClass | None:
        picked = self.pick("domain", 1) if self.rng.random() < 0.5 else []
        return m.DomainsClass(domains=picked) if picked else None

    def custom_properties(self) -> dict[str, str]:
        props = {"team": self.rng.choice(("core", "growth", "finance")), "sla": f"{self.rng.randint(1, 24)}h"}
        if self.rng.random() < 0.2:
            props["odd key=with equals"] = "value, with comma"
        return props

    def description(self, what: str) -> str | None:
        roll = self.rng.random()
        if roll < 0.15:
            return None
        if roll < 0.2:
            return ""
        return f"The {what}, maintained by the data platform team."

    def edges(self, destinations: list[str]) -> list[m.EdgeClass]:
        return [m.EdgeClass(destinationUrn=d) for d in destinations]


def _optional(*aspects: tuple[str, Any]) -> list[tuple[str, Any]]:
    return [(name, value) for name, value in aspects if value is not None]


def _corpuser(c: _Catalog, i: int) -> None:
    username = c.name(PEOPLE, i)
    urn = builder.make_user_urn(username)
    managers = c.pick("corpuser", 1) if c.rng.random() < 0.4 else []
    info = m.CorpUserInfoClass(
        active=c.rng.random() > 0.1,
        displayName=username.title(),
        fullName=username.title(),
        email=f"user{i}@example.com",
        title=c.rng.choice(("Engineer", "Analyst", "")),
        managerUrn=managers[0] if managers else None,
        customProperties={},
    )
    editable = m.CorpUserEditableInfoClass(teams=["data"], skills=["sql", "python"][: i % 3])
    c.add(
        urn, "corpuser", [("corpUserInfo", info), ("corpUserEditableInfo", editable), ("status", c.status())]
    )


def _corpgroup(c: _Catalog, i: int) -> None:
    name = c.name(("data eng", "Analytics", "sécurité", "ops~oncall"), i)
    urn = builder.make_group_urn(name)
    members = c.pick("corpuser", c.rng.randint(1, 3))
    info = m.CorpGroupInfoClass(
        admins=members[:1], members=members, groups=[], displayName=name, description=c.description("group")
    )
    c.add(urn, "corpGroup", [("corpGroupInfo", info), ("status", c.status())])


def _tag(c: _Catalog, i: int) -> None:
    name = c.name(TAG_NAMES, i)
    urn = builder.make_tag_urn(name)
    c.add(
        urn,
        "tag",
        [
            ("tagProperties", m.TagPropertiesClass(name=name, description=c.description("tag"))),
            ("ownership", c.ownership()),
            ("status", c.status()),
        ],
    )


def _term(c: _Catalog, i: int) -> None:
    name = c.name(TERMS, i)
    urn = builder.make_term_urn(name)
    info = m.GlossaryTermInfoClass(
        definition=c.description("term") or "",
        termSource="INTERNAL",
        name=name.split(".")[-1],
        customProperties={},
    )
    c.add(
        urn,
        "glossaryTerm",
        [("glossaryTermInfo", info), ("ownership", c.ownership()), ("status", c.status())],
    )


def _domain(c: _Catalog, i: int) -> None:
    domain_id = c.name(("marketing", "Finance", "r&d", "ventes"), i)
    urn = builder.make_domain_urn(domain_id)
    parents = c.pick("domain", 1) if c.rng.random() < 0.3 else []
    props = m.DomainPropertiesClass(
        name=domain_id.title(),
        description=c.description("domain"),
        created=c.audit(),
        parentDomain=parents[0] if parents else None,
    )
    c.add(urn, "domain", [("domainProperties", props), ("ownership", c.ownership())])


def _container(c: _Catalog, i: int) -> None:
    guid = f"{c.prefix}{c.rng.getrandbits(64):016x}"
    urn = builder.make_container_urn(guid)
    parents = c.pick("container", 1) if c.rng.random() < 0.4 else []
    platform = c.rng.choice(PLATFORMS)
    props = m.ContainerPropertiesClass(
        name=c.name(("analytics", "Raw Zone", "schéma"), i),
        qualifiedName=f"{platform}.db{i}",
        description=c.description("database"),
        env="PROD",
        customProperties=c.custom_properties(),
        created=m.TimeStampClass(time=c.tick()),
    )
    c.add(
        urn,
        "container",
        _optional(
            ("containerProperties", props),
            ("subTypes", m.SubTypesClass(typeNames=["Database" if not parents else "Schema"])),
            ("container", m.ContainerClass(container=parents[0]) if parents else None),
            ("browsePathsV2", c.browse_paths(platform, container=parents[0] if parents else None)),
            ("ownership", c.ownership()),
            ("domains", c.domains()),
            ("status", c.status()),
        ),
    )


def _dataflow(c: _Catalog, i: int) -> None:
    orchestrator = ORCHESTRATORS[i % len(ORCHESTRATORS)]
    flow_id = c.name(("daily etl", "Hourly.Sync", "backfill(2024)"), i)
    urn = builder.make_data_flow_urn(orchestrator, flow_id, "prod")
    info = m.DataFlowInfoClass(
        name=flow_id,
        description=c.description("pipeline"),
        customProperties=c.custom_properties(),
        env="PROD",
    )
    c.add(
        urn,
        "dataFlow",
        _optional(
            ("dataFlowInfo", info),
            ("ownership", c.ownership()),
            ("globalTags", c.global_tags()),
            ("browsePathsV2", c.browse_paths(orchestrator)),
            ("domains", c.domains()),
            ("status", c.status()),
        ),
    )


def _schema(c: _Catalog, platform: str, name: str) -> m.SchemaMetadataClass:
    fields = []
    for j in range(c.rng.randint(2, 6)):
        field_path = c.rng.choice(("id", "Customer Name", "amount€", "created_at", "tags[0]"))
        tags = c.pick("tag", 1) if c.rng.random() < 0.2 else []
        fields.append(
            m.SchemaFieldClass(
                fieldPath=f"{field_path}_{j}",
                nativeDataType="VARCHAR",
                type=m.SchemaFieldDataTypeClass(type=m.StringTypeClass()),
                description=c.description("column") if c.rng.random() < 0.5 else None,
                globalTags=m.GlobalTagsClass(tags=[m.TagAssociationClass(tag=t) for t in tags])
                if tags
                else None,
            )
        )
    return m.SchemaMetadataClass(
        schemaName=name,
        platform=builder.make_data_platform_urn(platform),
        version=0,
        hash="",
        platformSchema=m.OtherSchemaClass(rawSchema=""),
        fields=fields,
    )


def _dataset(c: _Catalog, i: int) -> None:
    platform = PLATFORMS[i % len(PLATFORMS)]
    name = c.name(AWKWARD, i)
    urn = builder.make_dataset_urn(platform, name, "PROD")
    containers = c.pick("container", 1)
    upstreams = c.pick("dataset", c.rng.randint(0, 2))
    props = m.DatasetPropertiesClass(
        name=name.split(".")[-1],
        qualifiedName=f"{platform}.{name}",
        description=c.description("table"),
        customProperties=c.custom_properties(),
        created=m.TimeStampClass(time=c.tick()) if c.rng.random() < 0.5 else None,
        externalUrl=f"https://example.com/{platform}/{i}" if c.rng.random() < 0.3 else None,
    )
    lineage = (
        m.UpstreamLineageClass(
            upstreams=[
                m.UpstreamClass(dataset=u, type=m.DatasetLineageTypeClass.TRANSFORMED, auditStamp=c.audit())
                for u in upstreams
            ]
        )
        if upstreams
        else None
    )
    c.add(
        urn,
        "dataset",
        _optional(
            ("datasetProperties", props),
            ("schemaMetadata", _schema(c, platform, name)),
            ("ownership", c.ownership()),
            ("globalTags", c.global_tags()),
            ("glossaryTerms", c.glossary_terms()),
            ("upstreamLineage", lineage),
            ("subTypes", m.SubTypesClass(typeNames=[c.rng.choice(("Table", "View"))])),
            ("container", m.ContainerClass(container=containers[0]) if containers else None),
            (
                "browsePathsV2",
                c.browse_paths("prod", platform, container=containers[0] if containers else None),
            ),
            ("domains", c.domains()),
            ("status", c.status()),
        ),
    )


def _datajob(c: _Catalog, i: int) -> None:
    flows = c.pick("dataFlow", 1)
    flow = flows[0] if flows else builder.make_data_flow_urn("airflow", f"{c.prefix}orphan", "prod")
    job_id = c.name(("load orders", "Transform*Step", "export,csv"), i)
    urn = builder.make_data_job_urn_with_flow(flow, job_id)
    inputs, outputs = c.pick("dataset", 2), c.pick("dataset", 1)
    io = m.DataJobInputOutputClass(
        inputDatasets=inputs,
        outputDatasets=outputs,
        inputDatasetEdges=c.edges(inputs),
        outputDatasetEdges=c.edges(outputs),
    )
    info = m.DataJobInfoClass(
        name=job_id,
        type="COMMAND",
        description=c.description("job"),
        customProperties=c.custom_properties(),
        env="PROD",
    )
    c.add(
        urn,
        "dataJob",
        _optional(
            ("dataJobInfo", info),
            ("dataJobInputOutput", io),
            ("ownership", c.ownership()),
            ("globalTags", c.global_tags()),
            ("browsePathsV2", c.browse_paths("jobs")),
            ("status", c.status()),
        ),
    )


def _chart(c: _Catalog, i: int) -> None:
    tool = TOOLS[i % len(TOOLS)]
    chart_id = c.name(("Revenue (EUR)", "daily users", "chart,1", "Ümsatz"), i)
    urn = builder.make_chart_urn(tool, chart_id)
    stamps = m.ChangeAuditStampsClass(created=c.audit(), lastModified=c.audit())
    info = m.ChartInfoClass(
        title=chart_id,
        description=c.description("chart") or "",
        lastModified=stamps,
        customProperties=c.custom_properties(),
        inputEdges=c.edges(c.pick("dataset", 2)),
        type=c.rng.choice(("BAR", "LINE", None)),
        chartUrl=f"https://bi.example.com/c/{i}",
    )
    c.add(
        urn,
        "chart",
        _optional(
            ("chartInfo", info),
            ("ownership", c.ownership()),
            ("globalTags", c.global_tags()),
            ("browsePathsV2", c.browse_paths(tool)),
            ("domains", c.domains()),
            ("status", c.status()),
        ),
    )


def _dashboard(c: _Catalog, i: int) -> None:
    tool = TOOLS[i % len(TOOLS)]
    dashboard_id = c.name(("Exec Overview", "kpi~board", "Ops (live)"), i)
    urn = builder.make_dashboard_urn(tool, dashboard_id)
    stamps = m.ChangeAuditStampsClass(created=c.audit(), lastModified=c.audit())
    info = m.DashboardInfoClass(
        title=dashboard_id,
        description=c.description("dashboard") or "",
        lastModified=stamps,
        customProperties=c.custom_properties(),
        chartEdges=c.edges(c.pick("chart", 3)),
        dashboardUrl=f"https://bi.example.com/d/{i}",
    )
    c.add(
        urn,
        "dashboard",
        _optional(
            ("dashboardInfo", info),
            ("ownership", c.ownership()),
            ("globalTags", c.global_tags()),
            ("glossaryTerms", c.glossary_terms()),
            ("browsePathsV2", c.browse_paths(tool)),
            ("domains", c.domains()),
            ("status", c.status()),
        ),
    )


BUILDERS = {
    "corpuser": _corpuser,
    "corpGroup": _corpgroup,
    "tag": _tag,
    "glossaryTerm": _term,
    "domain": _domain,
    "container": _container,
    "dataFlow": _dataflow,
    "dataset": _dataset,
    "dataJob": _datajob,
    "chart": _chart,
    "dashboard": _dashboard,
}


def generate_catalog(n: int, seed: int = 42, prefix: str = "") -> list[CatalogEntity]:
    """`n` entities across 11 entity types; same (n, seed, prefix) -> same catalog."""
    catalog = _Catalog(random.Random(seed), prefix)
    for entity_type, count in _counts(n).items():
        for i in range(count):
            BUILDERS[entity_type](catalog, i)
    return catalog.entities


def generate(n: int, seed: int = 42, prefix: str = "") -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(urn, aspect_name, aspect_json) for every aspect of the catalog, key aspects first."""
    for entity in generate_catalog(n, seed, prefix):
        for aspect_name, value in entity.aspects:
            yield entity.urn, aspect_name, value


def seed(writer: AspectWriter, n: int, seed: int = 42, prefix: str = "") -> list[CatalogEntity]:
    """Write the catalog through the writer (MCL deliveries checked at the end)."""
    entities = generate_catalog(n, seed, prefix)
    for entity in entities:
        for aspect_name, value in entity.aspects:
            writer.write(entity.urn, aspect_name, value, wait=False)
    writer.flush()
    return entities
