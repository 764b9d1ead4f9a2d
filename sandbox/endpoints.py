"""Loopback addresses of the sandbox's services, overridable by environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PG_URL = "postgresql+psycopg://datahub:datahub@127.0.0.1:15432/datahub"
MYSQL_URL = "mysql+pymysql://datahub:datahub@127.0.0.1:13306/datahub"
KAFKA = "127.0.0.1:19092"
# the stack's second broker (`kafka2`): the test suite's second worker uses it (tests/conftest.py)
KAFKA2 = "127.0.0.1:19094"
REGISTRY = "http://127.0.0.1:18081/apis/ccompat/v7"
OPENSEARCH = "http://127.0.0.1:19200"
# OpenSearch 3.x (Java 21+): the engine OpenMetadata's runbook names; DataHub's tests use 2.19
OPENSEARCH3 = "http://127.0.0.1:19202"
ELASTICSEARCH = "http://127.0.0.1:19201"
# Elasticsearch 7.17 and 8.x: extra nodes the engine-compatibility phase starts
# (`sandbox/stack up es7 es8`, docs/stack.md)
ELASTICSEARCH7 = "http://127.0.0.1:19203"
ELASTICSEARCH8 = "http://127.0.0.1:19204"


def stack_home() -> Path:
    """Where `sandbox/stack` keeps its downloads (dist/) and its servers' data (run/)."""
    return Path(os.environ.get("AUDITOR_STACK_HOME") or Path.home() / ".cache" / "auditor-stack")


def _stack_ca() -> str:
    """The CA `sandbox/stack` signs the databases' TLS certificates with (run/tls/ca.pem)."""
    return str(stack_home() / "run" / "tls" / "ca.pem")


@dataclass(frozen=True)
class Endpoints:
    """Where each sandbox service listens (see docs/architecture.md)."""

    pg_url: str = PG_URL
    mysql_url: str = MYSQL_URL
    kafka: str = KAFKA
    registry: str = REGISTRY
    opensearch: str = OPENSEARCH
    elasticsearch: str = ELASTICSEARCH
    opensearch3: str = OPENSEARCH3
    elasticsearch7: str = ELASTICSEARCH7
    elasticsearch8: str = ELASTICSEARCH8
    tls_ca: str = ""  # the databases' CA bundle; from_env fills it in

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Endpoints:
        """Defaults, each replaced by its `SANDBOX_*` variable when set and non-empty."""
        env = os.environ if env is None else env

        def pick(name: str, default: str) -> str:
            return env.get(name) or default

        return cls(
            pg_url=pick("SANDBOX_PG_URL", PG_URL),
            mysql_url=pick("SANDBOX_MYSQL_URL", MYSQL_URL),
            kafka=pick("SANDBOX_KAFKA", KAFKA),
            registry=pick("SANDBOX_REGISTRY", REGISTRY),
            opensearch=pick("SANDBOX_OPENSEARCH", OPENSEARCH),
            elasticsearch=pick("SANDBOX_ELASTICSEARCH", ELASTICSEARCH),
            opensearch3=pick("SANDBOX_OPENSEARCH3", OPENSEARCH3),
            elasticsearch7=pick("SANDBOX_ELASTICSEARCH7", ELASTICSEARCH7),
            elasticsearch8=pick("SANDBOX_ELASTICSEARCH8", ELASTICSEARCH8),
            tls_ca=pick("SANDBOX_TLS_CA", _stack_ca()),
        )

    def store_url(self, store: str) -> str:
        """SQLAlchemy URL for `postgres` or `mariadb` (alias `mysql`)."""
        if store in ("postgres", "postgresql", "pg"):
            return self.pg_url
        if store in ("mariadb", "mysql"):
            return self.mysql_url
        raise ValueError(f"unknown store {store!r} (expected postgres or mariadb)")

    def search_url(self, search: str) -> str:
        """HTTP address for `opensearch` (2.19), `opensearch3` (3.x), `elasticsearch` (9.x),
        `elasticsearch7` (7.17) or `elasticsearch8` (8.x)."""
        urls = {
            "opensearch": self.opensearch,
            "opensearch3": self.opensearch3,
            "elasticsearch": self.elasticsearch,
            "elasticsearch7": self.elasticsearch7,
            "elasticsearch8": self.elasticsearch8,
        }
        if search not in urls:
            raise ValueError(f"unknown search backend {search!r} (expected one of {', '.join(urls)})")
        return urls[search]
