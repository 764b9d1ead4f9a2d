"""Rebuild's parts without servers: the MCL it produces, the ordering guard, checkpoint, lock, rate."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fastavro
import pytest
from fakes import T0, FakeStore, rows

from auditor.core.model import Selection
from auditor.core.records import AspectRow, rows_digest
from auditor.platforms.datahub.backends.producer import Deliveries
from auditor.rebuild.checkpoint import Checkpoint, Lock, LockHeld
from auditor.rebuild.datahub.mcl import RestateBuilder
from auditor.rebuild.datahub.replay import Replayer
from auditor.rebuild.throttle import Throttle


def schema_str() -> str:
    import datahub

    return (Path(datahub.__file__).parent / "metadata" / "schemas" / "MetadataChangeLog.avsc").read_text()


def test_a_restate_mcl_fits_datahubs_schema_and_forces_indexing() -> None:
    row = AspectRow(
        "globalTags",
        json.dumps({"tags": [{"tag": "urn:li:tag:pii"}]}),
        json.dumps({"runId": "r1", "lastObserved": 5, "properties": {"appSource": "ui"}}),
        T0.replace(tzinfo=None),
    )
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    record = RestateBuilder(schema_str()).record(urn, row)
    parsed = fastavro.parse_schema(json.loads(schema_str()))
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, parsed, record)  # raises if the record does not fit
    buffer.seek(0)
    back = fastavro.schemaless_reader(buffer, parsed)
    assert back["changeType"] == "RESTATE" and back["entityType"] == "dataset" and back["entityUrn"] == urn
    assert back["aspect"]["value"] == row.metadata.encode() and back["previousAspectValue"] is None
    assert back["systemMetadata"]["properties"] == {"appSource": "ui", "forceIndexing": "true"}
    assert back["systemMetadata"]["runId"] == "r1" and back["systemMetadata"]["lastObserved"] == 5


class FakeProducer:
    """Confirms every message (or refuses those of `refuse`), in order, on fake offsets."""

    schema_str = schema_str()
    description = "fake kafka"

    def __init__(self, refuse: set[str] | None = None) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.pending = Deliveries()
        self.refuse = refuse or set()

    def produce(self, urn: str, record: dict[str, Any]) -> None:
        self.sent.append((urn, record))
        if urn in self.refuse:
            self.pending.failed.append((urn, "refused"))
        else:
            self.pending.confirmed.append((urn, 0, len(self.sent) - 1))

    def flush(self, timeout: float = 60.0) -> Deliveries:
        out, self.pending = self.pending, Deliveries()
        return out


class Pages:
    def __init__(self, store: FakeStore) -> None:
        self.store = store

    def page(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, AspectRow]]:
        keyed = [
            (e.urn, r)
            for e in self.store.stream_entities()
            for r in sorted(e.rows.values(), key=lambda r: r.aspect)
        ]
        return [(u, r) for u, r in keyed if after is None or (u, r.aspect) > after][:limit]

    def unchanged(self, page: list[tuple[str, AspectRow]]) -> bool:
        """The page's key range now, digested as the database would (RowSource.unchanged)."""
        self.store.log.append("page digest")
        first, last = (page[0][0], page[0][1].aspect), (page[-1][0], page[-1][1].aspect)
        now = [(e.urn, r) for e in self.store.stream_entities() for r in e.rows.values()]
        return rows_digest(p for p in now if first <= (p[0], p[1].aspect) <= last) == rows_digest(page)


def tags(name: str) -> dict[str, dict[str, Any]]:
    return {"globalTags": {"tags": [{"tag": f"urn:li:tag:{name}"}]}}


def test_a_row_written_during_the_replay_is_produced_again_after_it(tmp_path: Path) -> None:
    a, b = "urn:li:dataset:a", "urn:li:dataset:b"
    store = FakeStore([rows(a, tags("old")), rows(b, tags("b"))])
    reads = []

    def live(s: FakeStore) -> None:  # GMS writes `a` between our read of it and our produce
        reads.append(1)
        if len(reads) == 2:
            s.entities[a] = rows(a, tags("new"))

    producer = FakeProducer()
    ck = Checkpoint("replay", "x")
    replayer = Replayer(store, producer, ck, tmp_path / "ck.json", batch=10)  # type: ignore[arg-type]
    store.before_read = live
    replayer.run(Pages(store))  # type: ignore[arg-type]
    values = [json.loads(r["aspect"]["value"])["tags"][0]["tag"] for u, r in producer.sent if u == a]
    assert values == ["urn:li:tag:old", "urn:li:tag:new"]  # the newest row is produced last
    assert ck.counts["produced_again"] == 1 and ck.done


