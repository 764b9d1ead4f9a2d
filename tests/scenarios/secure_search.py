"""A private Elasticsearch node with its security on (x-pack security: users, roles, TLS on HTTP),
started from the stack's distribution beside the shared node, for the least-privilege tests.

HTTP is served over TLS with the certificate `sandbox/stack` made for the databases (its CA is
`Endpoints.tls_ca`); the roles and users are files (roles.yml, the file realm), a super user among
them seeds the world."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from secure_kafka import free_ports

from sandbox.endpoints import Endpoints, stack_home

STACK_HOME = stack_home()
ES_HOME = STACK_HOME / "dist" / "elasticsearch-9.2.0"
ES_JAVA = Path(os.environ.get("AUDITOR_STACK_ES_JAVA_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64")
SVC_USER = os.environ.get("AUDITOR_STACK_USER") or "auditor-stack"
START_SECONDS = 180
# the client JIT only (as secure_kafka.py's broker): a node starts in about 60% of the time on two
# loaded cores (measured: 85/51 s -> 41/31 s), and a test's handful of requests never needs C2's code
FAST_START = "-XX:TieredStopAtLevel=1\n"


def _json(body: bytes) -> Any:
    """A response's JSON (its text when it is not JSON: an error page)."""
    try:
        return json.loads(body or b"null")
    except ValueError:
        return body.decode("utf-8", "replace")


def pbkdf2_hash(password: str) -> str:
    """A `{PBKDF2}` hash of `password` the file realm verifies (PBKDF2 with HMAC-SHA512, 10,000
    rounds, a 32-byte salt and key, base64: `{PBKDF2}<rounds>$<salt>$<key>`)."""
    salt = os.urandom(32)
    key = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 10_000, dklen=32)
    return f"{{PBKDF2}}10000${base64.b64encode(salt).decode()}${base64.b64encode(key).decode()}"


def write_file_realm(conf: Path, accounts: list[tuple[str, str, str]]) -> None:
    """The file realm's `users` and `users_roles` for these (user, password, role): written here,
    not by `elasticsearch-users useradd`, which starts a JVM per user (seconds each on a loaded
    machine, for files the node reads the same)."""
    (conf / "users").write_text(
        "".join(f"{user}:{pbkdf2_hash(password)}\n" for user, password, _ in accounts)
    )
    members: dict[str, list[str]] = {}
    for user, _, role in accounts:
        members.setdefault(role, []).append(user)
    (conf / "users_roles").write_text(
        "".join(f"{role}:{','.join(users)}\n" for role, users in members.items())
    )


