"""The test suite on two workers (`scripts/test`): what each worker has of its own.

`scripts/test` runs the suite in two phases. Phase 1 runs every test not marked `alone` on two
pytest-xdist workers (`--dist worksteal`: a worker that runs out takes tests from the other's
queue; a module's fixtures are set up on each worker that runs one of its tests). The
scenario worlds empty DataHub's
aspect table, move the MAE group and consume the change-log topics, so the two workers must not
share those: worker `gw0` uses the stack's defaults (database `datahub`, the broker on 19092);
worker `gw1` gets a database `datahub_gw1` on each server (created here, DataHub's DDL is
created by the tests as usual) and the stack's second broker (`kafka2`, 19094, with the same
topics). Search indices are per test already (a prefix of its own, or urns of its own).
Phase 2 runs the tests marked `alone` on one process: they stop a server (OpenSearch, the
broker) or drop and restore a shared index, which a test beside them would see fail.
"""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or worker == "gw0":
        return
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    from sandbox.database import make_engine
    from sandbox.endpoints import KAFKA2, Endpoints

    e = Endpoints.from_env()
    name = f"datahub_{worker}"
    for var, url in (("SANDBOX_PG_URL", e.pg_url), ("SANDBOX_MYSQL_URL", e.mysql_url)):
        admin = make_engine(url).execution_options(isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                if url.startswith("postgresql"):
                    found = text("SELECT 1 FROM pg_database WHERE datname = :n")
                    if not conn.execute(found, {"n": name}).first():
                        conn.execute(text(f"CREATE DATABASE {name}"))
                else:
                    charset = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"  # as sandbox/stack makes `datahub`
                    conn.execute(text(f"CREATE DATABASE IF NOT EXISTS {name} {charset}"))
        except Exception as exc:  # never fall back on gw0's database: the workers would collide
            where = url.split("@")[-1]  # no credentials in the message
            why = f"worker {worker}: cannot create database {name} at {where}: {exc}"
            raise pytest.UsageError(why) from None
        finally:
            admin.dispose()
        os.environ[var] = make_url(url).set(database=name).render_as_string(hide_password=False)
    os.environ["SANDBOX_KAFKA"] = os.environ.get("SANDBOX_KAFKA2") or KAFKA2
