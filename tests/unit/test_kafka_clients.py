"""Kafka clients left open are closed before the interpreter finalizes (backends/kafka_clients.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from auditor.backends import kafka_clients


class Owner:
    def __init__(self, fail: bool = False) -> None:
        self.closed = 0
        self.fail = fail

    def close(self) -> None:
        self.closed += 1
        if self.fail:
            raise RuntimeError("the broker is gone")


def test_close_all_closes_what_is_open_once_and_goes_on_past_a_failure() -> None:
    kept, failing, closed_by_user = Owner(), Owner(fail=True), Owner()
    for owner in (kept, failing, closed_by_user):
        kafka_clients.track(owner)
    kafka_clients.untrack(closed_by_user)
    assert kafka_clients.close_all() == 2
    assert (kept.closed, failing.closed, closed_by_user.closed) == (1, 1, 0)
    assert kafka_clients.close_all() == 0  # nothing tracked twice


def test_a_collected_owner_drops_out() -> None:
    kafka_clients.track(Owner())  # no reference left: the weak set forgets it
    assert kafka_clients.close_all() == 0


def test_an_event_log_left_open_in_a_cycle_is_closed_before_the_interpreter_finalizes() -> None:
    """Left to the collector's last pass, its clients' destroy would run into a finalizing
    interpreter (the SIGSEGV after a broker restart); the exit hook closes it while it is whole.
    The check is registered first, so it runs after the hook (atexit runs last-in, first-out)."""
    program = textwrap.dedent(
        """
        import atexit, gc
        gc.disable()  # the cycle below is never collected before the exit
        held = []
        def check():
            log = held[0]
            print("closed" if log.consumer is None and log.admin is None else "open", flush=True)
        atexit.register(check)
        from auditor.platforms.datahub.backends.events import EventLog
        log = EventLog({"bootstrap.servers": "127.0.0.1:1"}, None, timeout=0.5)
        log.me = log  # a cycle, as a traceback or a callback makes one
        held.append(log)
        """
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "closed", run.stdout + run.stderr[-2000:]


def test_an_event_log_that_fails_to_open_destroys_the_clients_it_made() -> None:
    """A registry that cannot be read fails the constructor after both clients exist."""
    program = textwrap.dedent(
        """
        from auditor.backends import kafka_clients
        from auditor.platforms.datahub.backends import events

        made = []
        class Failing(events.EventLog):
            def _init_decoding(self, registry_url, timeout):
                made.append(self)
                raise ValueError("registry unreadable")
        try:
            Failing({"bootstrap.servers": "127.0.0.1:1"}, None, timeout=0.5)
        except ValueError:
            pass
        log = made[0]
        print(log.consumer is None, log.admin is None, kafka_clients.close_all(), flush=True)
        """
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["True", "True", "0"], run.stdout + run.stderr[-2000:]
