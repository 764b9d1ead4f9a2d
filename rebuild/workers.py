"""`--workers K`: a repair's shards run as K processes on this machine, each its own shard i/N.

Each shard is a whole repair of its urn range (its own checkpoint, its own lock, its own
verification), started as a child process so that the work spreads over the machine's cores
(one Python process is bound by its own CPU: docs/benchmark.md). The children's JSON outcomes
are written to files and merged by `reports/rebuild_merge.py`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.exit_codes import ExitCode

# an exit code a child could not have chosen (killed by a signal, or a crash): "could not complete"
INCOMPLETE = ExitCode.INCOMPLETE


@dataclass
class ShardRun:
    """One child: its shard, its process, where its outcome and its stderr go."""

    shard: int
    shards: int
    outcome: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None
    exit_code: int | None = None

    @property
    def label(self) -> str:
        return f"{self.shard}/{self.shards}"

    def result(self) -> dict[str, Any]:
        """The child's outcome as it wrote it, or what is known of a child that wrote none."""
        code = self.exit_code if self.exit_code is not None and self.exit_code >= 0 else INCOMPLETE
        try:
            data: dict[str, Any] = json.loads(self.outcome.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            lines = (
                self.log.read_text(encoding="utf-8", errors="replace").splitlines()
                if self.log.exists()
                else []
            )
            errors = [line for line in lines if line.startswith("error:")]
            why = errors[-1] if errors else (lines[-1] if lines else "")
            if self.exit_code is not None and self.exit_code < 0:
                why = f"killed by signal {-self.exit_code}" + (f"; {why}" if why else "")
            return {"shard": self.label, "exit_code": code, "error": why or f"exit {code}, no outcome"}
        data["shard"], data["exit_code"] = self.label, code
        return data


def run_shards(
    command: Callable[[int, Path], Sequence[str]],
    shards: int,
    workers: int,
    directory: Path,
    env: dict[str, str] | None = None,
    poll: float = 0.2,
    started: Callable[[ShardRun], None] | None = None,
    stdin: Callable[[int], bytes] | None = None,
) -> list[dict[str, Any]]:
    """Every shard 0..shards-1, `workers` at a time, each `command(i, outcome_path)` as a child
    process (`stdin(i)`, when given, written to its standard input); their outcomes in shard order
    (a child that wrote none is named with its exit code and its last error line)."""
    directory.mkdir(parents=True, exist_ok=True)
    runs = [
        ShardRun(
            i,
            shards,
            directory / f"rebuild-outcome-shard{i}of{shards}.json",
            directory / f"rebuild-outcome-shard{i}of{shards}.log",
        )
        for i in range(shards)
    ]
    for run in runs:  # a previous run's outcome is not this one's
        run.outcome.unlink(missing_ok=True)
    waiting, running = list(runs), list[ShardRun]()
    while waiting or running:
        while waiting and len(running) < max(1, workers):
            run = waiting.pop(0)
            with open(run.log, "wb") as log:
                run.process = subprocess.Popen(
                    list(command(run.shard, run.outcome)),
                    stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    env=env,
                )
            if stdin is not None and run.process.stdin is not None:
                try:
                    run.process.stdin.write(stdin(run.shard))
                    run.process.stdin.close()
                except BrokenPipeError:  # the child died first: its exit code and log say why
                    pass
            running.append(run)
            if started is not None:
                started(run)
        for run in list(running):
            assert run.process is not None
            code = run.process.poll()
            if code is not None:
                run.exit_code = code
                running.remove(run)
        if running:
            time.sleep(poll)
    return [run.result() for run in runs]
