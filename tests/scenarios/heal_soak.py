"""The heal soak: live writes while faults are injected at random, the heal loop on a short schedule.

A LiveLoad writes aspects (row, MCL, index write through the consumer, as every world does) to
three fifths of the world's entities; a chaos thread injects, one at a time at seeded random
moments, the five faults into the other two fifths (a lost index write, a dropped MCL, an orphan,
a consumer pause, a partial restore); `heal_once` runs every `heal_every` seconds under a policy
that heals any finding seen by two scans. At the end the faults stop, the consumer drains, the
heal runs until nothing is left, and the index is compared with the truth: what the sandbox's own
indexer (not the auditor's projection) makes of the rows as they are then.

What each fault is expected to do (docs/benchmark.md says it too):

- a lost index write, a dropped MCL, a partial restore (a few documents put back as they were
  before a write): healed once persistent;
- an orphan (the rows deleted behind the index's back): healed, the policy has `prune = true`;
- a consumer pause: never healed (what is written meanwhile is in flight and converges when the
  consumer resumes); a heal that scans while it lasts pages with the `consumer` guard (or the
  systemic one, its backlog): a page with a cause.

A heal of any entity no fault touched is a false heal (the live writes: they would have
converged); a page while no pause was on (or just over) is a page without a cause.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from load import LOAD_TYPES, LiveLoad
from sqlalchemy import text
from world import World

from auditor.core.model import Verdict
from auditor.heal.loop import HealOutcome, heal_once
from auditor.heal.policy import Policy, parse_policy
from auditor.scan.options import ScanOptions
from sandbox.indexer import IndexUpdater
from sandbox.mcl import ChangeLog
from sandbox.naming import ASPECT_TABLE, entity_doc_id, entity_index, entity_type_of, graph_index

HEALED_KINDS = ("lost_index_write", "dropped_mcl", "orphan", "partial_restore")
KINDS = (*HEALED_KINDS, "consumer_pause")
PAGING_GUARDS = frozenset({"consumer", "systemic_divergence"})  # what a pause may page with

POLICY = """
[heal]
enabled = true
prune = true           # the soak's orphans are healed (deleted)
max_per_run = 50
max_per_hour = 5000
rate = 50

[guards]
max_share = 0.1
max_count = 100

