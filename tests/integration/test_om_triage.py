"""`auditor triage --platform openmetadata`: one entity, by its fully qualified name or its id,
from its row through the server's retry queue to its document, against the real servers
(PostgreSQL + OpenSearch 3; the scan's own tests cover MariaDB + Elasticsearch 9). A fresh
process each, as on call."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url
from test_om_profile import ROOT, World, _inject, om_world

from sandbox.openmetadata.entities import now_ms
from sandbox.openmetadata.faults import Fault

pytestmark = pytest.mark.integration


def triage(
    w: World, text: str, *more: str, visibility: float | None = None
) -> tuple[int, dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUDITOR_")}
    env["AUDITOR_STATE_FILE"] = str(w.state)
    if visibility is not None:
        env["AUDITOR_INDEX_VISIBILITY_SECONDS"] = str(visibility)
    args = [sys.executable, "-m", "auditor.cli", "triage", text, "--platform", "openmetadata"]
    args += ["--store-url", w.store_url, "--search-url", w.search_url, "--cluster-alias", w.alias]
    done = subprocess.run([*args, *more], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    data = json.loads(done.stdout) if "--format" in more and done.stdout.strip() else {}
    return done.returncode, data, done.stdout + done.stderr


def boundaries(data: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {b["boundary"]: (b["status"], b["facts"]) for b in data["boundaries"]}


def test_each_state_is_named_at_its_boundary_with_its_repair(tmp_path: Path) -> None:
    with om_world("postgres", "opensearch3", tmp_path) as w:
        hit = _inject(w)
        fine = w.catalog.of_type("table")[6]
        json_out = ("--format", "json", "--grace", "0")

        code, data, said = triage(w, fine.fqn, *json_out)  # by its name: consistent
        assert code == 0 and data["verdict"] == "consistent", said
        assert data["urn"] == fine.id and fine.id in data["read_as"][0]
        assert {k: v[0] for k, v in boundaries(data).items()} == {
            "rows": "ok",
            "retry queue": "ok",
            "document": "ok",
        }
        assert boundaries(data)["rows"][1]["fqn"] == fine.fqn

        code, data, said = triage(w, hit["stale"], *json_out)  # by its id: a field edited behind it
        assert code == 1 and data["subkind"] == "stale_fields", said
        assert data["first_break"] == {"boundary": "document", "status": "broken"}
        wanted = ("rebuild reindex --platform openmetadata --urn", hit["stale"])
        assert any(all(w in c for w in wanted) for c in data["repair"]), data["repair"]
        shown = triage(w, hit["stale"], "--grace", "0")[2]  # the console: the data's text escaped
        assert "\x1b" not in shown and "description" in shown

        code, data, said = triage(w, hit["queued"], *json_out)  # the server will retry the write
        assert code == 0 and data["verdict"] == "in_flight", said
        status, facts = boundaries(data)["retry queue"]
        assert facts["queued"] is True and facts["status"], (status, facts)
        assert "search_index_retry_queue" in data["findings"][0]["evidence"]["reason"]

        code, data, said = triage(w, hit["missing"], *json_out)  # written, never indexed
        assert code == 1 and data["subkind"] == "missing_document", said

        code, data, said = triage(w, f"{fine.fqn}_nope", *json_out)  # nobody knows it
        assert code == 7 and data["verdict"] == "unknown", said  # an unknown urn, not a usage error

        code, _, said = triage(w, fine.fqn, "--entity-type", "dashboard")  # looked for elsewhere
        assert code == 7, said

        # rows gone, the document left: no change time to age, so unconfirmed until a scan has
        # seen it (the triage reads the scan's state file, never writes it)
        code, data, said = triage(w, hit["orphan"], *json_out)
        assert code == 0 and data["verdict"] == "in_flight", said
        assert boundaries(data)["rows"][1]["present"] is False
        assert data["findings"][0]["kind"] == "orphan_document"
        w.scan(grace=0.0)
        code, data, said = triage(w, hit["orphan"], *json_out)
        assert code == 1 and data["subkind"] == "orphan_document", said
        assert data["first_break"] == {"boundary": "document", "status": "broken"}


def test_a_divergence_its_row_dates_long_ago_is_judged_without_the_visibility_wait(tmp_path: Path) -> None:
    """On call, a triage paid the whole visibility delay (3 s by default) on every divergence. A
    table written an hour ago whose document never came has nothing left on its way: judged on a
    first read of the document, long before a (here 20 s) delay would end. One written just now
    still waits the delay out before its document is read."""
    with om_world("postgres", "opensearch3", tmp_path) as w:
        s = w.server
        schema = s.entities[w.catalog.of_type("table")[0].parent_id]
        hour_ago = now_ms() - 3_600_000
        old = s.create(
            "table", "old_never_indexed", schema, fault=Fault.SEARCH_WRITE_FAILS, updated_at=hour_ago
        )
        fresh = s.create("table", "fresh_never_indexed", schema, fault=Fault.SEARCH_WRITE_FAILS)
        w.refresh()
        json_out = ("--format", "json", "--grace", "0")

        code, data, said = triage(w, old.id, *json_out, visibility=20)
        assert code == 1 and data["verdict"] == "diverged" and data["subkind"] == "missing_document", said
        assert data["seconds"] < 20, data["seconds"]  # the 20 s delay was not waited out
        observed = data["findings"][0]["evidence"]["observed"]
        assert observed["rounds"] == 1, observed

        code, data, said = triage(w, fresh.id, *json_out, visibility=4)
        assert code == 1 and data["subkind"] == "missing_document", said
        assert data["seconds"] >= 4, data["seconds"]  # written just now: the delay is waited out
        assert data["findings"][0]["evidence"]["observed"]["rounds"] == 2


def test_a_store_that_does_not_answer_is_said_so_never_an_unknown_entity(tmp_path: Path) -> None:
    """The database down while the search cluster answers: each entity table's probe failed and
    was taken for "no such table in this release", so the triage of an entity that exists said
    nothing has that id or name (exit 7, "unknown"), at the moment on call asks "where is my
    table". It says the store is unreachable (exit 3, the password kept out) and judges
    nothing; by its id as by its FQN."""
    with om_world("postgres", "opensearch3", tmp_path) as w:
        fine = w.catalog.of_type("table")[6]
        url = make_url(w.store_url)
        down = dataclasses.replace(w, store_url=url.set(port=9).render_as_string(hide_password=False))
        for asked in (fine.id, fine.fqn):
            code, data, said = triage(down, asked, "--format", "json")
            assert code == 3, said
            assert "verdict" not in data and "orphan" not in said, said
            assert "unreachable" in said or "reading" in said, said
            assert url.password and f":{url.password}@" not in said and ":***@" in said


@pytest.mark.parametrize("pair", [("postgres", "opensearch3"), ("mariadb", "elasticsearch")], ids="+".join)
def test_a_name_is_found_by_its_hash_column_and_by_the_json_when_the_hash_does_not_match(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    """A triage by name read every entity table's JSON for it (no index serves the JSON's FQN):
    the indexed hash column (fqnHash, nameHash) finds it now, checked against the JSON; a row
    whose hash does not match (another hashing, a hand-edited row) is still found by its JSON."""
    from sqlalchemy import create_engine, text

    from auditor.platforms.openmetadata.naming import entity
    from auditor.platforms.openmetadata.store import OmStore

    with om_world(*pair, tmp_path) as w:
        table, user = w.catalog.of_type("table")[3], w.catalog.of_type("user")[0]  # fqnHash, nameHash
        store = OmStore(w.store_url)
        try:
            for e in (table, user):
                kind = entity(e.type)
                assert store.find_by_fqn(kind, [e.fqn], scan=False) == {e.fqn: e.id}, e.type
            engine = create_engine(w.store_url)
            with engine.begin() as conn:
                conn.execute(text("UPDATE table_entity SET fqnHash = 'x' WHERE id = :i"), {"i": table.id})
            engine.dispose()
            assert store.find_by_fqn(entity("table"), [table.fqn], scan=False) == {}
            assert store.find_by_fqn(entity("table"), [table.fqn]) == {table.fqn: table.id}
            assert store.find_by_fqn(entity("table"), [""]) == {}  # no hash to ask for: no empty IN list
        finally:
            store.close()
        code, data, said = triage(w, table.fqn, "--format", "json")
        assert code == 0 and data["urn"] == table.id and data["verdict"] == "consistent", said


def test_an_entity_with_a_row_is_triaged_without_asking_the_other_types_indices(tmp_path: Path) -> None:
    """The indices of every type without a row were asked for the id too (two round trips a type:
    seconds over a slow link), and a stray document with the same id in another type's index
    made the triage refuse the id as naming two entities (exit 2). A row decides the type; the
    indices are asked for an orphan only (no row of any type)."""
    from sandbox.openmetadata.indices import index_name

    with om_world("postgres", "opensearch3", tmp_path) as w:
        fine = w.catalog.of_type("table")[6]
        w.search.put(index_name("topic", w.alias), fine.id, {"id": fine.id, "fullyQualifiedName": fine.fqn})
        w.refresh()
        code, data, said = triage(w, fine.id, "--format", "json")
        assert code == 0 and data["verdict"] == "consistent" and data["urn"] == fine.id, said
        assert boundaries(data)["document"][1]["index"].endswith("table_search_index"), said


@pytest.mark.parametrize("pair", [("postgres", "opensearch3"), ("mariadb", "elasticsearch")], ids="+".join)
def test_an_entity_is_found_in_a_few_requests_whatever_the_number_of_types(
    pair: tuple[str, str], tmp_path: Path
) -> None:
    """Finding what an id or a name names asked each entity table on its own (its columns, then
    its row: some forty statements) and, for an orphan, each type's index (an alias look-up and
    a search: some forty requests); over a link of 5 ms that was most of a cold triage. Now the
    tables' columns come in one statement, the rows in one, the indices in two requests."""
    from auditor.platforms.openmetadata.connect import open_om_search, open_om_store
    from auditor.platforms.openmetadata.naming import ENTITIES
    from auditor.platforms.openmetadata.triage import resolve

    with om_world(*pair, tmp_path) as w:
        table = w.catalog.of_type("table")[5]
        gone = w.server.create("table", "gone_but_indexed", w.server.entities[table.parent_id])
        w.server.hard_delete(gone, fault=Fault.ORPHAN_DOC)
        w.refresh()
        store, search = open_om_store(w.settings()), open_om_search(w.settings())
        statements, requests = _counting_store(store), _counting_search(search)
        try:
            for asked, wanted in ((table.id, table.id), (table.fqn, table.id), (gone.id, gone.id)):
                statements.clear()
                requests.clear()
                found = resolve(store, search, list(ENTITIES.values()), asked)
                assert [(e.entity_type, i) for e, i in found] == [("table", wanted)], asked
                assert len(statements) <= 2 and len(requests) <= 2, (asked, statements, requests)
        finally:
            store.close()
            search.close()


