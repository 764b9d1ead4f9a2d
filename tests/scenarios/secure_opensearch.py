"""A private OpenSearch 2.19.4 node with the OpenSearch Security plugin (Maven Central's
`org.opensearch.plugin:opensearch-security:2.19.4.0`): internal users and roles, HTTPS with the
certificate `sandbox/stack` made for the databases (its CA is `Endpoints.tls_ca`), basic auth.
Amazon OpenSearch Service's fine-grained access control with an internal user is this plugin.

The plugin is installed once into a copy of the stack's OpenSearch home
(`<stack home>/dist/opensearch-2.19.4-security`, under a lock: test workers share it), with its
demo configuration (transport certificates, the security index initialised at start, an admin
user). Each node then runs from its own config folder and data, on ports of its own."""

from __future__ import annotations

import base64
import fcntl
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
from secure_search import FAST_START

from sandbox.endpoints import Endpoints, stack_home

STACK_HOME = stack_home()
PLAIN_HOME = STACK_HOME / "dist" / "opensearch-2.19.4"
HOME = STACK_HOME / "dist" / "opensearch-2.19.4-security"
PLUGIN = ("org.opensearch.plugin", "opensearch-security", "2.19.4.0")
ADMIN_PASSWORD = "Quartz-Lantern-Ferry-42!"  # the demo admin of a localhost test node, random ports
SVC_USER = os.environ.get("AUDITOR_STACK_USER") or "auditor-stack"
START_SECONDS = 180


def os_java() -> str:
    for candidate in (os.environ.get("AUDITOR_STACK_OS_JAVA_HOME"), "/usr/lib/jvm/java-17-openjdk-amd64"):
        if candidate and (Path(candidate) / "bin" / "java").exists():
            return candidate
    raise RuntimeError("OpenSearch 2.19 needs Java 17 (set AUDITOR_STACK_OS_JAVA_HOME)")


def plugin_zip() -> Path:
    group, artifact, version = PLUGIN
    repo = Path(os.environ.get("M2_REPO") or Path.home() / ".m2" / "repository")
    path = repo / group.replace(".", "/") / artifact / version / f"{artifact}-{version}.zip"
    if not path.exists():
        artifact_id = f"-Dartifact={group}:{artifact}:{version}:zip"
        fetch = ["mvn", "-q", "-B", f"-Dmaven.repo.local={repo}", "dependency:get", "-Dtransitive=false"]
        fetch.append(artifact_id)
        subprocess.run(fetch, check=True, capture_output=True, timeout=600)
    return path


