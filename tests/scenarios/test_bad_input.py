"""Bad input from every side, broken by the test itself: a 10 MiB aspect, documents that are not
DataHub's (no urn, a number or a list for a urn), messages on the change log that are not Avro
or name an unknown schema. The scan reports what it cannot use, finishes, and judges the rest
right; a replay that cannot deliver an aspect reports it by urn and writes nothing else wrong."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from test_rebuild import ROOT, rebuild_cli
from world import World

from auditor.api import ScanOptions, scan, triage
from auditor.core.model import Selection, Verdict
from auditor.errors import BackendUnavailable

pytestmark = pytest.mark.integration

OPTIONS = ScanOptions(grace=300.0, settle=0.5, sample_window=1.0)
BIG = 10 * 1024 * 1024


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World("mariadb", "opensearch", tmp_path_factory.mktemp("bad-input"), n=30)
    try:
        yield w
    finally:
        w.close()


def datasets(world: World) -> list[str]:
    return [e.urn for e in world.of_type("dataset")]


def diverged(report) -> set[str]:
    return {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED}


def test_a_10_mib_aspect_is_judged_and_a_replay_reports_it_by_urn(world: World, tmp_path: Path) -> None:
    urn = datasets(world)[0]
    world.writer.write(urn, "datasetProperties", {"name": "big", "description": "x" * BIG}, drop_mcl=True)
    time.sleep(0.6)
    report = scan(world.settings(), Selection(urns=(urn,)), OPTIONS)
    assert report.complete and diverged(report) == {urn}
    assert len(json.dumps([c.finding.details for c in report.findings], default=str)) < BIG  # values cut
    args, env = rebuild_cli(world, tmp_path, "replay", "--urn", urn, "--wait", "30")
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (1, 3), done.stderr[-2000:]  # not "applied and verified clean"
    outcome = json.loads(done.stdout or "null")
    assert outcome is not None, (done.returncode, done.stderr[-3000:])
    assert outcome["failed"] == [urn], outcome
    why = outcome["failed_why"][urn]
    assert "datasetProperties" in why and "too large" in why.lower(), why
    assert outcome["counts"]["produced"] >= 1  # the urn's other aspects were delivered


def test_documents_that_are_not_datahub_shaped_are_reported_and_the_scan_finishes(world: World) -> None:
    index = f"{world.prefix}_datasetindex_v2"
    junk = {
        "junk-no-urn": {"name": "a document without a urn"},
        "junk-number": {"urn": 12345, "name": "a number for a urn"},
        "junk-list": {"urn": ["urn:li:dataset:(urn:li:dataPlatform:hive,a,PROD)", "zzz"]},
    }
    orphan = "urn:li:dataset:(urn:li:dataPlatform:hive,junk,PROD)"
    world.search.put(index, "junk-number-name", {"urn": orphan, "name": 12345})
    for doc_id, doc in junk.items():
        world.search.put(index, doc_id, doc)
    world.search.refresh(index)
    report = scan(world.settings(), Selection(), OPTIONS)
    assert report.complete, report.warnings
    (warning,) = [w for w in report.warnings if "not DataHub's documents" in w]
    assert f"3 document(s) in {index}" in warning and all(doc_id in warning for doc_id in junk)
    assert not {c.finding.details.get("doc_id") for c in report.findings} & set(junk)
    assert orphan in {c.finding.urn for c in report.findings if c.finding.kind.value == "orphan_document"}


def produce_keyed(world: World, urn: str, values: tuple[bytes, ...]) -> None:
    """`values` on the versioned change log under `urn`'s key, in its partition (murmur2, as GMS:
    librdkafka's default CRC32 put them in the urn's partition only by chance, a flake); then the
    MAE-like consumer has gone past them."""
    producer = Producer({"bootstrap.servers": world.endpoints.kafka, "partitioner": "murmur2_random"})
    for value in values:
        producer.produce(world.own_kafka().get("mcl_versioned_topic", "MetadataChangeLog_Versioned_v1"),
                         key=urn.encode(), value=value)  # fmt: skip
    assert producer.flush(10) == 0
    assert world.consumer.drain(30), "the MAE-like consumer choked on the garbage"
    time.sleep(0.6)


def test_messages_that_are_not_avro_are_counted_and_the_verdicts_hold(world: World) -> None:
    """Not Confluent-framed (no magic byte, too short, empty): no MCL DataHub produced, so no
    evidence either way; the lost change is still found never published."""
    urn = datasets(world)[1]
    world.writer.write(urn, "globalTags", {"tags": [{"tag": "urn:li:tag:lost"}]}, drop_mcl=True)
    produce_keyed(world, urn, (b"not avro at all", b"\xff\xfe\x00", b""))
    report = scan(world.settings(), Selection(urns=(urn,)), OPTIONS)
    assert report.complete and diverged(report) == {urn}
    assert {c.subkind for c in report.findings} == {"event_never_published"}
    (warning,) = [w for w in report.warnings if "not Confluent-framed Avro" in w]
    assert warning.startswith("3 message(s)"), warning
    walked = triage(world.settings(), urn, settle=0.5)  # reads the urn's partition to its end
    assert walked.exit_code == 1, walked


def test_an_mcl_whose_schema_the_registry_lacks_is_matched_by_time_and_said(world: World) -> None:
    """Framed, but the registry has no such schema id: it may be the change's own MCL (nobody can
    read it, the MAE consumer neither), so it is the consumed-but-not-applied MCL, said weaker."""
    urn = datasets(world)[3]
    world.writer.write(urn, "globalTags", {"tags": [{"tag": "urn:li:tag:lost2"}]}, drop_mcl=True)
    produce_keyed(world, urn, (b"\x00\x00\x01\x86\xa0unknown-schema-id",))
    report = scan(world.settings(), Selection(urns=(urn,)), OPTIONS)
    assert report.complete and diverged(report) == {urn}
    (warning,) = [w for w in report.warnings if "could not be decoded" in w]
    assert warning.startswith("1 MCL(s)") and "schema id 100000" in warning, warning
    tags = [c for c in report.findings if c.finding.aspect == "globalTags" and c.finding.changed_at]
    assert tags and all(c.evidence.mcl_found for c in tags)
    assert all("consumed but not applied" in c.evidence.reason for c in tags), tags


def test_duplicated_version_0_rows_are_invalid_and_never_repaired(world: World) -> None:
    from sqlalchemy import text

    from auditor.core.model import RepairKind
    from sandbox.naming import ASPECT_TABLE

    urn = datasets(world)[2]
    table = f"nopk_{world.prefix}"
    with world.engine.begin() as conn:  # DataHub's table without its primary key
        conn.execute(text(f"CREATE TABLE {table} LIKE {ASPECT_TABLE}"))
        conn.execute(text(f"ALTER TABLE {table} DROP PRIMARY KEY"))
        conn.execute(text(f"INSERT INTO {table} SELECT * FROM {ASPECT_TABLE}"))
        conn.execute(
            text(
                f"INSERT INTO {table} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
                f"SELECT urn, aspect, 0, :other, systemmetadata, createdon, createdby FROM {ASPECT_TABLE} "
                "WHERE urn = :urn AND aspect = 'globalTags' AND version = 0"
            ),
            {"urn": urn, "other": json.dumps({"tags": [{"tag": "urn:li:tag:twin"}]})},
        )
    try:
        settings = world.settings().model_copy(update={"store_table": table})
        report = scan(settings, Selection(entity_types=("dataset",)), OPTIONS)
    finally:
        with world.engine.begin() as conn:
            conn.execute(text(f"DROP TABLE {table}"))
    assert report.complete
    invalid = [c for c in report.findings if c.verdict == Verdict.INVALID]
    assert [(c.finding.urn, c.finding.aspect) for c in invalid] == [(urn, "globalTags")], invalid
    assert "more than one version-0 row" in invalid[0].finding.details["reason"], invalid[0].finding.details
    assert invalid[0].finding.repairs == (RepairKind.FIX_ROW,)  # fix the row: never written
    assert report.exit_code == 1


def test_an_index_whose_urn_is_not_a_keyword_stops_the_scan_clearly(world: World) -> None:
    prefix = f"{world.prefix}x"
    index = f"{prefix}_tagindex_v2"
    world.search.ensure_index(index, {"properties": {"urn": {"type": "text"}, "name": {"type": "text"}}})
    try:
        for e in world.of_type("tag"):
            world.search.put(index, e.urn.replace(":", "%3A"), {"urn": e.urn, "name": "x"})
        world.search.refresh(index)
        settings = world.settings().model_copy(update={"index_prefix": prefix})
        with pytest.raises(BackendUnavailable) as failed:
            scan(settings, Selection(entity_types=("tag",)), OPTIONS)
    finally:
        world.search.delete_index(index)
    assert f"{index} cannot be read in urn order: urn is not a keyword field" in str(failed.value)
