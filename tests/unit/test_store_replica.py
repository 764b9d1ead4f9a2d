"""Whether the store is a replica and how far behind (auditor/backends/replica.py): each server's
answers, as the drivers return them; a server that cannot say is unknown, never a failed scan."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import pytest

from auditor.backends.replica import Replica, of_stores, replica_state


class Refused(Exception):
    pass


class Result:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def one(self) -> tuple[Any, ...]:
        return tuple(self.rows[0].values())

    def mappings(self) -> list[dict[str, Any]]:
        return self.rows


def server(answers: dict[str, list[dict[str, Any]] | Exception]):
    """A connection factory answering each statement as given (an exception: raised)."""

    class Conn:
        def execute(self, statement: str) -> Result:
            answer = answers[statement.split("(")[0].split(",")[0].strip()]
            if isinstance(answer, Exception):
                raise answer
            return Result(answer)

    @contextmanager
    def connect():
        yield Conn()

    return connect


def ask(answers: dict[str, Any], postgres: bool = False) -> Replica:
    return replica_state(server(answers), str, (Refused,), postgres)


PG = "SELECT pg_is_in_recovery"


@pytest.mark.parametrize(
    ("answers", "postgres", "said", "lag"),
    [
        ({PG: [{"r": False, "lag": None}]}, True, "primary (not a replica)", None),
        ({PG: [{"r": True, "lag": 42.4}]}, True, "replica, 42s behind its primary", 42.4),
        ({PG: [{"r": True, "lag": None}]}, True, "replica, lag unknown: nothing replayed yet", None),
        ({PG: Refused("permission denied")}, True, "unknown: permission denied", None),
        ({"SHOW REPLICA STATUS": []}, False, "primary (not a replica)", None),
        ({"SHOW REPLICA STATUS": [{"Seconds_Behind_Source": 7}]}, False, "replica, 7s behind its primary", 7),
        (  # MariaDB before 10.5.1: only the older statement; its column
            {"SHOW REPLICA STATUS": Refused("syntax"), "SHOW SLAVE STATUS": [{"Seconds_Behind_Master": 90}]},
            False,
            "replica, 90s behind its primary",
            90,
        ),
        (
            {"SHOW REPLICA STATUS": [{"Seconds_Behind_Master": None}]},
            False,
            "replica, lag unknown: its SQL thread is not running",
            None,
        ),
        (  # a user without REPLICA MONITOR / REPLICATION CLIENT
            {
                "SHOW REPLICA STATUS": Refused("Access denied; you need the REPLICA MONITOR privilege"),
                "SHOW SLAVE STATUS": Refused("Access denied; you need the SLAVE MONITOR privilege"),
            },
            False,
            "unknown: Access denied; you need the SLAVE MONITOR privilege",
            None,
        ),
    ],
)
def test_the_replica_state_as_each_server_says_it(
    answers: dict[str, Any], postgres: bool, said: str, lag: float | None
) -> None:
    state = ask(answers, postgres)
    assert state.said() == said and state.lag == lag


def test_a_federation_is_as_far_behind_as_its_laggiest_store() -> None:
    primary, late, later = Replica(False), Replica(True, 12.0), Replica(True, 90.0)
    assert of_stores([("a", primary), ("b", Replica(False))]) == Replica(False)
    mixed = of_stores([("a", primary), ("b", late), ("c", later)])
    assert mixed.lag == 90.0 and "b: replica, 12s behind its primary" in mixed.said()
    assert of_stores([("a", late), ("b", Replica(True))]).lag is None  # one replica's lag unknown
    assert of_stores([("a", primary), ("b", Replica(None, why="denied"))]).said() == (
        "unknown: a: primary (not a replica); b: unknown: denied"
    )