def test_a_page_nobody_wrote_meanwhile_costs_one_digest_and_no_row_by_row_check(tmp_path: Path) -> None:
    store = FakeStore([rows(f"urn:li:dataset:{i}", tags("t")) for i in range(5)])
    ck = Checkpoint("replay", "x")
    Replayer(store, FakeProducer(), ck, tmp_path / "ck.json", batch=2).run(Pages(store))  # type: ignore[arg-type]
    assert store.log.count("page digest") == 3 and "fingerprints" not in store.log
    assert ck.counts["produced"] == 5 and "produced_again" not in ck.counts


def test_a_reindexed_batch_nobody_wrote_meanwhile_is_checked_by_one_digest() -> None:
    from auditor.rebuild.datahub.reindex import Reindexer

    a, b = "urn:li:dataset:a", "urn:li:dataset:b"
    store = FakeStore([rows(a, tags("a")), rows(b, tags("b"))])
    reindexer = Reindexer.__new__(Reindexer)
    reindexer.store = store  # type: ignore[assignment]
    read = {e.urn: e for e in store.stream_entities()}
    assert reindexer._changed([a, b], read) == [] and "fingerprints" not in store.log
    store.entities[b] = rows(b, tags("new"))  # written since: the digest moves, the urn is named
    assert reindexer._changed([a, b], read) == [b] and "fingerprints" in store.log


def test_a_refused_message_is_retried_then_reported_by_urn(tmp_path: Path) -> None:
    a, b = "urn:li:dataset:a", "urn:li:dataset:b"
    store = FakeStore([rows(a, tags("a")), rows(b, tags("b"))])
    producer = FakeProducer(refuse={b})
    ck = Checkpoint("replay", "x")
    Replayer(store, producer, ck, tmp_path / "ck.json").run(Pages(store))  # type: ignore[arg-type]
    assert ck.failed == [b] and [u for u, _ in producer.sent].count(b) == 4  # once, then 3 retries
    assert json.loads((tmp_path / "ck.json").read_text())["failed"] == [b]


def test_the_checkpoint_moves_only_past_confirmed_batches(tmp_path: Path) -> None:
    store = FakeStore([rows(f"urn:li:dataset:{i}", tags("t")) for i in range(5)])
    producer = FakeProducer(refuse={f"urn:li:dataset:{i}" for i in range(5)})
    ck = Checkpoint("replay", "x")
    with pytest.raises(Exception, match="no delivery confirmed"):
        Replayer(store, producer, ck, tmp_path / "ck.json", batch=2).run(Pages(store))  # type: ignore[arg-type]
    assert ck.last_urn is None  # nothing confirmed: a resume starts at the same place


def test_a_lock_refuses_a_second_repair_and_a_stale_one_is_cleared(tmp_path: Path) -> None:
    first = Lock(tmp_path, "target")
    first.acquire()
    with pytest.raises(LockHeld, match="held") as held:
        Lock(tmp_path, "target").acquire()
    assert held.value.exit_code == 6  # locked: run again later (not 2, a usage error)
    first.release()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    assert not first.path.exists()  # released
    first.path.write_text(json.dumps({"pid": int(dead.stdout), "host": os.uname().nodename, "since": 0}))
    with pytest.raises(LockHeld, match="stale"):
        Lock(tmp_path, "target").acquire()
    second = Lock(tmp_path, "target")
    second.acquire(break_stale=True)
    assert second.held and json.loads(second.path.read_text())["pid"] == os.getpid()


