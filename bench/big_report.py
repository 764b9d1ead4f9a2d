"""A scan's every-finding JSON Lines report (`auditor scan --findings-out`) of any size, made
without a scan: for measuring its readers (`rebuild --from-report`, `report render`, the console)
at sizes no catalog on this machine reaches (13M findings: a 1M-entity catalog after a restore).

Each kind of finding is made once as a real `Classified` and serialized by the scan's own
writer (`finding_json`, the JSON Lines dumps); each line after that is that text with the
entity's name put in, so millions of lines take minutes. The header is the scan's too
(`to_dict` of a report whose counts, entities and documents agree with the lines).

The catalog: datasets, charts, dashboards, data jobs, users and tags, about 13 findings per
dataset and fewer for the rest. The dataset index is the restore case: most of its documents are
missing (--behind of the datasets), their system-metadata docs stale and edges missing beside;
the other types have --others of their entities so (0.3 by default: not most of their indices,
each such entity then one action of its own in a repair's plan; 0.7: every index mostly behind,
as after a restore of the whole cluster), and a scattering of stale fields, orphans, findings in
flight and malformed rows, as a real scan's do.

    python bench/big_report.py --findings 13000000 -o /tmp/big.jsonl.gz
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from auditor.core.model import Classified, Evidence, Finding, Kind, RepairKind, Report, Verdict
from auditor.reports.json_report import finding_json, to_dict
from auditor.reports.jsonl import FORMAT, _dumps

NAME = "XQXNAMEXQX"  # put in each line's place of the entity's name (no escaping changes it)
PREFIX = "big"
ASPECTS = ("datasetProperties", "schemaMetadata", "ownership", "globalTags", "status", "browsePathsV2")
# (type, urn with the name's place, share of the entities)
TYPES = (
    ("dataset", f"urn:li:dataset:(urn:li:dataPlatform:hive,warehouse.{NAME},PROD)", 0.70),
    ("chart", f"urn:li:chart:(looker,{NAME})", 0.08),
    ("dashboard", f"urn:li:dashboard:(looker,{NAME})", 0.06),
    ("dataJob", f"urn:li:dataJob:(urn:li:dataFlow:(airflow,etl,PROD),{NAME})", 0.10),
    ("corpuser", f"urn:li:corpuser:{NAME}", 0.05),
    ("tag", f"urn:li:tag:{NAME}", 0.01),
)
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def index_of(entity_type: str) -> str:
    return f"{PREFIX}_{entity_type.lower()}index_v2"


def classified(
    check: str,
    kind: Kind,
    verdict: Verdict,
    entity_type: str,
    urn: str,
    index: str,
    repairs: tuple[RepairKind, ...],
    aspect: str | None = None,
) -> Classified:
    details = {"platform": "datahub"}
    if kind in (Kind.MISSING_DOCUMENT, Kind.ORPHAN_DOCUMENT):
        details["doc_id"] = urn
    if kind == Kind.STALE_FIELDS:
        details["fields"] = ["name", "description"]
    changed = None if kind == Kind.ORPHAN_DOCUMENT else T0 + timedelta(days=3)
    f = Finding(check, kind, urn, entity_type, index, aspect, changed, details, repairs)
    subkind = Verdict.IN_FLIGHT.value if verdict == Verdict.IN_FLIGHT else kind.value
    reason = {
        Verdict.DIVERGED: f"{index} does not hold the entity's state; its MCL was consumed but not applied",
        Verdict.IN_FLIGHT: "written 12s ago: within the 300s grace",
        Verdict.INVALID: "the aspect's JSON does not parse",
    }[verdict]
    evidence = Evidence(reason, partition=1, topic=f"{PREFIX}-MCL_Versioned", mcl_found=True, mcl_offset=38)
    return Classified(f, verdict, subkind, evidence)


def templates(entity_type: str, urn: str) -> dict[str, list[Classified]]:
    """What an entity of the type can have wrong, by case (made once, serialized once)."""
    own = index_of(entity_type)
    sm, graph = "system_metadata_service_v1", "graph_service_v1"
    d, w = Verdict.DIVERGED, Verdict.IN_FLIGHT
    rw, sysm, edges = RepairKind.REPLAY_ASPECT, RepairKind.REWRITE_SYSTEM_METADATA, RepairKind.REWRITE_EDGES
    behind = [classified("index.missing-document", Kind.MISSING_DOCUMENT, d, entity_type, urn, own, (rw,))]
    behind += [
        classified("system-metadata.stale", Kind.STALE_SYSTEM_METADATA, d, entity_type, urn, sm, (sysm,), a)
        for a in ASPECTS
    ]
    behind += [
        classified("graph.edges", Kind.MISSING_EDGE, d, entity_type, urn, graph, (edges,), a)
        for a in ("upstreamLineage", "ownership", "globalTags", "container", "domains", "glossaryTerms")
    ]
    return {
        "behind": behind,  # 13 findings: the restore case
        "stale": [
            classified("index.stale-fields", Kind.STALE_FIELDS, d, entity_type, urn, own, (rw,), ASPECTS[0])
        ],
        "in_flight": [
            classified("index.missing-document", Kind.MISSING_DOCUMENT, w, entity_type, urn, own, (rw,))
        ],
        "orphan": [
            classified(
                "index.orphan-document",
                Kind.ORPHAN_DOCUMENT,
                d,
                entity_type,
                urn,
                own,
                (RepairKind.DELETE_DOCUMENT,),
            )
        ],
        "invalid": [
            classified(
                "store.malformed-aspect",
                Kind.MALFORMED_ASPECT,
                Verdict.INVALID,
                entity_type,
                urn,
                own,
                (),
                ASPECTS[1],
            )
        ],
    }


def case(entity_type: str, i: int, behind: float, others: float) -> str | None:
    """What entity i of the type has wrong (None: nothing): `behind` of the datasets and `others`
    of the other types' entities behind, a few of the rest with something else wrong."""
    share = behind if entity_type == "dataset" else others
    r = i % 100
    if r < share * 100 - 4 or (entity_type == "dataset" and r < share * 100):
        return "behind"
    return {96: "stale", 97: "in_flight", 98: "orphan", 99: "invalid"}.get(r)


