"""The judgement from OpenMetadata's own reindex (1.12 and later): jobs and failure rows as evidence.

2.0 rebuilds every type into `<index>_rebuild_<epoch ms>` (search/DefaultRecreateHandler); live
writes go there (SearchRepository.resolveWriteIndex, PR 27651) and the promotion swaps the
aliases onto it, a partial one too (promotion/RatioPromotionPolicy: an index holding any
document is promoted). A running job on a type makes that type's findings in flight (its
progress and an ETA at its rate so far) where it has yet to reach them: an entity in a
partition it has completed (or cancelled) keeps the verdict it has without the job, the
partition named; one in a partition that failed for good is diverged, the failure named; one
whose place is not known stays in flight (reindex_place.py). A failure row of the job for the
entity keeps it diverged, its cause in the evidence. The newest finished job with failures
names itself and the entity's failure row in the evidence of its type's findings. Pure:
records in, verdicts out (the rows: reindex_rows.py; reading them: reindex_read.py).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.core.classify import decided, explained
from auditor.core.model import Classified, Finding, Verdict
from auditor.platforms.openmetadata.reindex_place import Placement
from auditor.platforms.openmetadata.reindex_rows import (
    IndexFailure,
    ReindexJob,
    first_line,
    iso,
)


@dataclass
class ReindexEvidence:
    """What the reindex tables (and the rebuild indices) said, and the judgement from it."""

    jobs: list[ReindexJob]  # newest first
    failures: list[IndexFailure] = field(default_factory=list)  # of the findings' entities
    staged_agrees: set[str] = field(default_factory=set)  # ids whose rebuild-index doc agrees
    stages: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # job -> stage -> rows
    # entity type -> what became of the current (not running) job's rebuild index: `promoted`
    # (it has the aliases), `unpromoted` (it exists without one), `gone`
    staged_state: dict[str, str] = field(default_factory=dict)
    unpromoted_agrees: set[str] = field(default_factory=set)  # ids an unpromoted index holds right
    placements: dict[str, Placement] = field(default_factory=dict)  # id -> its running job's partitions
    now_ms: int = 0

    def current(self, entity_type: str) -> ReindexJob | None:
        """The running job on the type, else its newest job (ended, or abandoned mid-way)."""
        covering = [j for j in self.jobs if j.covers(entity_type)]
        running = next((j for j in covering if j.running(self.now_ms)), None)
        return running or next(iter(covering), None)

    def _head(self, job: ReindexJob) -> str:
        if job.stalled(self.now_ms):
            since = iso(job.updated_at)
            return f"search_index_job {job.id} ({job.status}, abandoned: no progress since {since})"
        return f"search_index_job {job.id} ({job.status})"

    def _left(self, job: ReindexJob, entity_type: str, urn: str) -> str:
        """What a job that is not running left the type's users reading."""
        staged, failed = job.staged.get(entity_type), job.of(entity_type).failed or job.failed
        state = self.staged_state.get(
            entity_type, "promoted" if staged and not job.stalled(self.now_ms) else ""
        )
        if not staged or not state:
            return f"{entity_type} is left by {self._head(job)}, {failed} failed"
        if state == "promoted":
            return f"{entity_type} is served from the partial index of {self._head(job)}, {failed} failed"
        said = f"{self._head(job)} never promoted its rebuild index {staged}"
        if state == "gone":
            return f"{said} (deleted since)"
        if urn in self.unpromoted_agrees:
            said += (", which holds this document as its row says: a live write made while the job ran "
                     "went there, not to the index users read")  # fmt: skip
        return said

    def judge(self, c: Classified) -> Classified:
        """The verdict with the reindex's evidence: in flight behind a running job, diverged with
        the cause its failure row gives, or the verdict kept with the partial job named."""
        if c.verdict in (Verdict.INVALID, Verdict.STORE_BEHIND):  # no reindex of the rows helps those
            return c
        f = c.finding
        job = self.current(f.entity_type)
        if job is None or not (job.running(self.now_ms) or job.troubled(self.now_ms)):
            return c
        fqn = str(f.details.get("fqn") or "\x00")
        of_job = [x for x in self.failures if x.job_id == job.id]
        fails = [x for x in of_job if x.entity_id == f.urn or x.entity_fqn == fqn]
        p, now, staged = job.of(f.entity_type), self.now_ms, job.staged.get(f.entity_type)
        placed = self.placements.get(f.urn) if job.running(now) else None
        behind = (
            placed is not None and placed.state in ("passed", "failed") and f.urn not in self.staged_agrees
        )
        if c.verdict == Verdict.IN_FLIGHT and not fails and not behind:
            return c  # in flight on stronger evidence already (converged during the scan, a retry)
        info: dict[str, Any] = {
            "job": job.id,
            "status": job.status,
            "processed": p.processed,
            "total": p.total,
        }
        if staged:
            info["rebuild_index"] = staged
        if placed is not None:
            info["place"] = placed.summary()
        if fails:
            info["failures"] = [{"stage": x.stage, "error": x.error, "at": x.at} for x in fails[:3]]
        finding = dataclasses.replace(f, details={**f.details, "reindex": info})
        cause = f"search_index_failures of job {job.id}: {fails[0].said()}" if fails else ""
        head = self._head(job)
        if job.running(now) and not fails and placed is not None and behind:
            return self._behind(c, finding, head, placed, staged)
        if job.running(now) and not fails:
            where = f"; {placed.where()}" if placed is not None else ""
            if f.urn in self.staged_agrees:
                why = f"the rebuild index {staged} of running {head} holds it as its row says: the promotion"
                why += f" will serve it ({job.said(f.entity_type, now)})"
            else:
                into = f" into {staged}" if staged else ""
                why = f"{head} is reindexing it{into}: {job.said(f.entity_type, now)}{where}"
            eta, rate = job.eta(f.entity_type, now), job.rate(now)
            evidence = dataclasses.replace(c.evidence, reason=why, eta_seconds=eta, rate=rate)
            return decided(c, Verdict.IN_FLIGHT, evidence, finding)
        if job.running(now):  # it failed this entity: the promotion will not serve it
            evidence = dataclasses.replace(c.evidence, reason=f"{head} failed to index it; {cause}")
            return decided(c, Verdict.DIVERGED, evidence, finding)
        why = f"{c.evidence.reason}; {self._left(job, f.entity_type, f.urn)}"
        why += f"; {cause}" if cause else ""
        return explained(c, why, finding)

    @staticmethod
    def _behind(
        c: Classified, finding: Finding, head: str, placed: Placement, staged: str | None
    ) -> Classified:
        """A running job that is done with the entity's partition will not rewrite it: the verdict
        it has without the job (a partition failed for good: diverged), the partition named."""
        served = f"; its rebuild index {staged} does not hold it as its row says" if staged else ""
        if placed.state == "failed":
            why = f"{head} failed the partition holding it: {placed.where()}{served}"
            evidence = dataclasses.replace(c.evidence, reason=why)
            return decided(c, Verdict.DIVERGED, evidence, finding)
        why = f"{c.evidence.reason}; {head} has passed it and will not rewrite it: {placed.where()}{served}"
        return explained(c, why, finding)

    def warnings(self, entity_types: Iterable[str], aliases: Mapping[str, str]) -> list[str]:
        """One line per job that bears on the scanned types: running, stalled, or ended partial."""
        out: list[str] = []
        types = list(entity_types)
        seen: set[str] = set()
        for t in types:
            job = self.current(t)
            if job is None or job.id in seen:
                continue
            mine = [x for x in types if job.covers(x) and self.current(x) is job]
            seen.add(job.id)
            if job.running(self.now_ms):
                progress = "; ".join(job.said(x, self.now_ms) for x in mine)
                line = f"search_index_job {job.id} is {job.status}: {progress}; their findings are in flight"
                passed = [
                    i for i, x in self.placements.items() if x.state in ("passed", "failed")
                    and x.partitions and x.partitions[0].entity_type in mine and i not in self.staged_agrees
                ]  # fmt: skip
                if passed:
                    line += (f" but for {len(passed)} in partitions it has completed or failed (judged as "
                             "without it)")  # fmt: skip
                else:
                    line += " where it has yet to reach them"
                out.append(line)
                for x in (x for x in mine if x in job.staged):
                    out.append(
                        f"2.0 reindex of {x}: live writes go to {job.staged[x]} until its promotion; the "
                        f"scan reads what users read ({aliases.get(x, x)}) and a document there is in flight"
                    )
            elif job.troubled(self.now_ms):
                out.append(self._partial(job, mine))
        return out

    def _partial(self, job: ReindexJob, types: list[str]) -> str:
        """A job that ended with failures, or was abandoned: what it left, its failure rows."""
        rows = [x for x in self.failures if x.job_id == job.id]
        counted = self.stages.get(job.id) or Counter(x.stage for x in rows)
        stages = ", ".join(f"{first_line(s, 40)} {n}" for s, n in sorted(counted.items()))
        if job.stalled(self.now_ms):
            line = (f"search_index_job {job.id} is {job.status} but has not progressed since "
                    f"{iso(job.updated_at)}: abandoned (OrphanJobMonitor's 10 minutes), {job.processed} of "
                    f"{job.total} records processed")  # fmt: skip
        else:
            line = (
                f"search_index_job {job.id} ended {job.status} at {iso(job.completed_at or job.updated_at)}"
            )
            line += f": {job.failed} of {job.total} records failed"
        if job.error:
            line += f" ({job.error})"
        for t in (t for t in types if t in job.staged):
            state = self.staged_state.get(t, "" if job.stalled(self.now_ms) else "promoted")
            if state == "promoted":
                line += f"; promoted a partial index of {t} ({job.staged[t]})"
            elif state == "unpromoted":
                line += f"; {t}: its rebuild index {job.staged[t]} was never promoted (no alias), with "
                line += "the live writes made while it ran; OrphanedIndexCleaner deletes it in 30 minutes"
            elif state == "gone":
                line += f"; {t}: its rebuild index {job.staged[t]} was never promoted and is gone"
        if stages:
            line += f"; search_index_failures rows by stage: {stages}"
        if rows:
            line += f"; first of the findings: {rows[0].entity_fqn or rows[0].entity_id} {rows[0].said()}"
        return line
