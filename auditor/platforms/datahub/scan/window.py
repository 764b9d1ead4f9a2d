"""The scan's sampling window over the MAE group's offsets: its first sample (which may be taken
beside the join: it reads the broker only) and the Kafka side a re-observation samples again."""

from __future__ import annotations

from concurrent.futures import Future

from auditor.backends.connect import WEAKER
from auditor.backends.protocols import Events
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.scan.evidence import ConsumerView, partition_of, start_window
from auditor.platforms.datahub.scan.hook_groups import hook_group
from auditor.platforms.datahub.scan.reobserve import KafkaSide
from auditor.platforms.datahub.scan.target import ScanBackends, ScanTarget
from auditor.scan.options import ScanOptions


def first_sample(events: Events, target: ScanTarget) -> tuple[ConsumerView, int]:
    """The window's first sample of the group's offsets, and the partitions of the versioned topic
    (reads the broker only: it may run beside the join)."""
    view = start_window(events, [target.versioned_topic, target.timeseries_topic], target.group)
    return view, events.partitions(target.versioned_topic)


Opened = tuple[ScanTarget, list[str], tuple[ConsumerView, int]]


def open_group(events: Events, target: ScanTarget) -> Opened:
    """The group that feeds the index (`hook_group`: the configured one unless it is idle and one
    per-hook group consumes), what to warn of, and the window's first sample of that group. The
    configured group's sample serves both the choice and the window (the common case: one sample);
    reads the broker only, so it may run beside the join."""
    first = first_sample(events, target)
    chosen, notes = hook_group(events, target, first[0].first)
    return chosen, notes, (first if chosen is target else first_sample(events, chosen))


def open_window(
    backends: ScanBackends,
    options: ScanOptions,
    target: ScanTarget,
    warnings: list[str],
    report_urns: tuple[str, ...] = (),
    first: Future[Opened] | None = None,
) -> KafkaSide | None:
    """The sampling window, opened by its first offset sample before the re-observation (`first`:
    `open_group`'s, taken beside the join, for `target` with its group as chosen there; None:
    taken now). None: no Kafka, the verdicts get weaker."""
    events = backends.events
    if events is None:
        return None
    topics = [target.versioned_topic, target.timeseries_topic]
    window = target.sample_window if options.sample_window is None else options.sample_window
    try:
        view, partitions = first.result()[2] if first is not None else first_sample(events, target)
    except BackendUnavailable as exc:
        warnings.append(f"{exc}: {WEAKER}")
        return None
    previous = backends.state.previous_samples(target.group)
    watch = None
    if report_urns and partitions:
        watch = {(target.versioned_topic, partition_of(events)(u, partitions)) for u in report_urns}
    return KafkaSide(
        events,
        view,
        topics,
        target.versioned_topic,
        window,
        previous,
        partitions,
        max_window=options.max_window,
        watch=watch,
    )
