"""DataHub's evidence on the engine's verdicts: store conflicts, restores recognised, in flight confirmed
(each over the verdicts as a stream: a scan after a restore judges millions)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from itertools import islice
from operator import itemgetter

from auditor.backends.protocols import Store
from auditor.backends.store_order import unique
from auditor.core.classify import RESTORE_MIN_ENTITIES, relabel_restored, restored_indices
from auditor.core.model import Classified, Kind, Report, Selection, Verdict
from auditor.errors import AuditorError
from auditor.platforms.datahub.naming import entity_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.federation import conflict_verdict
from auditor.platforms.datahub.scan.join import Scanner
from auditor.platforms.datahub.sections import restore_lines, restores
from auditor.scan.engine import Observed
from auditor.scan.spill import Spill


def weigh(judged: list[tuple[Observed, Classified]]) -> list[Classified]:
    """DataHub's evidence on the kernel's verdicts: a urn held by several stores of a federation is
    diverged whatever the consumer does."""
    return [
        conflict_verdict(o.finding, o.observation) if o.finding.kind == Kind.STORE_CONFLICT else c
        for o, c in judged
    ]


def mark_restores(
    classified: Iterable[Classified],
    store: Store,
    registry: Registry,
    index_prefix: str,
    report: Report,
    counted: dict[str, tuple[datetime, int]],
) -> Iterable[Classified]:
    """Re-label the diverged findings of an index that holds an older snapshot's state (the
    earliest stale write of each index and its entities: `counted`, gathered as the verdicts were
    judged; the verdicts then given back as a stream); each such index is said
    once in the report's `restores` section, with its counts and its one repair."""
    candidates = {index: t for index, (t, n) in counted.items() if n >= RESTORE_MIN_ENTITIES}
    if not candidates:
        return classified
    types = {entity_index(name, index_prefix): name for name in registry.entity_names}
    changed = {
        index: (instant, store.count_changed_since(types.get(index, ""), instant))
        for index, instant in candidates.items()
    }
    found = restored_indices(classified, changed, {index: counted[index][1] for index in candidates})
    restores(report).extend(restore_lines(found, types, index_prefix))
    return relabel_restored(classified, found)


CONFIRM_BATCH = 500  # in-flight urns checked again a join at a time

Still = Spill[tuple[str, str]]  # (urn, finding key) of the findings a confirmation still found


def still_in_flight(urns: Iterable[str], wait: float, scanner: Scanner) -> Still | None:
    """After `wait`, the in-flight findings of `urns` (in urn order; a urn may come more than once)
    still found, as (urn, key) in urn order, on disk: memory flat in the findings. None: none was
    in flight, or the re-check could not be made."""
    ordered = unique(urns)
    batch = list(islice(ordered, CONFIRM_BATCH))
    if not batch:
        return None
    time.sleep(wait)
    still: Still = Spill(key=itemgetter(0))
    while batch:
        try:
            again = scanner.run(Selection(urns=tuple(batch)))
        except AuditorError:
            still.close()
            return None
        still.extend(sorted((f.urn, f.key) for f in again.findings))
        batch = list(islice(ordered, CONFIRM_BATCH))
    return still


def unconverged(
    classified: Iterable[Classified], still: Iterable[tuple[str, str]], report: Report
) -> Iterator[Classified]:
    """The verdicts but the in-flight ones the confirmation found converged (reported as such).
    Both streams in urn order, merged: for each in-flight urn, the keys still found of that urn
    alone are held. An in-flight verdict out of urn order is kept (never taken for converged on
    a look-up that could miss)."""
    pending = iter(still)
    head = next(pending, None)
    at: str | None = None  # the in-flight urn whose keys `keys` holds
    keys: set[str] = set()
    for c in classified:
        urn = c.finding.urn
        if c.verdict != Verdict.IN_FLIGHT or (at is not None and urn < at):
            yield c
            continue
        if urn != at:
            at, keys = urn, set()
            while head is not None and head[0] < urn:
                head = next(pending, None)
            while head is not None and head[0] == urn:
                keys.add(head[1])
                head = next(pending, None)
        if c.finding.key not in keys:
            report.add_converged([c.finding.key])
            continue
        yield c
