"""Replay: one RESTATE MCL per selected version-0 row, keyset-paged, checkpointed, order-guarded.

The next page is read from the database in a thread while this one is produced. Each batch is
produced, every delivery report awaited, failed messages produced again (and
reported by urn if they still fail); then the database digests the batch's key range (one
row back) and, only if that moved, the batch's rows are read again and any row that
changed since it was read is produced again, after the newer write's own MCL, so the consumer
ends on the newest row (same key, same partition: order holds). Only then the checkpoint moves
past the batch: a run killed at any point resumes with no gap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from auditor.backends.protocols import Store
from auditor.core.records import AspectRow
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.backends.producer import MclProducer, Refused
from auditor.platforms.datahub.backends.store import row_fingerprint
from auditor.rebuild.ahead import Ahead
from auditor.rebuild.checkpoint import Checkpoint
from auditor.rebuild.datahub.mcl import RestateBuilder
from auditor.rebuild.datahub.rows import RowSource
from auditor.rebuild.throttle import Throttle

DELIVERY_RETRIES = 3
GUARD_ROUNDS = 5  # re-checks of rows produced again (each may have been written again meanwhile)

Progress = Callable[[int], None]


class Held(Protocol):
    """What of one urn a replay holds back: the aspects the index holds a later write of."""

    @property
    def why(self) -> str: ...

    @property
    def aspects(self) -> frozenset[str]: ...


Hold = Callable[[list[tuple[str, AspectRow]]], Mapping[str, Held]]


class Replayer:
    def __init__(
        self,
        store: Store,
        producer: MclProducer,
        checkpoint: Checkpoint,
        path: Path,
        *,
        rate: float | None = None,
        batch: int = 1000,
        progress: Progress | None = None,
        hold: Hold | None = None,
        before_produce: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.store = store
        # of a page, the urns whose documents hold a later write than their rows (the store is
        # behind): those aspects' rows not replayed, they would be applied over it (None: replay all)
        self.hold = hold
        # the write journal's hook: the page's urns' documents imaged before it is produced
        self.before_produce = before_produce
        self.producer = producer
        self.builder = RestateBuilder(producer.schema_str)
        self.checkpoint = checkpoint
        self.path = path
        self.throttle = Throttle(rate)
        self.batch = batch
        self.progress = progress

    def run(self, source: RowSource) -> Checkpoint:
        ck = self.checkpoint
        after = (ck.last_urn, ck.last_aspect or "") if ck.last_urn is not None else None
        ahead = Ahead(source.page, after, self.batch, name="replay-rows")
        while True:
            page = ahead.result()
            if not page:
                break
            # the next page is read while this one is produced (the database's time overlaps the
            # encoding); the checkpoint still moves only past this page once it is confirmed
            ahead = Ahead(source.page, (page[-1][0], page[-1][1].aspect), self.batch, name="replay-rows")
            sent = self._held(page)
            if sent and self.before_produce is not None:
                self.before_produce(list(dict.fromkeys(u for u, _ in sent)))
            if sent:
                self._deliver(sent)
            if sent and not source.unchanged(page):  # one digest of the page; row by row only if it moved
                self._guard(sent)
            ck.last_urn, ck.last_aspect = page[-1][0], page[-1][1].aspect
            urns = list(dict.fromkeys(u for u, _ in page))
            if ck.track_touched:  # a urn's rows are adjacent: only the first may go on from the last page
                ck.touched.extend(urns[1:] if ck.touched and urns[0] == ck.touched[-1] else urns)
            ck.count("entities_in_pages", len(urns))
            ck.save(self.path)
            if self.progress is not None:
                self.progress(ck.counts.get("produced", 0))
        ck.done = True
        ck.save(self.path)
        return ck

    def _held(self, page: list[tuple[str, AspectRow]]) -> list[tuple[str, AspectRow]]:
        """The page without the rows held back (each urn recorded on the checkpoint with why)."""
        held = self.hold(page) if self.hold is not None else {}
        for urn, what in held.items():
            if urn not in self.checkpoint.kept:
                self.checkpoint.count("kept: the store is behind")
            self.checkpoint.kept[urn] = what.why
        if not held:
            return page
        return [(u, r) for u, r in page if u not in held or r.aspect not in held[u].aspects]

    def _deliver(self, rows: list[tuple[str, AspectRow]]) -> None:
        """Produce the rows and confirm every delivery (failures retried, then reported by urn)."""
        todo = rows
        errors: set[str] = set()
        refused: dict[str, str] = {}  # urn -> why: the client refused its MCL, no retry helps
        refusals = 0
        for _attempt in range(DELIVERY_RETRIES + 1):
            sent = []
            for urn, row in todo:
                self.throttle.wait()
                try:
                    self.producer.produce(urn, self.builder.record(urn, row))
                except Refused as exc:
                    refused.setdefault(urn, str(exc))
                    refusals += 1
                    continue
                sent.append((urn, row))
            todo = sent
            deliveries = self.producer.flush()
            errors.update(e for _, e in deliveries.failed)
            confirmed: dict[str, int] = {}
            for urn, partition, offset in deliveries.confirmed:
                confirmed[urn] = confirmed.get(urn, 0) + 1
                key = str(partition)
                self.checkpoint.produced[key] = max(self.checkpoint.produced.get(key, -1), offset)
            self.checkpoint.count("produced", len(deliveries.confirmed))
            left = []
            for urn, row in todo:  # a message counts as delivered once per confirmed report of its urn
                if confirmed.get(urn, 0) > 0:
                    confirmed[urn] -= 1
                else:
                    left.append((urn, row))
            todo = left
            if not todo:
                break
        if todo and len(todo) == len(rows) and not refused:
            why = "; ".join(sorted(errors))[:300]
            raise BackendUnavailable(f"Kafka {self.producer.description}: no delivery confirmed ({why})")
        for urn, _ in todo:
            refused.setdefault(urn, "; ".join(sorted(errors))[:300] or "no delivery report")
        if refused:
            self.checkpoint.failed.extend(sorted(set(refused) - set(self.checkpoint.failed)))
            for urn, why in refused.items():
                self.checkpoint.why.setdefault(urn, why)
            self.checkpoint.count("failed", len(todo) + refusals)

    def _guard(self, rows: list[tuple[str, AspectRow]]) -> None:
        """Rows written since they were read are produced again, after the newer write's MCL.

        Called when the page's digest moved. Compared by fingerprint (createdon and a digest the
        database computes); only the rows that changed are read whole again. What is produced
        again is checked again the same way (a write may land between that read and that
        produce too), up to GUARD_ROUNDS times;
        rows still changing after that are counted and left to the verification.
        """
        for _ in range(GUARD_ROUNDS):
            changed = self._changed(rows)
            if not changed:
                return
            self.checkpoint.count("produced_again", len(changed))
            self._deliver(changed)
            rows = changed
        self.checkpoint.count("still_changing", len(rows))

    def _changed(self, rows: list[tuple[str, AspectRow]]) -> list[tuple[str, AspectRow]]:
        """The rows whose version 0 differs now from what was read, as they are now."""
        now = self.store.fingerprints(tuple(sorted({u for u, _ in rows})))
        moved: set[str] = set()
        for urn, row in rows:
            seen = now.get((urn, row.aspect))
            if seen is None:  # deleted meanwhile: its delete MCL may now sit before ours
                self.checkpoint.count("deleted_meanwhile")
            elif seen != row_fingerprint(row):
                moved.add(urn)
        if not moved:
            return []
        newer = {e.urn: e for e in self.store.stream_entities(urns=tuple(sorted(moved)))}
        out = []
        for urn, row in rows:
            entity = newer.get(urn)
            current = entity.rows.get(row.aspect) if entity is not None else None
            if urn in moved and current is not None and current != row:
                out.append((urn, current))
        return out
