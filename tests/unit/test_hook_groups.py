"""Per-hook consumer groups: the group composed from DataHub's settings, or found by its commits."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.platforms.datahub.scan.hook_groups import hook_group
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
    hook = f"{BASE}-updateIndices"
    events = Events({hook}, [BASE, hook, f"{BASE}-idle"])
    chosen, notes = hook_group(events, ScanTarget())
    assert chosen.group == hook and len(notes) == 1 and hook in notes[0]
    busy = Events({BASE, hook}, [BASE, hook])
    assert hook_group(busy, ScanTarget()) == (ScanTarget(), [])
    # the configured group's sample, already taken for the window, is not taken again
    assert hook_group(events, ScanTarget(), [Sample(7)]) == (ScanTarget(), [])
    assert hook_group(events, ScanTarget(), [Sample(None)])[0].group == hook


def test_two_consuming_hook_groups_are_named_not_guessed() -> None:
    events = Events({f"{BASE}-a", f"{BASE}-b"}, [f"{BASE}-a", f"{BASE}-b"])
    chosen, notes = hook_group(events, ScanTarget())
    assert chosen.group == BASE and f"{BASE}-a, {BASE}-b" in notes[0]
