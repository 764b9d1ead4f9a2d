"""Per-hook consumer groups: the group composed from DataHub's settings, or found by its commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from auditor.core.model import Report
from auditor.platforms.datahub.scan.hook_groups import with_hook_group
from auditor.platforms.datahub.scan.run import ScanTarget
from auditor.settings import load_settings

BASE = "generic-mae-consumer-job-client"


def test_the_update_indices_suffix_composes_the_group_as_datahub_does() -> None:
    env = {"UPDATE_INDICES_CONSUMER_GROUP_SUFFIX": "ui"}
    assert load_settings(env=env).mae_consumer_group == f"{BASE}-ui"
    env["METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID"] = "mae"
    assert load_settings(env=env).mae_consumer_group == "mae-ui"
    assert load_settings(env={**env, "AUDITOR_MAE_CONSUMER_GROUP": "mine"}).mae_consumer_group == "mine"
    assert load_settings(env=env, mae_consumer_group="flag").mae_consumer_group == "flag"


@dataclass
class Sample:
    committed: int | None


class Events:
    def __init__(self, committing: set[str], known: list[str]) -> None:
        self.committing, self.known = committing, known

    def sample(self, topics: list[str], group: str) -> list[Sample]:
        return [Sample(5 if group in self.committing else None)]

    def groups(self, prefix: str = "") -> list[str]:
        return [g for g in self.known if g.startswith(prefix)]


def test_an_idle_base_group_gives_way_to_the_one_hook_group_that_consumes() -> None:
    report = Report(datetime.now(UTC))
    hook = f"{BASE}-updateIndices"
    events = Events({hook}, [BASE, hook, f"{BASE}-idle"])
    assert with_hook_group(events, ScanTarget(), report).group == hook
    assert report.consumer_group == hook and hook in report.warnings[0]
    busy = Events({BASE, hook}, [BASE, hook])
    assert with_hook_group(busy, ScanTarget(), Report(datetime.now(UTC))).group == BASE


def test_two_consuming_hook_groups_are_named_not_guessed() -> None:
    report = Report(datetime.now(UTC))
    events = Events({f"{BASE}-a", f"{BASE}-b"}, [f"{BASE}-a", f"{BASE}-b"])
    assert with_hook_group(events, ScanTarget(), report).group == BASE
    assert f"{BASE}-a, {BASE}-b" in report.warnings[0]