class SecureElasticsearch:
    """`with SecureElasticsearch(roles, users) as es:` a node at `es.url` (https).

    `roles`: role name -> (index name patterns, index privileges, cluster privileges), written to
    roles.yml; `users`: user name -> role, in the file realm (passwords in `es.passwords`), with a
    super user `es.admin` beside them. (The native realm needs the security index, whose mapping
    needs the analysis-common module the stack's distribution lacks: files it is.)"""

    name = "secure-es"

    def __init__(
        self, roles: dict[str, tuple[list[str], list[str], list[str]]], users: dict[str, str]
    ) -> None:
        self.dir = STACK_HOME / "run" / f"{self.name}-{uuid.uuid4().hex[:8]}"  # the service user can reach it
        self.port, self.transport = free_ports(2)
        self.url = f"https://127.0.0.1:{self.port}"
        self.admin = ("admin", f"admin-{uuid.uuid4().hex}")
        self.roles = roles
        self.passwords = {name: f"{name}-{uuid.uuid4().hex}" for name in users}
        self.users = users
        self.ca = Endpoints.from_env().tls_ca
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> SecureElasticsearch:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def home(self) -> Path:
        """The distribution the node runs from."""
        return ES_HOME

    def security_settings(self) -> list[str]:
        """elasticsearch.yml's security lines: TLS on HTTP with the stack's certificate, the file realm."""
        return [
            "xpack.security.enabled: true",
            "xpack.security.http.ssl.enabled: true",
            "xpack.security.http.ssl.certificate: server.pem",
            "xpack.security.http.ssl.key: server.key",
            "xpack.security.transport.ssl.enabled: false",
            "xpack.license.self_generated.type: basic",
        ]

    def prepare(self, conf: Path) -> None:
        """More files in the node's config folder (a subclass's realms)."""

    def _start(self) -> None:
        home = self.home()
        assert (home / "modules" / "x-pack-security").is_dir(), f"no x-pack security in {home}"
        conf = self.dir / "config"
        shutil.copytree(home / "config", conf)
        for name in ("server.pem", "server.key", "ca.pem"):
            shutil.copy(STACK_HOME / "run" / "tls" / name, conf / name)
        self.prepare(conf)
        (conf / "jvm.options.d").mkdir(exist_ok=True)
        (conf / "jvm.options.d" / "heap.options").write_text("-Xms384m\n-Xmx384m\n" + FAST_START)
        jvm = (conf / "jvm.options").read_text().splitlines()
        keep = [line for line in jvm if not line.startswith(("-Xm", "-Xlog:gc", "8-:-Xlog"))]
        (conf / "jvm.options").write_text("\n".join(keep) + "\n")
        (conf / "elasticsearch.yml").write_text(
            "\n".join(
                [
                    f"cluster.name: auditor-{self.name}",
                    f"node.name: {self.name}",
                    "discovery.type: single-node",
                    "network.host: 127.0.0.1",
                    f"http.port: {self.port}",
                    f"transport.port: {self.transport}",
                    f"path.data: {self.dir / 'data'}",
                    f"path.logs: {self.dir / 'logs'}",
                    "cluster.routing.allocation.disk.threshold_enabled: false",
                    *self.security_settings(),
                    "",
                ]
            )
        )
        env = {
            **os.environ,
            "ES_JAVA_HOME": str(ES_JAVA),
            "JAVA_HOME": str(ES_JAVA),
            "ES_PATH_CONF": str(conf),
            "ES_TMPDIR": str(self.dir / "tmp"),
        }
        (self.dir / "tmp").mkdir()
        (conf / "roles.yml").write_text(
            "".join(
                f"{role}:\n  cluster: {json.dumps(cluster)}\n  indices:\n"
                f"    - names: {json.dumps(names)}\n      privileges: {json.dumps(privileges)}\n"
                for role, (names, privileges, cluster) in self.roles.items()
            )
        )
        accounts = [(*self.admin, "superuser")] + [(u, self.passwords[u], r) for u, r in self.users.items()]
        write_file_realm(conf, accounts)
        subprocess.run(["chown", "-R", f"{SVC_USER}:{SVC_USER}", str(self.dir)], check=True)
        log = open(self.dir / "server.log", "wb")  # noqa: SIM115 (lives as long as the node)
        self.process = subprocess.Popen(
            ["setpriv", f"--reuid={SVC_USER}", f"--regid={SVC_USER}", "--init-groups", "--",
             str(home / "bin" / "elasticsearch")],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.tail()}")
            try:
                if self.request("GET", "/_cluster/health?wait_for_status=yellow&timeout=2s")[0] == 200:
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(1)
        raise RuntimeError(f"{self.name} not ready in {START_SECONDS}s: {self.tail()}")

    def tail(self) -> str:
        path = self.dir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        auth: tuple[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One HTTPS request (the CA verified), as `auth` (default: the super user) unless the
        headers carry their own Authorization."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if "Authorization" not in (headers or {}):
            user, password = auth or self.admin
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            req.add_header("Authorization", f"Basic {basic}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        req.add_header("Content-Type", "application/json")
        context = ssl.create_default_context(cafile=self.ca)
        try:
            with urllib.request.urlopen(req, timeout=30, context=context) as r:
                return r.status, _json(r.read())
        except urllib.error.HTTPError as e:
            return e.code, _json(e.read())

    def stop(self) -> None:
        if self.process and self.process.poll() is None:  # the launcher and the server it forked
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)
