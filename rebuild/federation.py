"""A repair of a federation (several stores feeding one index): one single-store repair per store,
around the repair of any platform that declares FEDERATION (auditor.api composes them: the
platform gives its single-store repair and which of its stores hold a urn now).

Each finding of a federated report names the store whose rows it rests on, so each store's
repair gets that store's findings and runs exactly as a single store's does (its own
checkpoint and lock, keyed by the store; its own verification). Two kinds need more:

- a urn held by two or more stores (a `store_conflict`) is not written at all, nor any other
  finding of that urn: the index shows whichever store wrote last, and which store should own
  it is a person's decision (`fix_row`). They are counted under `elsewhere` and named in a note;
- an orphan (a document or edge of a urn that no store held at the scan) is repaired last,
  after the stores' own findings, and looked up in every store right before: a urn that one
  store holds now goes to that store's repair (its document is rewritten from the rows); one
  that none holds goes to the first store's repair, which deletes the document after reading,
  again, that the urn has no row there. Every store is asked once more afterwards: a urn
  written into a store meanwhile (a deleted document it may need) is reported still wrong.

The outcomes are merged into one: counts summed, what is still wrong listed, a note per store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from auditor.core.model import Classified, Kind
from auditor.core.plan import RebuildOutcome, RepairPlan
from auditor.errors import ConfigError
from auditor.rebuild.request import RebuildRequest
from auditor.settings.model import Settings

Single = Callable[[Settings, RebuildRequest], RebuildOutcome]


@dataclass
class Split:
    """A federated report's findings, by the store whose repair takes them."""

    by_store: dict[str, list[Classified]] = field(default_factory=dict)
    conflicted: list[Classified] = field(default_factory=list)  # a person decides: not written
    orphans: list[Classified] = field(default_factory=list)  # no store held the urn at the scan
    moved: int = 0  # orphans whose urn a store holds now (its repair rewrites the document)


Holders = Callable[[Sequence[str]], dict[str, list[str]]]


def _conflicted(findings: Sequence[Classified]) -> set[str]:
    return {
        c.finding.urn for c in findings if c.finding.kind == Kind.STORE_CONFLICT or len(c.finding.stores) > 1
    }


def split(findings: Sequence[Classified], names: Sequence[str]) -> Split:
    """Each finding to the store it rests on (`names`: the stores, in their configured order);
    a conflicted urn's findings aside, and the orphans aside (see `home`)."""
    out = Split()
    conflicted = _conflicted(findings)
    for c in findings:
        store = c.finding.stores[0] if c.finding.stores else None
        if c.finding.urn in conflicted:
            out.conflicted.append(c)
        elif store is None and c.finding.urn:
            out.orphans.append(c)
        elif store is None:  # an urn-less finding (a stalled group): the first store's repair
            out.by_store.setdefault(names[0], []).append(c)
        elif store not in names:
            raise ConfigError(
                f"the report names store {store!r}, which is not one of the stores configured "
                f"({', '.join(names)})",
                hint="configure the federation the report was made of (--store NAME=URL, AUDITOR_STORES)",
            )
        else:
            out.by_store.setdefault(store, []).append(c)
    return out


def home(orphans: Sequence[Classified], names: Sequence[str], holders: Holders) -> Split:
    """The orphans to the store that holds their urn now (asked once), or to the first store
    (which deletes what no store holds); a urn two stores hold now is a conflict."""
    out = Split()
    now = holders(sorted({c.finding.urn for c in orphans}))
    for c in orphans:
        held = now.get(c.finding.urn, [])
        if len(held) > 1:
            out.conflicted.append(c)
        else:
            out.moved += bool(held)
            out.by_store.setdefault(held[0] if held else names[0], []).append(c)
    return out


def store_settings(settings: Settings, name: str) -> Settings:
    """The federation's settings narrowed to its store `name` (topics, group, index shared)."""
    entry = next(e for e in settings.stores if e.name == name)
    return settings.model_copy(update={"stores": (), "store_url": entry.url, "store_table": entry.table})


