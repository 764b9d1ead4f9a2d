"""The scan's sampling window over the MAE group's offsets: its first sample (which may be taken
beside the join: it reads the broker only) and the Kafka side a re-observation samples again."""

from __future__ import annotations

from concurrent.futures import Future

from auditor.backends.connect import WEAKER
from auditor.backends.protocols import Events
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.scan.evidence import ConsumerView, partition_of, start_window
from auditor.platforms.datahub.scan.reobserve import KafkaSide
from auditor.platforms.datahub.scan.target import ScanBackends, ScanTarget
from auditor.scan.options import ScanOptions


def first_sample(events: Events, target: ScanTarget) -> tuple[ConsumerView, int]:
    """The window's first sample of the group's offsets, and the partitions of the versioned topic
    (reads the broker only: it may run beside the join)."""
    view = start_window(events, [target.versioned_topic, target.timeseries_topic], target.group)
    return view, events.partitions(target.versioned_topic)


def open_window(
    backends: ScanBackends,
    options: ScanOptions,
    target: ScanTarget,
    warnings: list[str],
    report_urns: tuple[str, ...] = (),
    first: Future[tuple[ConsumerView, int]] | None = None,
) -> KafkaSide | None:
    """The sampling window, opened by its first offset sample before the re-observation (`first`:
    that sample, taken beside the join; None: taken now). None: no Kafka, the verdicts get weaker."""
    events = backends.events
    if events is None:
        return None
    topics = [target.versioned_topic, target.timeseries_topic]
    window = target.sample_window if options.sample_window is None else options.sample_window
    try:
        view, partitions = first.result() if first is not None else first_sample(events, target)
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
