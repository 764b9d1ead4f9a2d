"""DataHub's per-hook consumer groups: the evidence uses the group that feeds the index.

DataHub's MAE consumer groups its MCL hooks by `consumerGroupSuffix` and runs one Kafka group per
suffix, named `<base>` for the empty suffix and `<base>-<suffix>` otherwise (the base is
METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID, `generic-mae-consumer-job-client` by default). The
UpdateIndicesHook writes the search documents; its suffix is UPDATE_INDICES_CONSUMER_GROUP_SUFFIX
(the settings compose it, `auditor.settings`). When the configured group has committed nothing on
the change-log topics and exactly one `<group>-<suffix>` group has, that group is the one feeding
the index: the scan samples it instead and says so. Several such groups: the scan keeps the
configured one and names them (only the deployment knows which suffix UpdateIndicesHook has).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from auditor.errors import BackendUnavailable


def _committed(samples: Sequence[Any]) -> bool:
    return any(s.committed is not None for s in samples)


def hook_group(events: Any, target: Any, configured: Sequence[Any] | None = None) -> tuple[Any, list[str]]:
    """The target with the group that feeds the index (the configured one unless it is idle and
    exactly one per-hook group `<group>-<suffix>` consumes the topics), and what to warn of.

    `configured`: the configured group's offset sample of the change-log topics, if already
    taken (the scan's window opens with it: one sample of the broker, not two)."""
    groups = getattr(events, "groups", None)
    if events is None or groups is None:
        return target, []
    topics = [target.versioned_topic, target.timeseries_topic]
    try:
        if _committed(events.sample(topics, target.group) if configured is None else configured):
            return target, []
        candidates = [g for g in groups(f"{target.group}-") if _committed(events.sample(topics, g))]
    except BackendUnavailable:
        return target, []  # the window's own sample reports it
    if len(candidates) == 1:
        chosen = candidates[0]
        note = (
            f"the MAE group {target.group} has committed nothing on {', '.join(topics)}; {chosen} (a "
            "per-hook group, DataHub's consumerGroupSuffix) has: the evidence uses it "
            "(set UPDATE_INDICES_CONSUMER_GROUP_SUFFIX or --consumer-group to say so)"
        )
        return replace(target, group=chosen), [note]
    if candidates:
        return target, [
            f"the MAE group {target.group} has committed nothing on {', '.join(topics)}; per-hook groups "
            f"{', '.join(sorted(candidates))} have: which one runs UpdateIndicesHook is the deployment's "
            "UPDATE_INDICES_CONSUMER_GROUP_SUFFIX (pass --consumer-group)"
        ]
    return target, []