def test_the_throttle_spaces_operations() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    throttle = Throttle(4.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        throttle.wait()
    assert now[0] == pytest.approx(1.0) and len(slept) == 4


def test_a_checkpoint_round_trips(tmp_path: Path) -> None:
    ck = Checkpoint("reindex", "s", last_urn="urn:li:x:1", counts={"written": 3}, touched=["urn:li:x:1"])
    ck.save(tmp_path / "c.json")
    assert Checkpoint.load(tmp_path / "c.json") == ck
    assert Selection(aspects=("a",)).aspects == ("a",)


def test_the_window_after_a_restore_starts_at_the_earliest_write_behind() -> None:
    from datetime import timedelta

    from auditor.core.model import Classified, Evidence, Finding, Kind, Report, Verdict
    from auditor.rebuild.datahub.after_restore import window

    def behind(minute: int) -> Classified:
        f = Finding(
            "c",
            Kind.STALE_FIELDS,
            f"urn:li:dataset:{minute}",
            "dataset",
            "datasetindex_v2",
            None,
            T0 + timedelta(minutes=minute),
        )
        return Classified(f, Verdict.DIVERGED, "index_behind_restore", Evidence(""))

    report = Report(started_at=T0, findings=[behind(5), behind(3)])
    found = window(report, T0 + timedelta(minutes=9), T0 + timedelta(minutes=9))
    assert found.since == T0 + timedelta(minutes=3) and found.behind == {"datasetindex_v2": 2}
    # the system-metadata index stopped an hour before the table's newest write: that is the window
    quiet = window(Report(started_at=T0), T0 + timedelta(hours=2), T0 + timedelta(hours=1))
    assert quiet.since == T0 + timedelta(hours=1) and "system_metadata_service_v1" in quiet.behind
    assert window(Report(started_at=T0), T0, T0).since is None


def test_work_read_ahead_hands_over_its_result_or_its_exception_in_the_takers_thread() -> None:
    import threading

    from auditor.rebuild.ahead import Ahead

    ran_in: list[str] = []

    def work(x: int) -> int:
        ran_in.append(threading.current_thread().name)
        if x < 0:
            raise ValueError("negative")
        return x * 2

    assert Ahead(work, 21, name="t-ok").result() == 42 and ran_in == ["t-ok"]
    failing = Ahead(work, -1)
    with pytest.raises(ValueError, match="negative"):
        failing.result()


def test_a_page_read_ahead_that_fails_leaves_the_checkpoint_after_the_last_confirmed_page(
    tmp_path: Path,
) -> None:
    from auditor.errors import BackendUnavailable

    store = FakeStore([rows(f"urn:li:dataset:{i}", tags("t")) for i in range(6)])

    class Failing(Pages):
        calls = 0

        def page(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, AspectRow]]:
            self.calls += 1
            if self.calls == 2:  # the database goes away while page 1 is produced
                raise BackendUnavailable("metadata store gone")
            return super().page(after, limit)

    producer, ck = FakeProducer(), Checkpoint("replay", "x")
    with pytest.raises(BackendUnavailable, match="gone"):
        Replayer(store, producer, ck, tmp_path / "ck.json", batch=2).run(Failing(store))  # type: ignore[arg-type]
    saved = json.loads((tmp_path / "ck.json").read_text())
    assert [u for u, _ in producer.sent] == ["urn:li:dataset:0", "urn:li:dataset:1"]
    assert saved["last_urn"] == "urn:li:dataset:1" and not saved["done"]  # page 1 confirmed, kept


