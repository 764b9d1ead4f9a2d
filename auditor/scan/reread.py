"""The causal re-observation every platform's scan runs: a candidate is judged on reads in order.

The scan reads the table, the indices (and a change log's consumer) at different moments while
the platform keeps writing, so a finding of the join may be nothing but a document read before
it was written. Every candidate's entity is therefore read again, in this order:

    rows (R)  ->  the platform's marks (O)  ->  documents (D)  ->  rows (R')

The marks are what a change log can say (DataHub: the consumer's committed offsets; a platform
without one has none) and the wait before D is the platform's (the index's visibility delay,
from when the marks last moved). An entity whose rows did not change between R and R' is
settled: its documents at D are judged against those rows. One whose rows changed was written
during the re-read: it is read again next round, up to `max_rounds`, and left unsettled (in
flight) after that. A candidate whose settled entity now agrees converged during the scan. With
`quick`, a first round reads D without waiting, and settles only the entities whose findings
`without_wait` says no wait could change (a platform with a change log: an event still pending).

A platform brings the reads (`prepare`, `rows`, `mark`, `wait`, `docs`, `check`, `evidence`);
this loop is the order, the rounds, the batches and the account (`Seen`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from auditor.core.model import Finding, Observation
from auditor.scan.engine import Observed, Seen

BATCH = 1000  # candidate entities re-read together
MAX_ROUNDS = 3  # re-reads of an entity whose rows keep changing before it is left in flight

KeyedEvidence = dict[str, tuple[Any, Any]]  # finding key -> (position, change-log evidence)


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _taken(findings: list[Finding]) -> Iterator[Finding]:
    """The list's findings, in order, each let go as it is handed on."""
    findings.reverse()
    while findings:
        yield findings.pop()


def _grouped(candidates: Iterable[Finding], size: int) -> Iterator[dict[str, list[Finding]]]:
    """The candidates by urn, `size` urns a group (0: all in one), each urn's findings together
    (the spill gives them so: sorted by urn)."""
    group: dict[str, list[Finding]] = {}
    for f in candidates:
        found = group.get(f.urn)
        if found is None:
            if size and len(group) >= size:
                yield group
                group = {}
            group[f.urn] = found = []
        found.append(f)
    if group:
        yield group


