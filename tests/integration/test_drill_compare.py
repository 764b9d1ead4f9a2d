"""Restore drills against real PostgreSQL and MariaDB: identical copies pass, known alterations are
reported exactly (no more, no less), thresholds decide PASS/FAIL, a server lost mid-run is exit 3."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from drill_world import ODD_URNS, DrillWorld, catalog_rows, drill_world
from sqlalchemy import text
from sqlalchemy.engine import make_url

from auditor.core.drill import RowChange
from auditor.drill.bisect import BisectOptions
from auditor.drill.run import Drill, DrillOptions
from auditor.drill.side import Side
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.drill import METADATA_ASPECT_V2
from auditor.settings import load_settings
from sandbox.endpoints import Endpoints

pytestmark = pytest.mark.integration
SMALL = BisectOptions(segment_rows=200, factor=4, threshold=20)  # several levels on a small table


@pytest.fixture(scope="module")
def world() -> Iterator[DrillWorld]:
    with drill_world(Endpoints.from_env()) as w:
        w.seed(catalog_rows(200))
        yield w


def drill(source: str, target: str, **kw: object) -> Drill:
    options = DrillOptions(tables=(METADATA_ASPECT_V2,), bisect=SMALL, **kw)  # type: ignore[arg-type]
    return Drill(
        load_settings(None, env={}, store_url=source), load_settings(None, env={}, store_url=target), options
    )


def test_identical_rows_hash_the_same_on_both_engines(world: DrillWorld) -> None:
    pg, maria = Side("source", world.pg_url), Side("target", world.mysql_url)
    try:
        a = pg.row_hashes(METADATA_ASPECT_V2, None, None, {"createdon": 1})
        b = maria.row_hashes(METADATA_ASPECT_V2, None, None, {"createdon": 1})
        assert len(a) > 1000 and a == b
        for urn in ODD_URNS:  # control characters, trailing space, non-ASCII, quote, pipe, backslash
            assert a[(urn, "tagProperties", 0)] == b[(urn, "tagProperties", 0)]
        pg_sums = pg.checksums(METADATA_ASPECT_V2, None, None, {"createdon": 1}, 32)
        assert len(pg_sums) == 32  # every bucket used: the urns' MD5 spreads them
        assert pg_sums == maria.checksums(METADATA_ASPECT_V2, None, None, {"createdon": 1}, 32)
    finally:
        pg.close()
        maria.close()


@pytest.mark.parametrize("direction", ["pg->mariadb", "mariadb->pg"])
def test_identical_copies_pass(world: DrillWorld, direction: str) -> None:
    urls = (world.pg_url, world.mysql_url) if direction == "pg->mariadb" else (world.mysql_url, world.pg_url)
    result = drill(*urls).run()
    assert result.passed, (result.rows, result.count_failures())
    assert result.rows == []
    stats = result.tables[0]
    assert stats.source_rows == stats.target_rows > 1000 and stats.segments > 3
    kinds = {c.kind for c in result.counts}
    assert {"rows", "entities", "aspects", "lineage"} <= kinds
    assert any(c.kind == "lineage" and c.source for c in result.counts)  # the catalog has lineage


def test_known_alterations_are_reported_exactly(endpoints: Endpoints) -> None:
    with drill_world(endpoints) as w:
        rows = catalog_rows(120)
        w.seed(rows)
        changed, deleted, moved = rows[10], rows[40], rows[70]
        t = w.mysql
        w.execute(
            t,
            "UPDATE metadata_aspect_v2 SET metadata = :m WHERE urn = :u AND aspect = :a AND version = :v",
            m=changed["metadata"].replace("}", ',"x":1}', 1),
            u=changed["urn"],
            a=changed["aspect"],
            v=changed["version"],
        )
        w.execute(
            t,
            "DELETE FROM metadata_aspect_v2 WHERE urn = :u AND aspect = :a AND version = :v",
            u=deleted["urn"],
            a=deleted["aspect"],
            v=deleted["version"],
        )
        w.execute(  # one microsecond later: kept by both engines (timestamp / datetime(6))
            t,
            "UPDATE metadata_aspect_v2 SET createdon = :c WHERE urn = :u AND aspect = :a AND version = :v",
            c=moved["createdon"] + timedelta(microseconds=1),
            u=moved["urn"],
            a=moved["aspect"],
            v=moved["version"],
        )
        w.execute(
            t, "UPDATE metadata_aspect_v2 SET systemmetadata = '{}' WHERE urn = :u", u="urn:li:tag:数据😀"
        )
        added = dict(rows[0], urn="urn:li:tag:ünïcødé\tadded", version=0)
        w.insert(t, [added])
        result = drill(w.pg_url, w.mysql_url).run()
    found = {(d.key, d.change, d.columns) for d in result.rows}
    key = lambda r: (r["urn"], r["aspect"], r["version"])  # noqa: E731
    assert found == {
        (key(changed), RowChange.CHANGED, ("metadata",)),
        (key(deleted), RowChange.REMOVED, ()),
        (key(moved), RowChange.CHANGED, ("createdon",)),
        (("urn:li:tag:数据😀", "tagProperties", 0), RowChange.CHANGED, ("systemmetadata",)),
        (key(added), RowChange.ADDED, ()),
    }
    moved_diff = next(d for d in result.rows if d.key == key(moved))
    assert int(moved_diff.target["createdon"] or 0) - int(moved_diff.source["createdon"] or 0) == 1
    assert not result.passed
    rows_count = next(c for c in result.counts if c.kind == "rows")
    assert rows_count.delta == 0  # one deleted, one added


def test_thresholds_turn_differences_into_pass_or_fail(world: DrillWorld, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "auditor.cli",
                "drill",
                "compare",
                *args,
                "--segment-rows",
                "200",
                "--threshold",
                "30",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )

    with drill_world(Endpoints.from_env()) as w:
        rows = catalog_rows(60)
        w.seed(rows)
        for r in rows[:3]:
            w.execute(
                w.mysql,
                "DELETE FROM metadata_aspect_v2 WHERE urn = :u AND aspect = :a AND version = :v",
                u=r["urn"],
                a=r["aspect"],
                v=r["version"],
            )
        failing = cli(w.pg_url, w.mysql_url, "--bundle", str(tmp_path / "b1"))
        assert failing.returncode == 1, failing.stderr
        within = cli(
            w.pg_url,
            w.mysql_url,
            "--max-row-diffs",
            "3",
            "--max-count-delta",
            "3",
            "--bundle",
            str(tmp_path / "b2"),
            "--format",
            "json",
        )
        assert within.returncode == 0, within.stderr
        report = json.loads(within.stdout)
        assert report["result"] == "PASS" and len(report["row_differences"]) == 3
        per_kind = cli(
            w.pg_url, w.mysql_url, "--max-row-diffs", "3", "--max-count-delta", "3", "--max-delta", "rows=2"
        )
        assert per_kind.returncode == 1, per_kind.stdout
    assert (tmp_path / "b1" / "RESULT").read_text() == "FAIL\n"
    assert (tmp_path / "b2" / "RESULT").read_text() == "PASS\n"
    differences = json.loads((tmp_path / "b1" / "differences.json").read_text())
    assert len(differences["rows"]) == 3 and all(d["explanation"] == "" for d in differences["rows"])
    versions = json.loads((tmp_path / "b1" / "versions.json").read_text())
    assert "PostgreSQL 15" in versions["source"]["database"] and "MariaDB" in versions["target"]["database"]
    log = (tmp_path / "b1" / "log.txt").read_text()
    assert "result: FAIL" in log and datetime.now().strftime("%Y-") in log
    assert "datahub:datahub" not in log and ":datahub@" not in json.dumps(versions)


class Proxy:
    """A TCP forwarder to a real server that can be cut off (the server 'gone' for the drill)."""

    def __init__(self, host: str, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.upstream = (host, port)
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        self.closed = True
        self.listener.close()
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_a_server_lost_mid_run_is_exit_3_naming_it(world: DrillWorld) -> None:
    url = make_url(world.mysql_url)
    proxy = Proxy(url.host or "127.0.0.1", url.port or 3306)
    through = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    run = drill(world.pg_url, through)

    def echo(line: str) -> None:
        if "level 1" in line:  # after the first checksums: the target's server goes away
            proxy.cut()

    run.echo = echo
    with pytest.raises(BackendUnavailable) as caught:
        run.run()
    assert caught.value.exit_code == 3
    message = str(caught.value)
    assert message.startswith("target database") and f":{proxy.port}/" in message
    assert "datahub:datahub" not in message
    assert run.result.log[-1].split(" ", 1)[1].startswith("INCOMPLETE: target database")


def test_a_postgresql_key_in_a_linguistic_collation_is_read_in_one_pass(endpoints: Endpoints) -> None:
    """DataHub's PostgreSQL image runs en_US: no index serves byte ranges of `urn`, so the drill
    reads each table once in hash buckets; the alterations are still found exactly."""
    with drill_world(endpoints) as w:
        with w.pg.begin() as conn:  # the same table, its urn in ICU's English collation
            conn.execute(
                text('ALTER TABLE metadata_aspect_v2 ALTER COLUMN urn TYPE varchar(500) COLLATE "en-x-icu"')
            )
        rows = catalog_rows(60)
        w.seed(rows)
        gone, edited = rows[3], ODD_URNS[1]
        w.execute(
            w.mysql,
            "DELETE FROM metadata_aspect_v2 WHERE urn = :u AND aspect = :a AND version = :v",
            u=gone["urn"],
            a=gone["aspect"],
            v=gone["version"],
        )
        w.execute(w.mysql, "UPDATE metadata_aspect_v2 SET createdfor = NULL WHERE urn = :u", u=edited)
        run = drill(w.pg_url, w.mysql_url)
        lines: list[str] = []
        run.echo = lines.append
        result = run.run()
    assert {(d.key, d.change, d.columns) for d in result.rows} == {
        ((gone["urn"], gone["aspect"], gone["version"]), RowChange.REMOVED, ()),
        ((edited, "tagProperties", 0), RowChange.CHANGED, ("createdfor",)),
    }
    assert any("one pass in" in line for line in lines)
    assert any("level 1: 1 segments" in line for line in lines)  # the whole table, once per side


def test_a_row_that_is_not_json_skips_the_lineage_counts_with_a_warning(endpoints: Endpoints) -> None:
    """PostgreSQL refuses `metadata::json` over the whole count for one bad row: the drill warns,
    leaves the lineage counts out and still reports that row as a difference."""
    with drill_world(endpoints) as w:
        rows = catalog_rows(20)
        w.seed(rows)
        lineage = next(r for r in rows if r["aspect"] == "upstreamLineage")
        for engine in (w.pg, w.mysql):
            w.execute(
                engine,
                "UPDATE metadata_aspect_v2 SET metadata = '{not json' WHERE urn = :u AND aspect = :a",
                u=lineage["urn"],
                a=lineage["aspect"],
            )
        w.execute(
            w.mysql,
            "UPDATE metadata_aspect_v2 SET metadata = '{not json!' WHERE urn = :u AND aspect = :a "
            "AND version = 0",
            u=lineage["urn"],
            a=lineage["aspect"],
        )
        result = drill(w.pg_url, w.mysql_url).run()
    assert [(d.key, d.columns) for d in result.rows] == [
        ((lineage["urn"], "upstreamLineage", 0), ("metadata",))
    ]
    assert not any(c.kind == "lineage" for c in result.counts)
    assert any(w.startswith("lineage counts skipped: a row is not JSON") for w in result.warnings)
    assert any(c.kind == "entities" for c in result.counts)