def plan(findings: int, behind: float, others: float) -> tuple[dict[str, int], int]:
    """Entities per type so that the file holds about `findings` lines (13 per entity behind)."""
    per_entity = sum(share * (13 * (behind if t == "dataset" else others)) for t, _, share in TYPES)
    total = int(findings / per_entity) + 1
    return {t: max(1, int(total * share)) for t, _, share in TYPES}, total


def generate(findings: int, out: Path, behind: float = 0.9, others: float = 0.3, level: int = 1) -> int:
    entities, _ = plan(findings, behind, others)
    report = Report(datetime.now(UTC), index_prefix=PREFIX, consumer_group=f"{PREFIX}-mae")
    report.sources = {
        "platform": "datahub",
        "store": "postgresql://datahub@db/datahub",
        "search": "http://search:9200",
    }
    report.entities = dict(entities)
    report.kafka_available = True
    lines: dict[str, dict[str, list[str]]] = {}
    counts: Counter[tuple[str, str, str]] = Counter()
    for t, urn, _ in TYPES:
        made = templates(t, urn)
        lines[t] = {k: [_dumps(finding_json(c, report)) + "\n" for c in cs] for k, cs in made.items()}
        for i in range(entities[t]):
            for c in made.get(case(t, i, behind, others) or "", []):
                counts[(t, c.verdict.value, c.subkind)] += 1
    total = sum(counts.values())
    report.counts = dict(counts)
    report.documents = {
        index_of(t): int(n * (1 - behind)) if t == "dataset" else n for t, n in entities.items()
    }
    report.finished_at = datetime.now(UTC)
    header = {"jsonl": FORMAT, **to_dict(report), "findings_total": total}
    header.pop("findings", None)
    opener = (
        (lambda p: gzip.open(p, "wt", encoding="utf-8", compresslevel=level))
        if out.name.endswith(".gz")
        else (lambda p: p.open("w", encoding="utf-8"))
    )
    with opener(out) as w:
        w.write(_dumps(header) + "\n")
        for t, _, _ in TYPES:
            _write(w, t, lines[t], entities[t], behind, others)
    return total


def _write(
    w: IO[str], entity_type: str, lines: dict[str, list[str]], n: int, behind: float, others: float
) -> None:
    """The type's entities' lines, in name (urn) order, a chunk at a time."""
    chunk: list[str] = []
    for i in range(n):
        kind = case(entity_type, i, behind, others)
        if kind is None:
            continue
        name = f"t{i:08d}"
        chunk.extend(line.replace(NAME, name) for line in lines[kind])
        if len(chunk) > 20_000:
            w.write("".join(chunk))
            chunk.clear()
    w.write("".join(chunk))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--findings", type=int, default=1_360_000, help="about this many lines")
    parser.add_argument("-o", "--out", type=Path, required=True, help="F.jsonl or F.jsonl.gz")
    parser.add_argument(
        "--behind", type=float, default=0.9, help="share of the datasets whose index doc is missing"
    )
    parser.add_argument("--others", type=float, default=0.3, help="share of the other types' entities behind")
    parser.add_argument("--level", type=int, default=1, help="gzip level")
    args = parser.parse_args()
    began = time.monotonic()
    total = generate(args.findings, args.out, args.behind, args.others, args.level)
    took = time.monotonic() - began
    size = args.out.stat().st_size
    print(f"{total:,} findings, {size / 2**20:,.0f} MiB, {took:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