def security_home() -> Path:
    """The OpenSearch home with the security plugin and its demo configuration (made once)."""
    HOME.parent.mkdir(parents=True, exist_ok=True)
    with open(HOME.parent / ".opensearch-security.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (HOME / ".auditor-security-complete").exists():
            return HOME
        building = HOME.with_name(HOME.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        shutil.copytree(PLAIN_HOME, building, symlinks=True)
        java = {**os.environ, "OPENSEARCH_JAVA_HOME": os_java(), "JAVA_HOME": os_java()}
        subprocess.run([str(building / "bin" / "opensearch-plugin"), "install", "-b", f"file://{plugin_zip()}"],
                       env=java, check=True, capture_output=True, timeout=300)  # fmt: skip
        tools = building / "plugins" / "opensearch-security" / "tools"
        for script in tools.glob("*.sh"):
            script.chmod(0o755)
        subprocess.run(["bash", str(tools / "install_demo_configuration.sh"), "-y", "-i", "-s"],
                       env={**java, "OPENSEARCH_INITIAL_ADMIN_PASSWORD": ADMIN_PASSWORD},
                       check=True, capture_output=True, timeout=300)  # fmt: skip
        shutil.rmtree(HOME, ignore_errors=True)
        building.rename(HOME)
        (HOME / ".auditor-security-complete").touch()
        return HOME


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null")
    except ValueError:
        return body.decode("utf-8", "replace")


class SecureOpenSearch:
    """`with SecureOpenSearch() as node:` at `node.url` (https, the stack's CA), admin in `node.admin`."""

    def __init__(self) -> None:
        self.dir = STACK_HOME / "run" / f"secure-os-{uuid.uuid4().hex[:8]}"
        self.port, self.transport = free_ports(2)
        self.url = f"https://127.0.0.1:{self.port}"
        self.admin = ("admin", ADMIN_PASSWORD)
        self.ca = Endpoints.from_env().tls_ca
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> SecureOpenSearch:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self) -> None:
        home = security_home()
        conf = self.dir / "config"
        shutil.copytree(home / "config", conf)
        for name in ("server.pem", "server.key", "ca.pem"):
            shutil.copy(STACK_HOME / "run" / "tls" / name, conf / name)
        (conf / "jvm.options.d").mkdir(exist_ok=True)
        (conf / "jvm.options.d" / "heap.options").write_text("-Xms384m\n-Xmx384m\n" + FAST_START)
        jvm = (conf / "jvm.options").read_text().splitlines()
        keep = [line for line in jvm if not line.startswith("-Xm") and "-Xlog" not in line]  # no gc log
        (conf / "jvm.options").write_text("\n".join(keep) + "\n")
        settings = (conf / "opensearch.yml").read_text()
        # HTTPS with the stack's certificate (the demo's stays on the transport layer)
        for key, value in (("pemcert_filepath", "server.pem"), ("pemkey_filepath", "server.key"),
                           ("pemtrustedcas_filepath", "ca.pem")):  # fmt: skip
            settings = settings.replace(
                f"plugins.security.ssl.http.{key}: ", f"# plugins.security.ssl.http.{key}: "
            )
            settings += f"\nplugins.security.ssl.http.{key}: {value}"
        settings += "\n" + "\n".join(
            [
                "cluster.name: auditor-secure-os",
                "node.name: secure-os",
                "discovery.type: single-node",
                "network.host: 127.0.0.1",
                f"http.port: {self.port}",
                f"transport.port: {self.transport}",
                f"path.data: {self.dir / 'data'}",
                f"path.logs: {self.dir / 'logs'}",
                "cluster.routing.allocation.disk.threshold_enabled: false",
                "action.auto_create_index: true",
                "",
            ]
        )
        (conf / "opensearch.yml").write_text(settings)
        (self.dir / "tmp").mkdir()
        subprocess.run(["chown", "-R", f"{SVC_USER}:{SVC_USER}", str(self.dir)], check=True)
        env = {**os.environ, "OPENSEARCH_JAVA_HOME": os_java(), "JAVA_HOME": os_java(),
               "OPENSEARCH_PATH_CONF": str(conf), "OPENSEARCH_TMPDIR": str(self.dir / "tmp")}  # fmt: skip
        log = open(self.dir / "server.log", "wb")  # noqa: SIM115 (lives as long as the node)
        self.process = subprocess.Popen(
            ["setpriv", f"--reuid={SVC_USER}", f"--regid={SVC_USER}", "--init-groups", "--",
             str(home / "bin" / "opensearch")],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"secured OpenSearch exited: {self.tail()}")
            try:
                if self.request("GET", "/_cluster/health?wait_for_status=yellow&timeout=2s")[0] == 200:
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(1)
        raise RuntimeError(f"secured OpenSearch not ready in {START_SECONDS}s: {self.tail()}")

    def add_user(self, name: str, index_patterns: list[str], actions: list[str], cluster: list[str]) -> str:
        """An internal user with a role of its own: these index actions on these patterns, and
        these cluster actions."""
        password = f"Pw-{uuid.uuid4().hex}!"
        role = f"{name}_role"
        body = {
            "cluster_permissions": cluster,
            "index_permissions": [{"index_patterns": index_patterns, "allowed_actions": actions}],
        }
        for path, payload in (
            (f"/_plugins/_security/api/roles/{role}", body),
            (f"/_plugins/_security/api/internalusers/{name}", {"password": password}),
            (f"/_plugins/_security/api/rolesmapping/{role}", {"users": [name]}),
        ):
            status, answer = self.request("PUT", path, payload)
            assert status in (200, 201), (path, status, answer)
        return password

    def tail(self) -> str:
        path = self.dir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"

    def request(
        self, method: str, path: str, body: Any = None, auth: tuple[str, str] | None = None
    ) -> tuple[int, Any]:
        user, password = auth or self.admin
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
        req.add_header("Content-Type", "application/json")
        context = ssl.create_default_context(cafile=self.ca)
        try:
            with urllib.request.urlopen(req, timeout=30, context=context) as r:
                return r.status, _json(r.read())
        except urllib.error.HTTPError as e:  # "OpenSearch Security not initialized." is text
            return e.code, _json(e.read())

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)