class FailingWriter:
    """Bulk writes that succeed, except the `fail_at`-th bulk, which finds the cluster gone."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.fail_at = fail_at
        self.bulks: list[list[str]] = []  # the urns of each bulk, in the order sent

    def bulk(self, items: list[Any]) -> list[Any]:
        from auditor.errors import BackendUnavailable

        self.bulks.append(sorted({i.urn for i in items}))
        if len(self.bulks) == self.fail_at:
            raise BackendUnavailable("search cluster gone")
        return []

    def refresh_written(self) -> None:
        pass


def _reindexer(store: FakeStore, writer: FailingWriter, ck: Checkpoint, path: Path) -> Any:
    from fakes import FakeSearch

    from auditor.platforms.datahub.naming import entity_index, graph_index, system_metadata_index
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.rebuild.datahub.reindex import Reindexer

    names = (entity_index("dataset", ""), system_metadata_index(""), graph_index(""))
    search = FakeSearch({name: {} for name in names})
    return Reindexer(store, search, writer, Registry.load(), ck, path, batch=2)  # type: ignore[arg-type]


def test_a_reindex_passes_each_batch_in_order_once_its_bulk_returned(tmp_path: Path) -> None:
    urns = [f"urn:li:dataset:{i}" for i in range(5)]
    store, writer = FakeStore([rows(u, tags("t")) for u in urns]), FailingWriter()
    ck = _reindexer(store, writer, Checkpoint("reindex", "x"), tmp_path / "ck.json").run(urns)
    assert writer.bulks == [urns[0:2], urns[2:4], urns[4:5]]
    assert ck.done and ck.last_urn == urns[-1] and ck.counts["entities"] == 5 and ck.touched == urns


def test_a_reindex_of_a_stream_of_urns_reads_it_as_it_goes(tmp_path: Path) -> None:
    """A window's urns come from its rows a page at a time: the reindex takes them batch by batch
    (a million entities are never a list), and a resumed one skips what the checkpoint passed."""
    urns = [f"urn:li:dataset:{i}" for i in range(9)]
    taken: list[str] = []
    written_when: list[int] = []  # how many urns had been taken at each bulk

    def stream() -> Iterator[str]:
        for u in urns:
            taken.append(u)
            yield u

    class Counting(FailingWriter):
        def bulk(self, items: Any) -> Any:
            written_when.append(len(taken))
            return super().bulk(items)

    store, writer = FakeStore([rows(u, tags("t")) for u in urns]), Counting()
    ck = _reindexer(store, writer, Checkpoint("reindex", "x"), tmp_path / "ck.json").run(stream())
    assert writer.bulks == [urns[0:2], urns[2:4], urns[4:6], urns[6:8], urns[8:9]]
    assert written_when[0] <= 6  # the first batch was written with at most three batches taken
    assert ck.done and ck.last_urn == urns[-1] and ck.counts["entities"] == 9
    taken.clear()
    resumed = Checkpoint("reindex", "x")
    resumed.last_urn = urns[4]
    again = FailingWriter()
    _reindexer(store, again, resumed, tmp_path / "ck2.json").run(stream())
    assert again.bulks == [urns[5:7], urns[7:9]]


def test_a_reindex_whose_bulk_fails_keeps_the_checkpoint_before_that_batch(tmp_path: Path) -> None:
    from auditor.errors import BackendUnavailable

    urns = [f"urn:li:dataset:{i}" for i in range(6)]
    store, writer = FakeStore([rows(u, tags("t")) for u in urns]), FailingWriter(fail_at=2)
    ck = Checkpoint("reindex", "x")
    with pytest.raises(BackendUnavailable, match="gone"):
        _reindexer(store, writer, ck, tmp_path / "ck.json").run(urns)
    saved = json.loads((tmp_path / "ck.json").read_text())
    # the third batch was built while the second was written, but nothing passed the second
    assert saved["last_urn"] == urns[1] and not saved["done"] and saved["touched"] == urns[:2]
    resumed = Checkpoint.load(tmp_path / "ck.json")
    assert resumed is not None
    again = FailingWriter()
    ck = _reindexer(store, again, resumed, tmp_path / "ck.json").run(urns)
    assert again.bulks == [urns[2:4], urns[4:6]] and ck.done and ck.touched == urns  # no gap


class RecordingWriter(FailingWriter):
    def __init__(self) -> None:
        super().__init__()
        self.items: list[Any] = []

    def bulk(self, items: list[Any]) -> list[Any]:
        self.items += items
        return super().bulk(items)


def test_a_reindex_deletes_what_the_rows_no_longer_imply_and_nothing_else(tmp_path: Path) -> None:
    from fakes import FakeSearch

    from auditor.platforms.datahub.naming import (
        document_id,
        edge_id,
        entity_index,
        graph_index,
        system_metadata_id,
        system_metadata_index,
    )
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.rebuild.datahub.reindex import Reindexer

    a, b, gone = "urn:li:dataset:a", "urn:li:dataset:b", "urn:li:dataset:gone"
    meta, graph, datasets = system_metadata_index(""), graph_index(""), entity_index("dataset", "")

    def edge(source: str, kind: str, destination: str) -> tuple[str, dict[str, Any]]:
        doc = {"source": {"urn": source}, "destination": {"urn": destination}, "relationshipType": kind}
        return edge_id(source, kind, destination), doc

    def sysmeta(urn: str, aspect: str) -> tuple[str, dict[str, Any]]:
        return system_metadata_id(urn, aspect), {"urn": urn, "aspect": aspect}

    indices = {
        meta: dict([sysmeta(a, "globalTags"), sysmeta(a, "ownership"), sysmeta(gone, "globalTags")]),
        graph: dict(
            [
                edge(a, "TaggedWith", "urn:li:tag:t"),  # implied by a's rows: kept (rewritten)
                edge(a, "DownstreamOf", b),  # a compared type the rows no longer imply: deleted
                edge(a, "Consumes", b),  # a type the reindex does not compare: kept
                edge(gone, "Consumes", b),  # its source's rows are gone: deleted, of any type
                edge(b, "DownstreamOf", a),  # b's stale edge, a's as destination only: deleted as b's
            ]
        ),
        datasets: {document_id(gone): {"urn": gone}},
    }
    writer = RecordingWriter()
    store = FakeStore([rows(a, tags("t")), rows(b, tags("t"))])
    reindexer = Reindexer(
        store, FakeSearch(indices), writer, Registry.load(), Checkpoint("reindex", "x"), tmp_path / "ck.json"
    )  # type: ignore[arg-type]
    reindexer.run([a, b, gone])
    deleted = {(i.index, i.doc_id, i.urn) for i in writer.items if i.op == "delete"}
    assert deleted == {
        (meta, system_metadata_id(a, "ownership"), a),
        (meta, system_metadata_id(gone, "globalTags"), gone),
        (graph, edge_id(a, "DownstreamOf", b), a),
        (graph, edge_id(gone, "Consumes", b), gone),
        (graph, edge_id(b, "DownstreamOf", a), b),
        (datasets, document_id(gone), gone),
    }
    written = {(i.index, i.doc_id) for i in writer.items if i.op == "index"}
    assert (graph, edge_id(a, "TaggedWith", "urn:li:tag:t")) in written
    assert (meta, system_metadata_id(b, "globalTags")) in written


def test_a_reindex_keeps_what_no_rule_derives_and_clears_what_the_rules_prove_absent(tmp_path: Path) -> None:
    """A custom model plugin's aspect (`acmeTeamInfo`, unknown to the registry) and its field in the
    doc (`acmeTeam`): the rewrite keeps both the field and the aspect's system-metadata doc, and
    names the field among what it kept unchecked. A field the rules know and prove absent (`tags`:
    no `globalTags` row) is still cleared: that is what a left-behind field needs."""
    from fakes import FakeSearch

    from auditor.platforms.datahub.naming import (
        document_id,
        entity_index,
        graph_index,
        system_metadata_id,
        system_metadata_index,
    )
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.rebuild.datahub.documents import KEPT, kept_note
    from auditor.rebuild.datahub.reindex import Reindexer

    a = "urn:li:dataset:a"
    meta, datasets = system_metadata_index(""), entity_index("dataset", "")
    plugin = system_metadata_id(a, "acmeTeamInfo")
    stored = {"urn": a, "name": "old", "tags": ["urn:li:tag:gone"], "acmeTeam": "platform-infra"}
    search = FakeSearch(
        {datasets: {document_id(a): stored}, meta: {plugin: {"urn": a, "aspect": "acmeTeamInfo"}}}
    )
    search.docs[graph_index("")] = {}
    writer = ConditionalWriter(search)
    store = FakeStore(
        [rows(a, {"datasetProperties": {"name": "new"}, "acmeTeamInfo": {"team": "platform-infra"}})]
    )
    ck = Checkpoint("reindex", "x")
    Reindexer(store, search, writer, Registry.load(), ck, tmp_path / "ck.json").run([a])  # type: ignore[arg-type]
    doc = search.docs[datasets][document_id(a)]
    assert doc["name"] == "new" and doc["acmeTeam"] == "platform-infra" and "tags" not in doc, doc
    assert plugin in search.docs[meta] and not ck.failed
    assert ck.counts[KEPT + "acmeTeam"] == 1 and len([k for k in ck.counts if k.startswith(KEPT)]) == 1
    assert "acmeTeam (1 entity)" in (kept_note(ck.counts) or "")


def test_an_entity_doc_whose_stored_one_cannot_be_read_is_not_written_over(tmp_path: Path) -> None:
    """The stored doc is what a rewrite keeps the plugin's fields from: unread, the entity doc is
    not written (a failure, said why), rather than written whole without them."""
    from fakes import FakeSearch

    from auditor.errors import BackendUnavailable
    from auditor.platforms.datahub.naming import document_id, entity_index, graph_index, system_metadata_index
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.rebuild.datahub.reindex import Reindexer

    a, datasets = "urn:li:dataset:a", entity_index("dataset", "")
    search = FakeSearch(
        {datasets: {document_id(a): {"urn": a, "acmeTeam": "x"}}, system_metadata_index(""): {}}
    )
    search.docs[graph_index("")] = {}

    def unreadable(index: str, ids: Any) -> Any:
        raise BackendUnavailable("read timed out")

    search.get_versioned = unreadable  # type: ignore[method-assign]
    writer, ck = RecordingWriter(), Checkpoint("reindex", "x")
    store = FakeStore([rows(a, {"datasetProperties": {"name": "new"}})])
    Reindexer(store, search, writer, Registry.load(), ck, tmp_path / "ck.json").run([a])  # type: ignore[arg-type]
    assert not any(i.index == datasets for i in writer.items)
    assert any(i.index == system_metadata_index("") for i in writer.items)  # the rest is written
    assert ck.failed == [a] and "could not be read" in ck.why[a]


class ConditionalWriter(RecordingWriter):
    """Writes into a FakeSearch as an engine does: a write on a condition the stored doc no longer
    meets (another seq_no, or `create` over a doc) is refused with 409, nothing written."""

    def __init__(self, search: Any) -> None:
        super().__init__()
        self.search = search

    def bulk(self, items: list[Any]) -> list[Any]:
        from auditor.backends.index_writer import BulkFailure

        super().bulk(items)
        refused = []
        for item in items:
            docs = self.search.docs.setdefault(item.index, {})
            at = self.search.versions.get((item.index, item.doc_id), 1)
            if (item.op == "create" and item.doc_id in docs) or (
                item.if_seq is not None and (item.doc_id not in docs or item.if_seq != (at, 1))
            ):
                refused.append(BulkFailure(item, 409, "version_conflict_engine_exception"))
            elif item.op == "delete":
                docs.pop(item.doc_id, None)
            else:
                docs[item.doc_id] = item.doc
                self.search.versions[(item.index, item.doc_id)] = at + 1
        return refused


def test_an_entity_doc_the_consumer_writes_after_the_read_is_read_and_built_again(tmp_path: Path) -> None:
    from fakes import FakeSearch

    from auditor.platforms.datahub.naming import document_id, entity_index, graph_index, system_metadata_index
    from auditor.platforms.datahub.registry.registry import Registry
    from auditor.rebuild.datahub.reindex import Reindexer

    a, new = "urn:li:dataset:a", "urn:li:dataset:new"
    datasets = entity_index("dataset", "")
    search = FakeSearch(
        {datasets: {document_id(a): {"urn": a, "rowCount": 1}}, system_metadata_index(""): {}}
    )
    search.docs[graph_index("")] = {}
    read = search.get_versioned

    def consumer_writes_after_the_read(index: str, ids: Any) -> Any:
        found = read(index, ids)
        if index == datasets and search.versions.get((datasets, document_id(a)), 1) == 1:
            search.docs[datasets][document_id(a)] = {"urn": a, "rowCount": 2}  # a newer profile
            search.versions[(datasets, document_id(a))] = 2
            search.docs[datasets][document_id(new)] = {"urn": new, "rowCount": 7}  # created meanwhile
        return found

    search.get_versioned = consumer_writes_after_the_read  # type: ignore[method-assign]
    writer = ConditionalWriter(search)
    store = FakeStore([rows(a, tags("t")), rows(new, tags("t"))])
    ck = Checkpoint("reindex", "x")
    Reindexer(store, search, writer, Registry.load(), ck, tmp_path / "ck.json").run([a, new])  # type: ignore[arg-type]
    doc = search.docs[datasets][document_id(a)]
    assert doc["rowCount"] == 2 and doc["tags"] == ["urn:li:tag:t"]  # the consumer's value kept, ours written
    assert search.docs[datasets][document_id(new)]["rowCount"] == 7  # a `create` did not replace it
    assert ck.counts["changed_since_read"] == 2 and ck.counts["rewritten_again"] == 2 and not ck.failed
    assert "still_changing" not in ck.counts


def test_what_one_query_excludes_by_id_stays_under_the_cap() -> None:
    from auditor.rebuild.datahub.stored import groups as _groups

    keep = {"a": {"1", "2"}, "b": {"3"}, "c": {"4", "5", "6"}, "d": set(), "e": {"7"}}
    assert _groups(keep, 3) == [["a", "b"], ["c", "d"], ["e"]]
    assert _groups({"a": {"1", "2", "3", "4"}, "b": set()}, 3) == [["a"], ["b"]]  # too many alone
    assert _groups({}, 3) == []


def test_a_bulk_line_is_valid_utf8_json_also_for_what_orjson_refuses() -> None:
    from auditor.backends.bulk_json import dumps as _json

    plain = {"urn": "urn:li:dataset:é", "n": 1, "f": 0.5}
    assert _json(plain) == '{"urn":"urn:li:dataset:é","n":1,"f":0.5}'.encode()
    odd = {"big": 2**70, "lone": "a\udc80b", 1: "int key"}  # orjson refuses each of these
    line = _json(odd)
    assert json.loads(line.decode("utf-8")) == {"big": 2**70, "lone": "a\udc80b", "1": "int key"}
