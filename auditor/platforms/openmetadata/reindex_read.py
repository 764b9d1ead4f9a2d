"""A scan's reading of OpenMetadata's reindex evidence: the tables (store), the rebuild index (search).

The judgement is reindex.py's; this reads what it rests on: the newest jobs, the failure rows of
the findings' entities, for a running job the partitions of the findings' types and where each
finding's entity stands in the order the job reads them (reindex_place.py), and for a running
2.0 reindex the findings' documents in its rebuild index (by a real-time multi-get), compared
with their rows by the scan's own check.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping

from auditor.checks.openmetadata import check
from auditor.core.model import Finding
from auditor.platforms.openmetadata.join import OmScanner
from auditor.platforms.openmetadata.naming import OmEntity
from auditor.platforms.openmetadata.reindex import ReindexEvidence
from auditor.platforms.openmetadata.reindex_place import place
from auditor.platforms.openmetadata.reindex_rows import FAILURE_TABLE, JOB_TABLE, ReindexJob

# a row whose updatedAt is this close before the job's createdAt counts as written since (the
# servers' clocks, and the partitions counted a moment after the job row was made)
CLOCK_SKEW_MS = 5_000


def read_reindex(
    scanner: OmScanner, entities: Mapping[str, OmEntity], findings: Iterable[Finding]
) -> tuple[ReindexEvidence | None, list[str]]:
    """The evidence (None without the tables: OpenMetadata before 1.12) and warnings about reading it."""
    store, search = scanner.store, scanner.search
    now = int(time.time() * 1000)
    jobs = store.reindex_jobs()
    if jobs is None:
        if JOB_TABLE in store.denied:
            return None, [f"SELECT on {JOB_TABLE} refused: no reindex evidence (GRANT SELECT on it)"]
        return None, [f"no {JOB_TABLE} table (an OpenMetadata before 1.12): no reindex evidence"]
    evidence = ReindexEvidence(jobs, now_ms=now)
    for n, running in enumerate(evidence.jobs):  # a rebuild its row names no index for: search's
        if running.running(now):
            wanted = [t for t in entities if running.covers(t) and t not in running.staged]
            found = {t: i for t in wanted if (i := search.rebuild_index(entities[t]))}
            if found:
                evidence.jobs[n] = dataclasses.replace(running, staged={**running.staged, **found})
    current = {t: evidence.current(t) for t in entities}
    job_ids = sorted({j.id for j in current.values() if j is not None})
    ids = sorted({f.urn for f in findings})
    fqns = sorted({str(f.details["fqn"]) for f in findings if f.details.get("fqn")})
    warnings: list[str] = []
    got = store.reindex_failures(job_ids, ids, fqns)
    if got is None:
        why = "SELECT on it refused" if FAILURE_TABLE in store.denied else "no such table"
        warnings.append(f"{FAILURE_TABLE}: {why}: the reindex evidence names no failure rows")
    else:
        evidence.failures, evidence.stages = got
    _place(scanner, entities, findings, evidence, current)
    for t, job in current.items():
        index = job.staged.get(t) if job is not None else None
        ids_of_t = sorted({f.urn for f in findings if f.entity_type == t})
        if index is None or job is None:
            continue
        agrees = evidence.staged_agrees
        if not job.running(now):  # did its rebuild index reach the users (the aliases)?
            meta = search.search.index_meta(index)
            evidence.staged_state[t] = "gone" if not meta else "promoted" if meta[index][0] else "unpromoted"
            agrees = evidence.unpromoted_agrees
            if evidence.staged_state[t] != "unpromoted":
                continue
        if ids_of_t:
            rows, docs = store.read(entities[t], ids_of_t), search.realtime(index, ids_of_t)
            for entity_id in ids_of_t:
                doc = docs.get(entity_id)
                if doc is not None and check(entities[t], index, rows.get(entity_id), doc) is None:
                    agrees.add(entity_id)
    return evidence, warnings


def _place(
    scanner: OmScanner,
    entities: Mapping[str, OmEntity],
    findings: Iterable[Finding],
    evidence: ReindexEvidence,
    current: Mapping[str, ReindexJob | None],
) -> None:
    """For each running job, where the findings of its types stand in its partitions."""
    store, now = scanner.store, evidence.now_ms
    running: dict[str, list[str]] = {}
    for t, job in current.items():
        if job is not None and job.running(now) and any(f.entity_type == t for f in findings):
            running.setdefault(job.id, []).append(t)
    for job_id, types in running.items():
        job = next(j for j in evidence.jobs if j.id == job_id)
        partitions = store.reindex_partitions(job.id, types)
        if partitions is None:
            continue  # no partition table: the job's progress is all there is
        for t in types:
            mine = [p for p in partitions if p.entity_type == t]
            ids = sorted({f.urn for f in findings if f.entity_type == t})
            order = store.reindex_order(entities[t], ids, job.created_at - CLOCK_SKEW_MS) if mine else None
            for entity_id in ids:
                evidence.placements[entity_id] = place(entity_id, mine, order)