def _by_urn(findings: Sequence[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.urn, []).append(f)
    return out


class Rereader:
    """Re-reads candidates in causal order, batch by batch, round by round (the platform's reads
    are the methods it overrides; the loop is here)."""

    def __init__(
        self,
        *,
        visibility: float,
        batch: int = BATCH,
        max_rounds: int = MAX_ROUNDS,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.visibility = visibility  # a write is searchable this much later
        self.batch = batch  # 0: every candidate in one batch
        self.max_rounds = max_rounds
        self.clock = clock or time.time
        self.sleep = sleep or time.sleep

    # -- the platform's reads ---------------------------------------------------------------
    @property
    def quick(self) -> bool:
        """A first round without the wait (what `without_wait` settles needs none)."""
        return False

    def prepare(self, candidates: dict[str, list[Finding]]) -> Any:
        """What the round's reads share (a read plan), for these urns (in order) and their
        candidates (by default, that mapping)."""
        return candidates

    def rows(self, batch: Any) -> dict[str, Any]:
        """R and R': each urn's rows as read now (absent: no rows), in the urns' order."""
        raise NotImplementedError

    def mark(self) -> float | None:
        """O: sample the platform's marks; their time (None: it has none)."""
        return None

    def wait(self, sampled: float | None, urns: Sequence[str]) -> None:
        """Before D: until what was written before O is searchable (by default the visibility delay)."""
        self.sleep(self.visibility)

    def docs(self, batch: Any) -> Any:
        """D: the urns' documents (and whatever else the checks compare)."""
        raise NotImplementedError

    def check(self, batch: Any, settled: set[str], rows: dict[str, Any], docs: Any) -> list[Finding]:
        """The platform's checks over the settled urns' rows and documents."""
        raise NotImplementedError

    def evidence(self, findings: list[Finding], rows: dict[str, Any]) -> KeyedEvidence:
        """Per finding key: what the platform's change log says (by default nothing)."""
        return {}

    def without_wait(self, finding: Finding, evidence: tuple[Any, Any] | None) -> bool:
        """A finding the quick round may judge: no later read of the documents changes it."""
        return False

    def same(self, before: Any, after: Any) -> bool:
        """The urn's rows did not change between R and R'."""
        return bool(before == after)

    def idle(self) -> None:
        """There was nothing to re-read (a platform may still close what it opened)."""

    # -- the loop ---------------------------------------------------------------------------
    def run(self, candidates: list[Finding]) -> Seen:
        """Re-read the candidates' entities, batch by batch, into one account (a triage, a
        confirmation: a few). The list is taken: emptied as it is read."""
        candidates.sort(key=lambda f: f.urn)  # stable: each urn's findings together, in order
        out = Seen()
        for seen in self.batches(_taken(candidates)):
            out.observed += seen.observed
            out.converged += seen.converged
            out.unsettled += seen.unsettled
            out.candidates += seen.candidates
            out.entities += seen.entities
            out.rounds += seen.rounds
            out.seconds += seen.seconds
        return out

    def batches(self, candidates: Iterable[Finding]) -> Iterator[Seen]:
        """Re-read the candidates' entities a batch of `batch` urns at a time, one `Seen` each.
        The candidates come in urn order, each urn's together (the engine's spill): a batch's are
        let go once re-read, so the join's findings and the re-read ones are never all held at
        once (a scan after a search restore has millions)."""
        any_read = False
        for by_urn in _grouped(candidates, self.batch):
            began = self.clock()
            any_read = True
            out = Seen(candidates=sum(map(len, by_urn.values())), entities=len(by_urn))
            self._batch(list(by_urn), by_urn, out)
            out.seconds = self.clock() - began  # the re-reads' time, not the judging between batches
            yield out
        if not any_read:
            self.idle()

    def _batch(self, urns: list[str], by_urn: dict[str, list[Finding]], out: Seen) -> None:
        pending = urns
        first = 1
        if self.quick:
            first = 2
            out.rounds += 1
            settled, observation, findings, evidence = self._round(pending, by_urn, 1, wait=False)
            found_by_urn = _by_urn(findings)
            settled = {
                u
                for u in settled
                if all(self.without_wait(f, evidence.get(f.key)) for f in found_by_urn.get(u, []))
            }
            self._accept(settled, found_by_urn, by_urn, observation, evidence, out)
            pending = [u for u in pending if u not in settled]
            if not pending:
                return
        for round_no in range(first, first + self.max_rounds):
            out.rounds += 1
            settled, observation, findings, evidence = self._round(pending, by_urn, round_no)
            self._accept(settled, _by_urn(findings), by_urn, observation, evidence, out)
            pending = [u for u in pending if u not in settled]
            if not pending:
                return
        unsettled = Observation(
            observation.rows_read_at,
            observation.offsets_sampled_at,
            observation.docs_read_at,
            observation.rows_confirmed_at,
            rounds=observation.rounds,
            settled=False,
        )
        for urn in pending:
            out.unsettled.extend(Observed(f, unsettled) for f in by_urn[urn])

    @staticmethod
    def _accept(
        settled: set[str],
        found_by_urn: dict[str, list[Finding]],
        by_urn: dict[str, list[Finding]],
        observation: Observation,
        evidence: KeyedEvidence,
        out: Seen,
    ) -> None:
        """The settled entities' findings are observed; their other candidates converged."""
        for urn in settled:
            now_found = found_by_urn.get(urn, [])
            checks = {f.check for f in now_found}
            for f in now_found:
                position, kafka = evidence.get(f.key, (None, None))
                out.observed.append(Observed(f, observation, position, kafka))
            for f in by_urn[urn]:
                if f.check not in checks:
                    out.converged.append(Observed(f, observation))

    def _round(
        self, urns: list[str], by_urn: dict[str, list[Finding]], round_no: int, wait: bool = True
    ) -> tuple[set[str], Observation, list[Finding], KeyedEvidence]:
        batch = self.prepare({u: by_urn[u] for u in urns})
        rows = self.rows(batch)  # R
        rows_read = self.clock()
        sampled = self.mark()  # O
        if wait:
            self.wait(sampled, urns)
        docs_read = self.clock()  # D
        docs = self.docs(batch)
        again = self.rows(batch)  # R'
        confirmed = self.clock()
        settled = {u for u in urns if self.same(rows.get(u), again.get(u))}
        observation = Observation(
            _utc(rows_read),
            _utc(sampled) if sampled is not None else None,
            _utc(docs_read),
            _utc(confirmed),
            rounds=round_no,
        )
        # a settled urn's rows are the same at R and R': judged on the later read
        findings = [f for f in self.check(batch, settled, again, docs) if f.urn in settled]
        return settled, observation, findings, self.evidence(findings, again)