def _counting_store(store: Any, *, streamed: bool = False) -> list[str]:
    """The statements the store's engine is handed from now on (`streamed`: only those run
    through a server-side cursor)."""
    said: list[str] = []
    connect = store.engine.connect

    def counted() -> Any:
        from contextlib import contextmanager

        @contextmanager
        def block() -> Any:
            with connect() as conn:
                execute = conn.execute

                def run(sql: Any, *a: Any, **k: Any) -> Any:
                    if not streamed or conn._stream:
                        said.append(str(sql))
                    return execute(sql, *a, **k)

                conn.execute = run
                yield conn

        return block()

    store.engine.connect = counted
    return said


def _counting_search(search: Any, *more: str) -> list[str]:
    """The search requests (searches, alias look-ups and the client's methods named in `more`)
    sent from now on."""
    sent: list[str] = []
    client = search.client
    for owner, name in ((client, "search"), (client.indices, "get_alias"), *((client, m) for m in more)):
        real = getattr(owner, name)
        setattr(owner, name, lambda *a, _r=real, _n=name, **k: (sent.append(_n), _r(*a, **k))[1])
    return sent


def test_names_with_quoted_parts_are_found_by_name_on_the_cli_and_the_console(tmp_path: Path) -> None:
    """OpenMetadata quotes every part of a name that holds a dot. A name beginning or ending with
    such a part lost its first or last quote to the pasted-text cleaning (exit 7 for an entity
    that exists); a quote is the user's only where it wraps the whole text."""
    from auditor.platforms.openmetadata.resident import OpenMetadataResident

    with om_world("postgres", "opensearch3", tmp_path) as w:
        s = w.server
        lake = s.create("databaseService", "lake.prod", serviceType="Postgres")
        landing = s.create("databaseSchema", "landing", s.create("database", "raw", lake))
        x = s.create("table", "x", landing)
        warehouse = s.create("databaseService", "warehouse", serviceType="Postgres")
        sales = s.create("databaseSchema", "sales.v2", s.create("database", "analytics", warehouse))
        daily = s.create("table", "daily.revenue", sales)
        w.refresh()
        assert (x.fqn, daily.fqn, lake.fqn) == (
            '"lake.prod".raw.landing.x',
            'warehouse.analytics."sales.v2"."daily.revenue"',
            '"lake.prod"',
        )
        pasted = {x.fqn: x.id, daily.fqn: daily.id, lake.fqn: lake.id, f"'{daily.fqn}'": daily.id}
        for text_, wanted in pasted.items():
            code, data, said = triage(w, text_, "--format", "json")
            assert code == 0 and data["urn"] == wanted and data["verdict"] == "consistent", said
        resident = OpenMetadataResident(w.settings())
        try:
            for text_, wanted in pasted.items():
                found = resident.triage(f" {text_} ")
                assert found.urn == wanted and found.exit_code == 0, (text_, found.urn)
        finally:
            resident.close()
