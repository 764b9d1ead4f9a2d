"""DataHub's evidence on the engine's verdicts: store conflicts, restores recognised, in flight confirmed
(each over the verdicts as a stream: a scan after a restore judges millions)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from datetime import datetime

from auditor.backends.protocols import Store
from auditor.core.classify import RESTORE_MIN_ENTITIES, relabel_restored, restored_indices
from auditor.core.model import Classified, Kind, Report, Selection, Verdict
from auditor.errors import AuditorError
from auditor.platforms.datahub.naming import entity_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.federation import conflict_verdict
from auditor.platforms.datahub.scan.join import Scanner
from auditor.platforms.datahub.sections import restore_lines, restores
from auditor.scan.engine import Observed


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


def still_in_flight(urns: set[str], wait: float, scanner: Scanner) -> set[str] | None:
    """After `wait`, the keys of the in-flight findings of `urns` still found (None: none was in
    flight, or the re-check could not be made)."""
    if not urns:
        return None
    time.sleep(wait)
    still: set[str] = set()
    ordered = sorted(urns)
    for i in range(0, len(ordered), CONFIRM_BATCH):
        try:
            again = scanner.run(Selection(urns=tuple(ordered[i : i + CONFIRM_BATCH])))
        except AuditorError:
            return None
        still.update(f.key for f in again.findings)
    return still


def unconverged(classified: Iterable[Classified], still: set[str], report: Report) -> Iterator[Classified]:
    """The verdicts but the in-flight ones the confirmation found converged (reported as such)."""
    for c in classified:
        if c.verdict == Verdict.IN_FLIGHT and c.finding.key not in still:
            report.converged.append(c.finding.key)
            continue
        yield c
