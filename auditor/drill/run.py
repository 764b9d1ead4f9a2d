"""A restore drill from start to verdict: versions, the tables' row diff, the counts, thresholds."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from auditor import platforms
from auditor.backends.connect import kafka_config, open_search
from auditor.backends.search import SearchIndex
from auditor.core.drill import CountDiff, DrillResult, Thresholds
from auditor.drill.bisect import BisectOptions, diff_table
from auditor.drill.merge import merge_table
from auditor.drill.side import Side
from auditor.drill.spec import ColumnKind, TableSpec
from auditor.drill.versions import kafka_info
from auditor.errors import BackendUnavailable, ConfigError
from auditor.settings.model import Settings


@dataclass
class DrillOptions:
    tables: tuple[TableSpec, ...]
    thresholds: Thresholds = field(default_factory=Thresholds)
    bisect: BisectOptions = field(default_factory=BisectOptions)
    workers: int = 2  # connections working at once per database
    counts: bool = True  # entity / aspect / lineage counts from the aspect table


def drill_platform(source: Settings, target: Settings) -> str:
    """The platform a drill compares (its tables, its search counts): both sides' (`--platform`,
    or each side's configuration file; DataHub by default). Two different ones are refused."""
    if source.platform != target.platform:
        raise ConfigError(
            f"the source is {source.platform} and the target {target.platform}: a drill compares "
            "two environments of one platform",
            hint="name the same platform in both files (platform = ...), or give --platform",
        )
    return source.platform


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Drill:
    """Runs a drill; `result` holds what is known so far (also when a server fails mid-run)."""

    def __init__(
        self,
        source: Settings,
        target: Settings,
        options: DrillOptions,
        echo: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.settings = {"source": source, "target": target}
        self.options = options
        self.echo = echo
        self.result = DrillResult(
            source=source.describe().get("store", "?"),
            target=target.describe().get("store", "?"),
            started=_now(),
            thresholds=options.thresholds,
        )
        self.sides: dict[str, Side] = {}
        self.searches: dict[str, SearchIndex] = {}

    def say(self, line: str) -> None:
        self.result.log.append(f"{_now()} {line}")
        self.echo(line)

    def run(self) -> DrillResult:
        try:
            self._run()
        except BackendUnavailable as exc:
            self.say(f"INCOMPLETE: {exc}")
            raise
        finally:
            self.result.finished = _now()
            for side in self.sides.values():
                side.close()
            for search in self.searches.values():
                search.close()
        return self.result

    def _run(self) -> None:
        self.say(f"drill: source {self.result.source}, target {self.result.target}")
        for role, s in self.settings.items():
            if s.store_url is None:
                raise ConfigError(
                    f"{role}: no metadata store configured",
                    hint="a store URL or a --config file with [store] url",
                )
            self.sides[role] = Side(role, s.store_url.get_secret_value(), self.options.workers)
        self._versions()
        source, target = self.sides["source"], self.sides["target"]
        for spec in self.options.tables:
            estimate = max(source.estimated_rows(spec), target.estimated_rows(spec), 1)
            divisors = self._divisors(spec)
            self.say(f"{spec.name}: comparing rows (about {estimate} rows per side)")
            if not spec.cross_engine and source.postgres != target.postgres:
                # jsonb's normalised text vs the text as written: no common text inside the
                # databases, so the JSON is compared by value outside them
                diffs, stats = merge_table(spec, source, target, divisors, say=self.say)
            else:
                diffs, stats = diff_table(
                    spec, source, target, divisors, estimate, self.options.bisect, self.say
                )
            self.result.rows.extend(diffs)
            self.result.tables.append(stats)
            self.result.counts.append(CountDiff("rows", spec.name, stats.source_rows, stats.target_rows))
            self.say(
                f"{spec.name}: {stats.source_rows} / {stats.target_rows} rows, {len(diffs)} differ "
                f"({stats.segments} segments, {stats.leaf_rows} leaf rows, {stats.seconds:.2f} s)"
            )
        for spec in self.options.tables:
            if self.options.counts and spec.counts:
                self._table_counts(spec)
        self._search_counts()
        self.say(f"result: {self.result.verdict}")

    def _versions(self) -> None:
        for role, side in self.sides.items():
            found: dict[str, Any] = {"database": side.version(), "database_url": side.description}
            s = self.settings[role]
            if s.search_url:
                self.searches[role] = open_search(s)
                found["search"] = self.searches[role].version()
                found["search_url"] = self.searches[role].description
            if s.kafka_bootstrap:
                found["kafka"] = kafka_info(kafka_config(s))
            self.result.versions[role] = found
            self.say(
                f"{role}: {found['database'].split(' on ')[0]}"
                + (f"; {found['search']}" if "search" in found else "")
            )

    def _divisors(self, spec: TableSpec) -> dict[str, int]:
        """Per time column, the divisor down to the precision both sides keep."""
        out = {}
        for column in spec.columns:
            if column.kind is ColumnKind.TIME:
                digits = [side.time_precision(spec, column.name) for side in self.sides.values()]
                if len(set(digits)) > 1:
                    self.result.warnings.append(
                        f"{spec.name}.{column.name} keeps {digits[0]} fractional digits on the source and "
                        f"{digits[1]} on the target: compared at {min(digits)}"
                    )
                out[column.name] = 10 ** (6 - min(digits))
        return out

    def _table_counts(self, spec: TableSpec) -> None:
        started, table = time.monotonic(), spec.name
        pending = [
            (kind, {role: side.submit(fn, side, table) for role, side in self.sides.items()})
            for kind, fn in spec.counts
        ]
        for kind, futures in pending:
            try:
                found = futures["source"].result(), futures["target"].result()
            except BackendUnavailable as exc:  # PostgreSQL refuses the whole count over one bad row
                if kind != "lineage" or "json" not in str(exc).lower():
                    raise
                self.result.warnings.append(f"lineage counts skipped: a row is not JSON ({exc})")
                continue
            self._add_counts(kind, *found)
        kinds = ", ".join(kind for kind, _ in spec.counts)
        self.say(f"{table}: {kinds} counts in {time.monotonic() - started:.2f} s")

    def _search_counts(self) -> None:
        if len(self.searches) == 1:
            only = next(iter(self.searches))
            self.result.warnings.append(f"search counts skipped: only the {only} has a search URL")
        if len(self.searches) != 2:
            return
        found: dict[str, dict[str, dict[str, int]]] = {}
        for role, search in self.searches.items():
            s = self.settings[role]
            found[role] = platforms.get(s.platform).drill_search_counts(search, s.index_prefix)
        if not found["source"] and not found["target"]:
            return
        for kind in sorted(set(found["source"]) | set(found["target"])):
            self._add_counts(kind, found["source"].get(kind, {}), found["target"].get(kind, {}))
        self.say("search: document counts per index and edges per relationshipType")

    def _add_counts(self, kind: str, a: dict[str, int], b: dict[str, int]) -> None:
        for name in sorted(set(a) | set(b)):
            self.result.counts.append(CountDiff(kind, name, a.get(name), b.get(name)))
