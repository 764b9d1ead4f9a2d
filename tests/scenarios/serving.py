"""`auditor serve` as a process for the tests: started on a free port, waited for, stopped with
SIGTERM; what it said on stderr kept for the test to read."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "auditor.cli", "serve", "--port", str(self.port), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"auditor serve exited {self.proc.returncode}: {self.said()}")
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"auditor serve did not come up: {self.said()}")

    def said(self) -> str:
        return self.log.read_text(errors="replace")

    def get(self, path: str, headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, str]:
        request = urllib.request.Request(self.base + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def json(self, path: str, timeout: float = 30) -> tuple[int, Any]:
        status, body = self.get(path, {"Accept": "application/json"}, timeout)
        return status, json.loads(body)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        assert self.proc.stdout is not None
        self.stdout = self.proc.stdout.read()
        self.proc.stdout.close()
        return int(self.proc.returncode)


def clean_env(**over: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    env.update(over)
    return env