def merge(mode: str, applied: bool, parts: Sequence[tuple[str, RebuildOutcome]]) -> RebuildOutcome:
    """The stores' outcomes as one (each store's counts in a note)."""
    out = RebuildOutcome(mode, applied, RepairPlan([a for _, o in parts for a in o.plan.actions]))
    out.rows = sum(o.rows or 0 for _, o in parts)
    estimates = [o.estimate_seconds for _, o in parts if o.estimate_seconds is not None]
    out.estimate_seconds = sum(estimates) if estimates else None  # the stores run one after another
    caught = [o.consumer_caught_up for _, o in parts if o.consumer_caught_up is not None]
    out.consumer_caught_up = all(caught) if caught else None
    for name, o in parts:
        for key, n in o.counts.items():
            out.counts[key] = out.counts.get(key, 0) + n
        for key, n in o.elsewhere.items():
            out.elsewhere[key] = out.elsewhere.get(key, 0) + n
        out.failed += o.failed
        out.why.update(o.why)
        out.still_wrong += o.still_wrong
        out.waiting += o.waiting
        out.verified_urns += o.verified_urns
        out.warnings += [f"store {name}: {w}" for w in o.warnings]
        done = ", ".join(f"{k} {v}" for k, v in sorted(o.counts.items())) or "nothing written"
        out.notes.append(f"store {name}: {o.rows or 0} in scope; {done}")
        out.notes += o.notes
        if o.checkpoint:
            out.notes.append(f"store {name}: checkpoint {o.checkpoint}")
    return out


def rebuild_federation(
    settings: Settings,
    request: RebuildRequest,
    single: Single,
    holders: Holders,
) -> RebuildOutcome:
    """Replay or reindex a federated report's findings, one store after another, the orphans
    last. `single`: a single store's repair; `holders`: which stores hold each urn now."""
    names = [e.name for e in settings.stores]
    if request.findings is None:
        raise ConfigError(
            "a repair of a federation works from a scan's report",
            hint="scan the federation, then `auditor rebuild replay|reindex --from-report scan.json`; "
            "or repair one store by its filters with --store-url",
        )
    if request.shard is not None or request.full:
        raise ConfigError(
            "--shard and --full are not supported on a federation",
            hint="repair one store at a time with --store-url (docs/federation.md)",
        )
    ask = holders
    parts = split(request.findings, names)
    outcomes: list[tuple[str, RebuildOutcome]] = []

    def repair(label: str, name: str, mine: list[Classified]) -> None:
        done = single(store_settings(settings, name), replace(request, findings=mine))
        outcomes.append((label, done))

    for name in names:  # the configured order: a resumed run meets the stores as the first did
        if parts.by_store.get(name):
            repair(name, name, parts.by_store[name])
    conflicted = list(parts.conflicted)
    homed = Split()
    if parts.orphans:
        homed = home(parts.orphans, names, ask)
        conflicted += homed.conflicted
        for name in names:
            if homed.by_store.get(name):
                repair(f"{name} (orphans)", name, homed.by_store[name])
    out = merge(request.mode, request.apply, outcomes)
    if parts.orphans and request.apply:
        gone = homed.by_store.get(names[0], [])
        # the first store's repair re-read its own rows before deleting: only the others can have
        # written the urn unseen
        now = ask(sorted({c.finding.urn for c in gone}))
        written = {u: others for u, held in now.items() if (others := [h for h in held if h != names[0]])}
        for c in gone:
            if c.finding.urn in written and c not in out.still_wrong:
                out.still_wrong.append(c)
        for urn, held in sorted(written.items()):
            out.warnings.append(
                f"{urn} was written into store {', '.join(held)} during the repair of its orphan "
                "document: scan it again (`auditor triage`), reindex it if its document is missing"
            )
    if conflicted:
        urns = sorted({c.finding.urn for c in conflicted})
        out.elsewhere["fix_row"] = out.elsewhere.get("fix_row", 0) + len(urns)
        out.notes.append(
            f"{len(urns)} urn(s) held by two or more stores left as they are (a person decides "
            f"which store owns each, then re-scans): {', '.join(urns[:5])}"
            + (" ..." if len(urns) > 5 else "")
        )
    if homed.moved:
        out.notes.append(f"{homed.moved} orphan finding(s) of urns a store holds now: rewritten from it")
    return out
