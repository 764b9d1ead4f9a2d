"""What a platform is to the auditor: the interface the face reads, and the capabilities it declares.

A platform (DataHub, OpenMetadata, ...) is where the truth lives, how a search document is
derived from it, what carries its changes and which repairs make sense. Everything else (the
verdict rules, the reports, sharding, federation) is shared. The face (`auditor.api`, the CLI)
asks the registry (`auditor.platforms.get`) for the platform named by the settings or by a
report, refuses what the platform does not declare (`Platform.require`: one place, one
wording), and calls it. Nothing here imports a platform.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar, Protocol

from auditor.core.model import Section
from auditor.core.repairs import Executors, Mode, Renderer
from auditor.errors import ConfigError

if TYPE_CHECKING:
    from auditor.backends.search import SearchIndex
    from auditor.core.model import Classified, Report, Selection
    from auditor.core.plan import RebuildOutcome, RepairPlan, RestoreEvidence
    from auditor.core.triage import TriageResult
    from auditor.core.watch_model import ProbeResult, WatchConfig, WatchSnapshot
    from auditor.drill.spec import TableSpec
    from auditor.platforms.resident import Resident
    from auditor.rebuild.request import RebuildRequest
    from auditor.scan.options import Progress, ScanOptions
    from auditor.scan.shards import ShardPlan
    from auditor.settings.model import Settings


class Watching(Protocol):
    """An open watch, driven by the face (`auditor watch`)."""

    def run(
        self,
        duration: float | None,
        every: float,
        show: Callable[[WatchSnapshot], None],
        stop: Callable[[], bool],
    ) -> WatchSnapshot: ...

    def commit(self) -> None: ...

    def snapshot(self) -> WatchSnapshot: ...

    def listen(self, on_late: Callable[[Classified], None]) -> None: ...


class Canary(Protocol):
    """The probe's writer of its canary entity (`auditor probe`)."""

    def remove_canary(self) -> None: ...


class Capability(StrEnum):
    """What a platform can do beyond the scan; the pipelines and the CLI refuse the rest."""

    CHANGE_LOG = "a change log (consumer offsets, the change events of a urn)"
    REPLAY = "a replay through the platform's own consumer (rebuild replay)"
    STAGED_REINDEX = "a staged full reindex (rebuild reindex --full)"
    SHARD_PLAN = "urn-range shards (--shard, --plan-shards, --workers)"
    FEDERATION = "federated stores (--store NAME=URL)"
    WATCH = "the freshness watch (auditor watch)"
    PROBE = "the canary probe (auditor probe)"
    TRIAGE = "triage of one entity (auditor triage)"
    SERVE = "the resident console (auditor serve)"
    AFTER_RESTORE = "the after-restore repair (rebuild after-restore)"
    URN_PATTERN = "a urn pattern (--urn-like)"
    TIME_WINDOW = "a time window (--since / --until)"
    ASPECT_FILTER = "an aspect filter (--aspect)"


# the methods a platform must provide (override) for each capability it declares: a declaration
# without them is refused when the registry loads the platform (`proof`), not when a user hits it
PARTS: dict[Capability, tuple[str, ...]] = {
    Capability.SHARD_PLAN: ("plan_shards",),
    Capability.FEDERATION: ("holders",),
    Capability.WATCH: ("open_watch",),
    Capability.PROBE: ("open_canary", "probe"),
    Capability.SERVE: ("open_resident", "readiness"),
    Capability.AFTER_RESTORE: ("restore_window",),
}


def proof(platform: Platform) -> list[str]:
    """What `platform` declares and does not provide, one line each (none: every declaration is
    backed by its methods and its repair modes)."""
    missing: list[str] = []
    for capability, methods in PARTS.items():
        if capability not in platform.capabilities:
            continue
        for method in methods:
            if getattr(type(platform), method, None) is getattr(Platform, method):
                missing.append(f"declares {capability.value} but provides no `{method}`")
    if Capability.SERVE in platform.capabilities and Capability.TRIAGE not in platform.capabilities:
        missing.append(f"declares {Capability.SERVE.value} but not {Capability.TRIAGE.value}")
    replays = Mode.REPLAY in platform.executors.modes
    if Capability.REPLAY in platform.capabilities and not replays:
        missing.append(f"declares {Capability.REPLAY.value} but no executor of `rebuild replay`")
    if replays and Capability.REPLAY not in platform.capabilities:
        missing.append(f"has an executor of `rebuild replay` but does not declare {Capability.REPLAY.value}")
    return missing


