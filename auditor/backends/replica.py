"""Whether a store's database is a replica, and how far behind its primary it is.

A read-only tool is often pointed at a replica. One that lags holds fewer writes than the search
index (which the primary's consumer fed): a document newer than its row is then on its way, not
wrong, as long as it is younger than the lag. Asked once per scan, never failing it: a server
that cannot say (a user without the privilege to read the replica status) is "unknown".

- PostgreSQL: `pg_is_in_recovery()`, and `now() - pg_last_xact_replay_timestamp()`: the age of
  the last transaction replayed (an idle primary makes it grow: an upper bound of the lag).
- MySQL / MariaDB: `SHOW REPLICA STATUS` (MySQL 8.0.22+, MariaDB 10.5.1+), else `SHOW SLAVE
  STATUS`: no row is a primary; `Seconds_Behind_Source` / `Seconds_Behind_Master` the lag (NULL
  while its SQL thread is stopped: a replica whose lag is unknown). Needs REPLICATION CLIENT
  (MySQL) or REPLICA MONITOR / SLAVE MONITOR (MariaDB).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from auditor.core.model import Report

POSTGRES = "SELECT pg_is_in_recovery(), EXTRACT(EPOCH FROM (now() - pg_last_xact_replay_timestamp()))"
MYSQL = ("SHOW REPLICA STATUS", "SHOW SLAVE STATUS")
LAG_COLUMNS = ("Seconds_Behind_Source", "Seconds_Behind_Master")


@dataclass(frozen=True)
class Replica:
    """What the database said of itself: a replica (True), a primary (False) or unknown (None)."""

    replica: bool | None
    lag_seconds: float | None = None  # a replica's lag (None: a primary, or not known)
    why: str = ""  # why it is unknown

    @property
    def lag(self) -> float | None:
        """How far the store is behind, when it is a replica that says so."""
        return self.lag_seconds if self.replica else None

    def said(self) -> str:
        """The report's words (its sources: `store_replica`)."""
        if self.replica is False:
            return "primary (not a replica)"
        if self.replica is None:
            return f"unknown: {self.why}" if self.why else "unknown"
        if self.lag_seconds is None:
            return "replica, lag unknown" + (f": {self.why}" if self.why else "")
        said = f"replica, {self.lag_seconds:.0f}s behind its primary"
        return f"{said} ({self.why})" if self.why else said


def replica_state(
    connect: Callable[[], Any], sql: Callable[[str], Any], errors: tuple[type[Exception], ...], postgres: bool
) -> Replica:
    """Ask the database (`connect()`: a context manager giving a connection; `sql`: a statement as
    its driver takes it; `errors`: what its failures raise)."""
    if postgres:
        try:
            with connect() as conn:
                recovering, lag = conn.execute(sql(POSTGRES)).one()
        except errors as exc:
            return Replica(None, why=_first_line(exc))
        if not recovering:
            return Replica(False)
        return Replica(
            True, float(lag) if lag is not None else None, "" if lag is not None else "nothing replayed yet"
        )
    why = ""
    for statement in MYSQL:
        try:
            with connect() as conn:
                rows = list(conn.execute(sql(statement)).mappings())
        except errors as exc:  # an older server's syntax, or no privilege: the next, then unknown
            why = _first_line(exc)
            continue
        if not rows:
            return Replica(False)
        return _mysql_lag(rows[0])
    return Replica(None, why=why)


def of_stores(states: list[tuple[str, Replica]]) -> Replica:
    """A federation's: a replica if any store is, as far behind as its laggiest store (its lag
    unknown if any replica's is), each store named in what it says."""
    said = "; ".join(f"{name}: {s.said()}" for name, s in states)
    replicas = [s.lag_seconds for _, s in states if s.replica]
    if replicas:
        known = [lag for lag in replicas if lag is not None]
        return Replica(True, max(known) if len(known) == len(replicas) else None, said)
    if any(s.replica is None for _, s in states):
        return Replica(None, why=said)
    return Replica(False)


def note(report: Report, state: Replica) -> float | None:
    """The report's word on it (`sources.store_replica`; a replica is a warning too): what the
    index holds beyond the store, younger than the lag, is in flight. The lag in seconds when the
    store is a replica that says it."""
    report.sources["store_replica"] = state.said()
    if state.replica:
        report.warnings.append(
            f"the store is a database replica ({state.said()}): what the index holds beyond it, "
            "younger than the lag, is in flight; older is the store behind (store_behind)"
        )
    return state.lag


def _mysql_lag(row: Any) -> Replica:
    for column in LAG_COLUMNS:
        if column in row:
            value = row[column]
            if value is None:
                return Replica(True, None, "its SQL thread is not running")
            return Replica(True, float(value))
    return Replica(True, None, "the status names no lag")


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__