[[rule]]
kind = "*"
action = "heal"
after_scans = {after_scans}        # seen by this many scans (2: a write in flight is not)
after = "{after}"
"""


@dataclass
class Fault:
    """One injected fault: when, what it touched, and when the heal found and healed it."""

    kind: str
    urns: set[str]
    at: float  # seconds since the soak began
    ended: float | None = None  # a pause's resume
    found: float | None = None  # the end of the first heal whose scan judged it diverged
    healed: float | None = None  # the end of the heal that repaired every urn of it, verified
    healed_urns: set[str] = field(default_factory=set)

    @property
    def heal_seconds(self) -> float | None:
        return None if self.healed is None else round(self.healed - self.at, 1)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "urns": sorted(self.urns), "at": round(self.at, 1),
                "ended": _r(self.ended), "found": _r(self.found), "healed": _r(self.healed),
                "heal_seconds": self.heal_seconds}  # fmt: skip


@dataclass
class Heal:
    """One heal of the loop, as the soak saw it."""

    run: str
    started: float
    finished: float
    exit_code: int
    diverged: set[str]
    healed: set[str]
    verified: bool
    refused: list[str]
    cause: str | None = None  # a page's: the fault it is owed to (None: without a cause)

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "started": round(self.started, 1), "finished": round(self.finished, 1),
                "exit_code": self.exit_code, "diverged": len(self.diverged), "healed": sorted(self.healed),
                "verified": self.verified, "refused": self.refused, "cause": self.cause}  # fmt: skip


@dataclass
class SoakResult:
    """What the soak reports: the faults, the heals, the final scan and the truth compared."""

    seconds: float
    faults: list[Fault]
    heals: list[Heal]
    writes: int
    write_errors: int
    final_exit_code: int = -1
    final_diverged: list[str] = field(default_factory=list)
    truth_docs: int = 0
    truth_differences: list[str] = field(default_factory=list)
    quiet_seconds: float = 0.0
    heal_errors: list[str] = field(default_factory=list)

    @property
    def false_heals(self) -> list[str]:
        touched = set().union(*(f.urns for f in self.faults)) if self.faults else set()
        return sorted({u for h in self.heals for u in h.healed} - touched)

    @property
    def pages(self) -> list[Heal]:
        return [h for h in self.heals if h.refused]

    @property
    def pages_without_cause(self) -> list[Heal]:
        return [h for h in self.pages if h.cause is None]

    def expected_healed(self) -> list[Fault]:
        return [f for f in self.faults if f.kind in HEALED_KINDS]

    def unhealed(self) -> list[Fault]:
        return [f for f in self.expected_healed() if f.healed is None]

    def summary(self) -> dict[str, Any]:
        healed = self.expected_healed()
        times = [f.heal_seconds for f in healed if f.heal_seconds is not None]
        by_kind = {
            k: {"injected": sum(f.kind == k for f in self.faults),
                "found": sum(f.kind == k and f.found is not None for f in self.faults),
                "healed": sum(f.kind == k and f.healed is not None for f in self.faults)}
            for k in KINDS
        }  # fmt: skip
        pages: dict[str, int] = {}
        for h in self.pages:
            key = f"{'+'.join(h.refused)} ({h.cause or 'no cause'})"
            pages[key] = pages.get(key, 0) + 1
        return {
            "seconds": round(self.seconds, 1),
            "writes": self.writes,
            "write_errors": self.write_errors,
            "heals": len(self.heals),
            "heal_errors": self.heal_errors,
            "faults": by_kind,
            "heal_seconds_median": round(statistics.median(times), 1) if times else None,
            "heal_seconds_max": max(times) if times else None,
            "false_heals": self.false_heals,
            "pages": pages,
            "pages_without_cause": len(self.pages_without_cause),
            "unhealed": [f.to_json() for f in self.unhealed()],
            "quiet_seconds": round(self.quiet_seconds, 1),
            "final_exit_code": self.final_exit_code,
            "final_diverged": self.final_diverged,
            "truth_docs": self.truth_docs,
            "truth_differences": self.truth_differences[:50],
            "truth_equal": not self.truth_differences and self.truth_docs > 0,
        }

    def table(self) -> str:
        s = self.summary()
        lines = [f"{'fault':<18}{'injected':>9}{'found':>7}{'healed':>7}"]
        for kind, n in s["faults"].items():
            lines.append(f"{kind:<18}{n['injected']:>9}{n['found']:>7}{n['healed']:>7}")
        lines += [
            f"time to heal: median {s['heal_seconds_median']} s, max {s['heal_seconds_max']} s",
            f"heals run: {s['heals']} ({len(self.heal_errors)} raised); live writes: {s['writes']} "
            f"({s['write_errors']} errors)",
            f"false heals: {len(s['false_heals'])} {s['false_heals'][:5]}",
            f"pages: {sum(s['pages'].values())} {s['pages']}; without a cause: {s['pages_without_cause']}",
            f"final scan: exit {s['final_exit_code']}, {len(s['final_diverged'])} diverged",
            f"index vs truth: {s['truth_docs']} documents, {len(self.truth_differences)} differ",
        ]
        return "\n".join(lines)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


@dataclass(frozen=True)
class SoakConfig:
    seconds: float = 180.0  # live writes and faults
    min_faults: int = 0  # and on until this many faults were injected (a short run's every kind)
    rate: float = 10.0  # live writes a second
    heal_every: float = 10.0  # the heal loop's schedule
    fault_every: float = 15.0  # the mean time between two faults
    pause_seconds: float = 8.0  # a consumer pause's length
    restore_size: int = 3  # documents put back by a partial restore
    after_scans: int = 2  # the policy's persistence: seen by this many scans
    after: str = "0s"  # and by time
    quiet_timeout: float = 120.0  # after the faults: how long the heal may take to heal them all
    seed: int = 54
    settle: float = 2.0
    sample_window: float = 3.0


class Soak:
    """One soak over a world (its consumer running, its release written: the release guard)."""

    def __init__(self, world: World, tmp: Path, config: SoakConfig) -> None:
        self.world, self.tmp, self.config = world, tmp, config
        self.rng = random.Random(config.seed)
        targets = sorted(e.urn for t in LOAD_TYPES for e in world.of_type(t))
        self.rng.shuffle(targets)
        self.pool = targets[: len(targets) * 2 // 5]  # the faults' entities; the rest are written live
        self.policy: Policy = parse_policy(
            POLICY.format(after_scans=config.after_scans, after=config.after), "soak policy"
        )
        self.faults: list[Fault] = []
        self.heals: list[Heal] = []
        self.errors: list[str] = []  # heals that raised
        self._skip: set[tuple[str, str]] = set()  # one-shot lost index writes (urn, aspect)
        self._lock = threading.Lock()
        self._stop_chaos = threading.Event()
        self._stop_heal = threading.Event()
        self._t0 = 0.0
        self._i = 0
        world.consumer.skip_index_write(self._skipped)

    # ------------------------------------------------------------------ the run

    def run(self) -> SoakResult:
        c = self.config
        self._t0 = time.monotonic()
        healer = threading.Thread(target=self._heal_loop, name="soak-heal", daemon=True)
        chaos = threading.Thread(target=self._chaos, name="soak-chaos", daemon=True)
        with LiveLoad(self.world, rate=c.rate, seed=c.seed, exclude=set(self.pool)) as load:
            healer.start()
            chaos.start()
            self._stop_chaos.wait(c.seconds)
            while len(self.faults) < c.min_faults and chaos.is_alive():
                time.sleep(0.2)
            self._stop_chaos.set()
            chaos.join(60)
        quiet_from = self.now()
        self.world.consumer.resume()
        assert self.world.consumer.drain(120), "the consumer did not drain after the soak"
        deadline = time.monotonic() + c.quiet_timeout
        while time.monotonic() < deadline and not self._settled():
            time.sleep(0.5)
        self._stop_heal.set()
        healer.join(300)
        result = SoakResult(self.now(), self.faults, self.heals, load.stats.writes, load.stats.errors)
        result.heal_errors = self.errors
        result.quiet_seconds = self.now() - quiet_from
        final = self.world.scan()
        result.final_exit_code = int(final.exit_code)
        result.final_diverged = sorted(
            {f.finding.urn for f in final.findings if f.verdict == Verdict.DIVERGED}
        )
        result.truth_docs, result.truth_differences = compare_with_truth(self.world)
        return result

    def now(self) -> float:
        return time.monotonic() - self._t0

    def _settled(self) -> bool:
        """Every fault the heal should heal healed, and the newest heal found nothing left."""
        with self._lock:
            last = self.heals[-1] if self.heals else None
            pending = [f for f in self.faults if f.kind in HEALED_KINDS and f.healed is None]
            return (
                not pending and last is not None and not last.diverged and last.started > self._quiet_mark()
            )

    def _quiet_mark(self) -> float:
        return max((f.ended or f.at for f in self.faults), default=0.0)

    # ------------------------------------------------------------------ the heal loop

    def _heal_loop(self) -> None:
        c = self.config
        options = ScanOptions(settle=c.settle, sample_window=c.sample_window)
        settings = self.world.settings()
        while not self._stop_heal.is_set():
            started = self.now()
            try:
                outcome = heal_once(
                    settings, self.policy, options=options, state_dir=self.tmp, wait_seconds=60
                )
            except Exception as exc:  # counted and reported: a scheduler would run the next one
                self.errors.append(f"{started:.1f}s: {type(exc).__name__}: {exc}")
            else:
                self._record(outcome, started, self.now())
            self._stop_heal.wait(max(0.0, c.heal_every - (self.now() - started)))

    def _record(self, outcome: HealOutcome, started: float, finished: float) -> None:
        diverged = {x.finding.finding.urn for x in outcome.left if x.finding.verdict == Verdict.DIVERGED}
        diverged |= {c.finding.urn for c in outcome.healed}
        applied = outcome.repair is not None and outcome.repair.applied
        healed = set(outcome.healed_urns) if applied else set()
        heal = Heal(outcome.run_id, started, finished, int(outcome.exit_code), diverged, healed,
                    outcome.verified, [r.guard for r in outcome.refused])  # fmt: skip
        with self._lock:
            if heal.refused:
                heal.cause = self._cause(heal)
            for f in self.faults:
                if f.found is None and f.urns & diverged:
                    f.found = finished
                if heal.verified:
                    f.healed_urns |= f.urns & healed
                if f.healed is None and f.urns and f.healed_urns >= f.urns:
                    f.healed = finished
            self.heals.append(heal)

    def _cause(self, heal: Heal) -> str | None:
        """The pause a page is owed to: one on while the heal ran, or over less than a heal's
        schedule before it began (the scan's sample of the consumer may predate its catch-up)."""
        if not set(heal.refused) <= PAGING_GUARDS:
            return None
        slack = self.config.heal_every + self.config.sample_window
        for f in self.faults:
            if (
                f.kind == "consumer_pause"
                and f.at <= heal.finished
                and (f.ended is None or f.ended + slack >= heal.started)
            ):
                return f"consumer_pause at {f.at:.1f}s"
        return None

    # ------------------------------------------------------------------ the chaos

    def _chaos(self) -> None:
        kinds: list[str] = []
        while True:
            if self._stop_chaos.wait(self.rng.uniform(0.5, 1.5) * self.config.fault_every):
                return
            if not kinds:  # every kind once, in a random order, then again
                kinds = list(KINDS)
                self.rng.shuffle(kinds)
            kind = kinds.pop()
            at = self.now()
            fault = Fault(kind, set(), at)
            with self._lock:
                self.faults.append(fault)
            fault.urns = getattr(self, f"_{kind}")(fault)

    def _target(self) -> str:
        """An entity of the pool no fault touched yet (each fault's own: the heals are told apart)."""
        assert self._i < len(self.pool), "the pool of entities for faults is used up: a larger world"
        self._i += 1
        return self.pool[self._i - 1]

    def _tags(self, what: str) -> dict[str, Any]:
        return {"tags": [{"tag": f"urn:li:tag:soak-{what}-{uuid.uuid4().hex[:6]}"}]}

    def _skipped(self, urn: str, aspect: str) -> bool:
        """The consumer's lost index write: once, for the fault's own write."""
        with self._lock:
            if (urn, aspect) in self._skip:
                self._skip.discard((urn, aspect))
                return True
        return False

    def _lost_index_write(self, fault: Fault) -> set[str]:
        urn = self._target()
        with self._lock:
            self._skip.add((urn, "globalTags"))
        self.world.writer.write(urn, "globalTags", self._tags("lost"))
        return {urn}

    def _dropped_mcl(self, fault: Fault) -> set[str]:
        urn = self._target()
        self.world.writer.write(urn, "globalTags", self._tags("dropped"), drop_mcl=True)
        return {urn}

    def _orphan(self, fault: Fault) -> set[str]:
        urn = self._target()
        assert self.world.writer.hard_delete_rows(urn) > 0
        return {urn}

    def _consumer_pause(self, fault: Fault) -> set[str]:
        self.world.consumer.pause()
        self._stop_chaos.wait(self.config.pause_seconds)
        self.world.consumer.resume()
        fault.ended = self.now()
        return set()

    def _partial_restore(self, fault: Fault) -> set[str]:
        """A few documents put back as a snapshot held them before a write the consumer applied."""
        urns = [self._target() for _ in range(self.config.restore_size)]
        store = self.world.search
        where = {u: (entity_index(entity_type_of(u), self.world.prefix), entity_doc_id(u)) for u in urns}
        before = {u: store.get(*where[u]) for u in urns}
        for u in urns:
            self.world.writer.write(u, "globalTags", self._tags("restored-over"))
        deadline = time.monotonic() + 60
        while any(store.get(*where[u]) == before[u] for u in urns):
            assert time.monotonic() < deadline, "the consumer did not apply the writes to restore over"
            time.sleep(0.2)
        for u in urns:
            store.put(*where[u], before[u])
        return set(urns)


# ---------------------------------------------------------------------- the truth


def compare_with_truth(world: World) -> tuple[int, list[str]]:
    """The world's documents against the truth: what the sandbox's own indexer (not the auditor's
    projection) makes of the rows as they are now, every aspect's latest version applied once as
    a RestoreIndices would, into memory (a search server's partial-update merge; creating a
    reference index per entity type took half a minute on a loaded machine). Every index is
    compared (entities, system metadata, edges), document by document, as JSON (`_kept` says
    what is left out). Returns (documents in the truth, differences)."""
    memory = _MemoryStore()
    updater = IndexUpdater(memory, world.prefix)  # type: ignore[arg-type]  # the calls it makes
    updater.release = world.consumer.updater.release
    updater.v3 = world.consumer.updater.v3
    for change in _changes_from_rows(world):
        updater.apply(change, flush=False)
    updater.flush()
    world.refresh()
    live: dict[tuple[str, str], str] = {}
    for index in world.search.list_indices(f"{world.prefix}_*"):
        live.update(_kept(world.prefix, index, world.search.scan(index)))
    truth: dict[tuple[str, str], str] = {}
    for index, docs in memory.indices.items():
        truth.update(_kept(world.prefix, index, docs.items()))
    keys = sorted(live.keys() | truth.keys())
    return len(truth), [
        _difference(k, live.get(k), truth.get(k)) for k in keys if live.get(k) != truth.get(k)
    ]


class _MemoryStore:
    """The calls the sandbox's IndexUpdater makes of a search store, for a replay of upserts:
    documents in dicts, a partial update merged into the stored document as the servers merge it
    (objects key by key, anything else replaced)."""

    def __init__(self) -> None:
        self.indices: dict[str, dict[str, dict[str, Any]]] = {}

    def put_template(self, *args: Any, **kwargs: Any) -> None:
        pass

    def ensure_index(self, index: str, mappings: dict[str, Any]) -> None:
        self.indices.setdefault(index, {})

    def mget(self, index: str, doc_ids: Any) -> dict[str, dict[str, Any]]:
        docs = self.indices.get(index, {})
        return {d: docs[d] for d in doc_ids if d in docs}

    def bulk(self, actions: Any) -> list[dict[str, Any]]:
        for a in actions:
            docs = self.indices.setdefault(a["_index"], {})
            if a["_op_type"] == "delete":
                docs.pop(a["_id"], None)
            else:
                _merge(docs.setdefault(a["_id"], {}), json.loads(json.dumps(a["doc"])))
        return []

    def delete_by_query(self, index: str, query: dict[str, Any]) -> int:
        raise AssertionError("a replay of upserts deletes nothing by query")


def _merge(into: dict[str, Any], doc: dict[str, Any]) -> None:
    for key, value in doc.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


# an edge's audit stamps are its history (when it first appeared, who last wrote it), which the
# latest rows do not hold: a replay from them stamps every edge now. The edge itself is compared.
EDGE_HISTORY = ("createdOn", "createdActor", "updatedOn", "updatedActor")


def _kept(prefix: str, index: str, docs: Any) -> dict[tuple[str, str], str]:
    """(index, id) -> the document as sorted JSON, an edge without its history, and a field that
    is null left out: the platform writes an empty string as null where a heal's reindex leaves
    the field out (measured: a dashboard's empty description), the same to every search."""
    edges = index == graph_index(prefix)
    return {
        (index[len(prefix) :], doc_id): json.dumps(
            {k: v for k, v in doc.items() if v is not None and not (edges and k in EDGE_HISTORY)},
            sort_keys=True,
        )
        for doc_id, doc in docs
    }


def _difference(key: tuple[str, str], live: str | None, truth: str | None) -> str:
    """One document that differs, in a line: absent on one side, or the fields that differ."""
    where = f"{key[0]}/{key[1]}"
    if live is None or truth is None:
        return f"{where}: {'absent from the index' if live is None else 'not in the truth'}"
    a, b = json.loads(live), json.loads(truth)
    fields = sorted(k for k in a.keys() | b.keys() if _spelled(a, k) != _spelled(b, k))
    return where + ": " + "; ".join(f"{k} {_spelled(a, k)} vs {_spelled(b, k)}"[:200] for k in fields)


def _spelled(doc: dict[str, Any], key: str) -> str:
    """A field as JSON spells it (1 and 1.0, true and 1 differ), or "absent" (null is not)."""
    return json.dumps(doc[key], sort_keys=True) if key in doc else "absent"


def _changes_from_rows(world: World) -> list[ChangeLog]:
    """Every aspect's latest row as the UPSERT MCL that wrote it."""
    with world.engine.connect() as conn:
        rows = conn.execute(
            text(
                f"SELECT urn, aspect, metadata, systemmetadata, createdon, createdby FROM {ASPECT_TABLE} "
                "WHERE version = 0 ORDER BY urn, createdon, aspect"
            )
        ).all()
    changes = []
    for urn, aspect, metadata, sm, created, actor in rows:
        changes.append(
            ChangeLog(
                entity_type_of(urn),
                urn,
                "UPSERT",
                aspect,
                json.loads(metadata),
                None,
                json.loads(sm) if sm else None,
                None,
                int(created.timestamp() * 1000),
                actor,
            )  # fmt: skip
        )
    return changes
