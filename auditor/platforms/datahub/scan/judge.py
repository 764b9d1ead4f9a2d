"""DataHub's evidence on the engine's verdicts: store conflicts, restores recognised, in flight confirmed."""

from __future__ import annotations

import time

from auditor.backends.protocols import Store
from auditor.core.classify import mark_restores as relabel_restores
from auditor.core.classify import restore_candidates
from auditor.core.model import Classified, Kind, Report, Selection, Verdict
from auditor.errors import AuditorError
from auditor.platforms.datahub.naming import entity_index
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.scan.federation import conflict_verdict
from auditor.platforms.datahub.scan.join import Scanner
from auditor.scan.engine import Observed


def weigh(judged: list[tuple[Observed, Classified]]) -> list[Classified]:
    """DataHub's evidence on the kernel's verdicts: a urn held by several stores of a federation is
    diverged whatever the consumer does."""
    return [
        conflict_verdict(o.finding, o.observation) if o.finding.kind == Kind.STORE_CONFLICT else c
        for o, c in judged
    ]


def mark_restores(
    classified: list[Classified], store: Store, registry: Registry, index_prefix: str
) -> list[Classified]:
    """Re-label the diverged findings of an index that holds an older snapshot's state."""
    candidates = restore_candidates(classified)
    if not candidates:
        return classified
    types = {entity_index(name, index_prefix): name for name in registry.entity_names}
    changed = {
        index: (instant, store.count_changed_since(types.get(index, ""), instant))
        for index, instant in candidates.items()
    }
    return relabel_restores(classified, changed)


def confirm(classified: list[Classified], wait: float, scanner: Scanner, report: Report) -> list[Classified]:
    """Wait, then re-check the in-flight findings' entities: those now clean converged."""
    pending = [c for c in classified if c.verdict == Verdict.IN_FLIGHT]
    if not pending:
        return classified
    time.sleep(wait)
    still: set[str] = set()
    urns = sorted({c.finding.urn for c in pending})
    for i in range(0, len(urns), 500):
        try:
            again = scanner.run(Selection(urns=tuple(urns[i : i + 500])))
        except AuditorError:
            return classified
        still.update(f.key for f in again.findings)
    out = []
    for c in classified:
        if c.verdict == Verdict.IN_FLIGHT and c.finding.key not in still:
            report.converged.append(c.finding.key)
            continue
        out.append(c)
    return out