# a scan's and a repair's knobs: the field, its flag and its default (auditor.scan.options.ScanOptions,
# auditor.rebuild.request.RebuildRequest)
SCAN_KNOBS: dict[str, tuple[str, object]] = {
    "settle": ("--settle", 10.0),
    "sample_window": ("--sample-window", None),
    "confirm": ("--confirm", 0.0),
}
REPAIR_KNOBS: dict[str, tuple[str, object]] = {
    "rate": ("--rate", None),
    "resume": ("--resume", False),
    "break_stale_lock": ("--break-stale-lock", False),
    "prefer_store": ("--prefer-store", False),
}


class Platform(ABC):
    """One platform's knowledge, tied together: its scan, triage, repairs and command lines."""

    name: ClassVar[str]
    title: ClassVar[str]  # how a person names it: "DataHub"
    capabilities: ClassVar[frozenset[Capability]]
    # what to do instead, per capability it lacks (the second line of the refusal)
    instead: ClassVar[dict[Capability, str]] = {}
    # schema v1 of the JSON report kept DataHub's own commands in `repair_datahub` beside
    # `repair_platform`: true for the platform whose commands those are
    fills_repair_datahub: ClassVar[bool] = False
    # why the verdicts rest on time and history when the platform has no change log
    weak_evidence: ClassVar[str | None] = None
    # what a person pastes to triage one entity (the console's prompt)
    paste_hint: ClassVar[str] = "an entity's name or id"
    # which mode of `auditor rebuild` writes which action, and the platform's own tools per action
    executors: ClassVar[Executors]
    renderer: ClassVar[Renderer]
    # its own top-level sections of a scan's report (each written, empty if need be, as a key of
    # the JSON report, in this order; merged across shards by the section's own rule)
    report_sections: ClassVar[Mapping[str, Section]] = {}
    # the scan's and the repair's knobs it honours (every one by default); another one given is
    # refused with `knobs_instead` (flag -> what to do instead) before anything connects
    scan_knobs: ClassVar[frozenset[str]] = frozenset(SCAN_KNOBS)
    repair_knobs: ClassVar[frozenset[str]] = frozenset(REPAIR_KNOBS)
    knobs_instead: ClassVar[dict[str, str]] = {}

    def supports(self, capability: Capability) -> bool:
        return capability in self.capabilities

    def refuse_knobs(self, given: Mapping[str, object], knobs: Mapping[str, tuple[str, object]]) -> None:
        """Refuse (exit 2) each knob set away from its default that this platform does not honour."""
        honoured = self.scan_knobs | self.repair_knobs
        for name, (flag, default) in knobs.items():
            if name not in honoured and given.get(name, default) != default:
                raise ConfigError(
                    f"{flag} is not supported on {self.title}", hint=self.knobs_instead.get(flag)
                )

    def require(self, capability: Capability, flag: str | None = None) -> None:
        """Refuse (a usage error, exit 2) what this platform does not declare; one wording."""
        if capability in self.capabilities:
            return
        what = flag or capability.value
        raise ConfigError(f"{what} is not supported on {self.title}", hint=self.instead.get(capability))

    def require_selection(self, selection: Selection | None, *, aspects_too: bool = False) -> None:
        """Refuse the selection's filters this platform cannot apply."""
        if selection is None:
            return
        checks: list[tuple[Capability, str, object]] = [
            (Capability.URN_PATTERN, "--urn-like", selection.urn_like),
            (Capability.TIME_WINDOW, "--since", selection.since),
            (Capability.TIME_WINDOW, "--until", selection.until),
            (Capability.SHARD_PLAN, "--shard", selection.shard),
        ]
        if aspects_too:
            checks.append((Capability.ASPECT_FILTER, "--aspect", selection.aspects))
        for capability, flag, used in checks:
            if used:
                self.require(capability, flag)

    # the pipelines, as the face calls them

    @abstractmethod
    def scan(
        self,
        settings: Settings,
        selection: Selection,
        options: ScanOptions,
        progress: Progress | None = None,
        *,
        log: Callable[[str], None] | None = None,
    ) -> Report:
        """Compare the truth with the search documents and judge every difference. Read-only.
        A platform loads what only it needs (an entity registry, say) itself."""

    @abstractmethod
    def triage(
        self,
        settings: Settings,
        text: str,
        *,
        entity_types: Sequence[str] = (),
        grace: float | None = None,
        settle: float = 10.0,
    ) -> TriageResult:
        """One entity, boundary by boundary, as pasted by a person. Read-only."""

    @abstractmethod
    def rebuild(self, settings: Settings, request: RebuildRequest) -> RebuildOutcome:
        """Plan a repair and, with `request.apply`, do it and verify it."""

    def restore_window(self, settings: Settings, first: Report) -> RestoreEvidence:
        """After a search restore: how far the index is behind the truth (AFTER_RESTORE)."""
        self.require(Capability.AFTER_RESTORE)
        raise NotImplementedError  # a platform that declares AFTER_RESTORE implements this

    def describe(self, c: Classified) -> str | None:
        """What exactly is wrong with one finding, in the platform's words (None: the shared
        wording of the finding's kind)."""
        return None

    def drill_tables(self) -> tuple[TableSpec, ...]:
        """The tables a restore drill compares row by row (`auditor drill compare --table`)."""
        return ()

    def drill_search_counts(self, search: SearchIndex, prefix: str) -> dict[str, dict[str, int]]:
        """What a restore drill counts of the search cluster: kind -> {name: count} (none here)."""
        return {}

    def open_resident(self, settings: Settings) -> Resident:
        """Warm backends for a resident service (`auditor serve`): opened once, reused."""
        self.require(Capability.TRIAGE)
        raise NotImplementedError  # a platform that declares TRIAGE implements this

    def readiness(self, settings: Settings) -> dict[str, Callable[[], str]]:
        """Each backend's own probe for `/readyz`: name -> a function returning its version,
        raising when it is down (a fresh connection each)."""
        return {}

    def check_name(self, text: str) -> None:
        """Refuse, before anything heavy is opened, what cannot name one of this platform's
        entities (a ConfigError); the default takes anything."""
        return None

    # what only some platforms offer: each refused by its capability where it is missing

    def plan_shards(self, settings: Settings, n: int, entity_types: tuple[str, ...] = ()) -> ShardPlan:
        """N urn ranges of about equal rows (SHARD_PLAN)."""
        self.require(Capability.SHARD_PLAN, "--plan-shards")
        raise NotImplementedError  # a platform that declares SHARD_PLAN implements this

    def holders(self, settings: Settings, urns: Sequence[str]) -> dict[str, list[str]]:
        """A federation's stores that hold rows of each urn now (FEDERATION: its repair)."""
        self.require(Capability.FEDERATION, "--store")
        raise NotImplementedError  # a platform that declares FEDERATION implements this

    def open_watch(
        self, settings: Settings, config: WatchConfig, group: str, topics: Sequence[str], start: str
    ) -> AbstractContextManager[Watching]:
        """A watch of the change log in a consumer group of its own (WATCH)."""
        self.require(Capability.WATCH)
        raise NotImplementedError  # a platform that declares WATCH implements this

    def open_canary(
        self, settings: Settings, gms_url: str | None, gms_token: str | None, topic: str | None
    ) -> AbstractContextManager[Canary]:
        """The probe's writer of its canary entity (PROBE)."""
        self.require(Capability.PROBE)
        raise NotImplementedError  # a platform that declares PROBE implements this

    def probe(
        self,
        settings: Settings,
        canary: Canary,
        slo: float,
        timeout: float,
        interval: float,
        topic: str | None,
    ) -> ProbeResult:
        """Write the canary and time until search shows it (PROBE)."""
        self.require(Capability.PROBE)
        raise NotImplementedError  # a platform that declares PROBE implements this

    def schema_table(self, entity_type: str | None) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        """`auditor registry`: the entity types the platform's own schemas define (or one type's
        aspects), as a header and rows."""
        raise ConfigError(f"{self.name}: no schema registry to list")

    def config_from_environment(self, environ: Mapping[str, str]) -> tuple[str, list[str]]:
        """`auditor config init`: a commented TOML configuration from the platform's own
        environment variables, and the lines that say where each value came from."""
        raise ConfigError(f"{self.name}: no environment to read a configuration from")

    # repairs as data (auditor.core.repairs): what each mode of `auditor rebuild` writes, and each
    # action with the platform's own tools; the reports render both for every platform alike

    @property
    def flag(self) -> str:
        """How a command line names this platform (the default platform needs nothing)."""
        return f" --platform {self.name}"

    def native_commands(
        self, repairs: RepairPlan, *, group: str, until: datetime | None, per_urn: int
    ) -> list[str]:
        """The plan with the platform's own tools: each action's command once, at most
        `2 * per_urn` of them (a platform with cheaper forms for many urns says so here)."""
        lines = (self.renderer.render(a, group=group, until=until) for a in repairs.actions)
        return list(dict.fromkeys(lines))[: per_urn * 2]
