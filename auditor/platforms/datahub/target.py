"""Where a DataHub scan looks (index prefix, change-log topics, MAE group) and how it judges by
default, from the settings."""

from __future__ import annotations

from auditor.backends.search_readers import reader_processes
from auditor.platforms.datahub.scan.run import ScanTarget
from auditor.settings.model import Settings


def scan_target(settings: Settings) -> ScanTarget:
    """Where the scan looks and its default judgement, from the settings."""
    return ScanTarget(
        index_prefix=settings.index_prefix,
        versioned_topic=settings.mcl_versioned_topic,
        timeseries_topic=settings.mcl_timeseries_topic,
        group=settings.mae_consumer_group,
        grace=settings.grace_seconds,
        sample_window=settings.sample_window_seconds,
        visibility=settings.index_visibility_seconds,
        prefetch=settings.scan_prefetch,
        readers=reader_processes(settings.scan_readers),
        platform_version=settings.platform_version,
        gms_url=settings.gms_url,
    )
