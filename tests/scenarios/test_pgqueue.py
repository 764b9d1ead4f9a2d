"""DataHub on pgQueue (no Kafka): a dropped message, a stalled consumer and a backlog, judged from
the PostgreSQL queue tables and repaired (replay into the queue, reindex) to a clean re-scan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults import _datasets, _tags, backlog, drop_mcl, skip_index_write, stall
from sqlalchemy import text
from world import World

from auditor.api import rebuild, triage
from auditor.core.model import Report, Selection, Verdict
from auditor.errors import ConfigError, ConsumerNotRunning
from auditor.rebuild.request import RebuildRequest
from sandbox.naming import MCL_VERSIONED_TOPIC
from sandbox.pgqueue import stable_partition

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    # a DataHub 1.7.0 deployment: its upgrade rows name the release (no warning that it is unknown)
    w = World("postgres", "opensearch", tmp_path_factory.mktemp("pgq"), transport="pgqueue", release="1.7.0")
    yield w
    w.close()


def verdicts(report: Report, urns: set[str]) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {u: set() for u in urns}
    for c in report.findings:
        assert c.finding.urn in urns, f"a finding on a urn no fault touched: {c}"
        out[c.finding.urn].add((c.verdict.value, c.subkind))
    return out


def clean(world: World) -> None:
    world.consumer.reset_faults()
    assert world.consumer.drain(60)
    report = world.scan()
    assert report.exit_code == 0 and not report.findings, [str(c) for c in report.findings]


def test_a_dropped_message_is_never_published_and_a_replay_into_the_queue_repairs_it(
    world: World, tmp_path: Path
) -> None:
    urns = drop_mcl(world, 0) | drop_mcl(world, 1)
    report = world.scan()
    assert "pgqueue" in report.sources and not any("weaker" in w for w in report.warnings), report.warnings
    for seen in verdicts(report, urns).values():
        assert ("diverged", "event_never_published") in seen, seen
    first, second = sorted(urns)
    traced = triage(world.settings(), first, settle=0.5)  # the triage reads the same queue
    why = [(c.verdict.value, c.subkind, c.evidence.reason) for c in traced.findings]
    assert traced.verdict == "diverged", why
    assert "event_never_published" in {c.subkind for c in traced.findings}, why
    by_urn = {u: [c for c in report.findings if c.finding.urn == u] for u in urns}
    replayed = rebuild(
        world.settings(),
        RebuildRequest("replay", findings=by_urn[first], apply=True, wait_seconds=60, state_dir=tmp_path),
    )
    assert replayed.consumer_caught_up and not replayed.failed and not replayed.still_wrong
    with world.engine.connect() as conn:  # what GMS's producer would have written
        row = conn.execute(
            text(
                "SELECT m.payload_compression, ct.mime, m.priority, m.headers IS NULL, m.enqueue_seq "
                "FROM queue.metadata_queue_message m JOIN queue.metadata_queue_topic t ON t.id = m.topic_id "
                "JOIN queue.metadata_queue_content_type ct ON ct.id = m.content_type_id "
                "WHERE t.topic_name = :t AND m.routing_key = :k ORDER BY m.enqueue_seq DESC LIMIT 1"
            ),
            {"t": MCL_VERSIONED_TOPIC, "k": first},
        ).one()
    assert row[:4] == (1, "application/vnd.confluent.avro+binary", 5, True), row
    reindexed = rebuild(
        world.settings(),
        RebuildRequest("reindex", findings=by_urn[second], apply=True, state_dir=tmp_path),
    )
    assert not reindexed.failed and not reindexed.still_wrong
    clean(world)


def test_a_stalled_consumer_is_stalled(world: World) -> None:
    urns = stall(world)
    report = world.scan()
    for seen in verdicts(report, urns).values():
        assert any(v == Verdict.STALLED.value for v, _ in seen), seen
    assert report.exit_code == 4
    assert triage(world.settings(), sorted(urns)[0], settle=0.5).verdict == Verdict.STALLED.value
    clean(world)


def test_a_backlog_is_in_flight_with_an_eta(world: World) -> None:
    urns = backlog(world)
    report = world.scan(sample_window=3.0)
    assert report.exit_code == 0
    waiting = [c for c in report.findings if c.verdict == Verdict.IN_FLIGHT]
    assert waiting and all(c.finding.urn in urns for c in report.findings)
    assert any(c.evidence.eta_seconds is not None for c in waiting), [str(c) for c in waiting]
    clean(world)


def test_a_replay_into_a_queue_group_whose_heartbeat_stopped_is_refused_until_it_runs_again(
    world: World, tmp_path: Path
) -> None:
    clean(world)
    urn = _datasets(world, 4)[3]  # one no other test of the module writes
    world.consumer.skip_index_write({urn})
    world.writer.write(urn, "globalTags", _tags("skipped while the replay waits"))
    assert world.consumer.drain(60)
    world.consumer.reset_faults()  # the cause is fixed; what it left behind is not
    report = world.scan()
    assert {c.finding.urn for c in report.findings if c.verdict == Verdict.DIVERGED} == {urn}, report.findings
    queued = text("SELECT count(*) FROM queue.metadata_queue_message")
    world.consumer.stop()  # no poll cycle, no heartbeat: the consumer is gone
    try:
        with world.engine.begin() as conn:  # its last heartbeat, older than a live one's minute
            conn.execute(
                text(
                    "UPDATE queue.metadata_queue_consumer_registration "
                    "SET last_heartbeat_at = now() - interval '5 minutes'"
                )
            )
            before = conn.execute(queued).scalar_one()
        asked = RebuildRequest(
            "replay", findings=report.findings, apply=True, wait_seconds=60, state_dir=tmp_path
        )
        with pytest.raises(ConsumerNotRunning, match="no running member") as refused:
            rebuild(world.settings(), asked)
        with world.engine.connect() as conn:
            after = conn.execute(queued).scalar_one()
    finally:
        world.consumer.start()  # heartbeats again
    assert after == before and "rebuild reindex" in (refused.value.hint or ""), (before, after)
    replayed = rebuild(world.settings(), asked)
    assert replayed.consumer_caught_up and not replayed.still_wrong and replayed.exit_code == 0
    clean(world)


def test_a_change_whose_message_retention_deleted_is_diverged_with_retention_said(
    world: World, tmp_path: Path
) -> None:
    clean(world)
    urns = skip_index_write(world)  # consumed, not applied: its message is then purged
    (urn,) = urns
    _, count = world.queue.topic(MCL_VERSIONED_TOPIC)
    later = [u for u in (e.urn for e in world.of_type("dataset")) if u != urn]
    later = [u for u in later if stable_partition(u, count) == stable_partition(urn, count)][:2]
    for u in later:  # later messages on its partition: it is not the one retention keeps
        world.writer.write(u, "globalTags", {"tags": [{"tag": "urn:li:tag:after"}]})
    assert world.consumer.drain(60) and world.queue.apply_retention() > 0
    report = world.scan()
    (finding,) = [c for c in report.findings if c.finding.urn in urns][:1]
    assert finding.verdict == Verdict.DIVERGED and "retention" in finding.evidence.reason, finding
    assert {c.finding.urn for c in report.findings} == urns
    outcome = rebuild(
        world.settings(),
        RebuildRequest("reindex", findings=report.findings, apply=True, state_dir=tmp_path),
    )
    assert not outcome.failed and not outcome.still_wrong
    clean(world)


def test_retention_that_left_the_consumer_past_the_log_refuses_a_replay_and_a_reindex_repairs(
    world: World, tmp_path: Path
) -> None:
    clean(world)
    world.queue.apply_retention()  # aggressive retention: what every group passed
    with world.engine.begin() as conn:  # then the last rows go too (a partition dropped by age)
        conn.execute(text("DELETE FROM queue.metadata_queue_message"))
    urns = drop_mcl(world, 2)
    report = world.scan()
    assert any("STUCK_AHEAD" in w for w in report.warnings), report.warnings
    with pytest.raises(ConfigError, match="replay impossible") as refused:
        rebuild(
            world.settings(),
            RebuildRequest("replay", findings=report.findings, apply=True, state_dir=tmp_path),
        )
    assert "reindex" in (refused.value.hint or "")
    outcome = rebuild(
        world.settings(),
        RebuildRequest("reindex", selection=Selection(urns=tuple(urns)), apply=True, state_dir=tmp_path),
    )
    assert not outcome.failed and not outcome.still_wrong
    with world.engine.begin() as conn:  # DataHub's remedy: the group's offset reset to the log
        conn.execute(text("UPDATE queue.metadata_queue_consumer_offset SET offset_value = 0"))
    time.sleep(0.5)
    report = world.scan()
    assert report.exit_code == 0 and not report.findings, [str(c) for c in report.findings]


def test_the_scan_needs_select_on_four_queue_tables_and_says_which_grant_is_missing(world: World) -> None:
    from pydantic import SecretStr
    from sqlalchemy.engine import make_url

    from auditor.api import scan
    from auditor.errors import AccessRefused

    name, password = f"pgq_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    url = make_url(world.endpoints.pg_url)
    admin = world.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    tables = [
        f"queue.metadata_queue_{t}" for t in ("topic", "message", "consumer_offset", "consumer_registration")
    ]
    try:
        admin.execute(text(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'"))
        admin.execute(text(f"GRANT CONNECT ON DATABASE {url.database} TO {name}"))
        admin.execute(text(f"GRANT USAGE ON SCHEMA public, queue TO {name}"))
        admin.execute(text(f"GRANT SELECT ON metadata_aspect_v2 TO {name}"))
        ro = url.set(username=name, password=password).render_as_string(hide_password=False)
        settings = world.settings().model_copy(update={"store_url": SecretStr(ro)})
        with pytest.raises(AccessRefused, match="permission denied") as refused:
            scan(settings, Selection(entity_types=("tag",)))
        assert "grant SELECT" in (refused.value.hint or "")
        admin.execute(text(f"GRANT SELECT ON {', '.join(tables)} TO {name}"))
        report = scan(settings, Selection(entity_types=("tag",)))
        assert report.exit_code == 0 and report.partitions and not report.warnings, report.warnings
        bad = url.set(username=name, password="not-" + password).render_as_string(hide_password=False)
        with pytest.raises(AccessRefused, match="password authentication failed"):  # [pgqueue] url's own
            scan(
                settings.model_copy(update={"pgqueue_url": SecretStr(bad)}), Selection(entity_types=("tag",))
            )
    finally:
        admin.execute(text(f"REVOKE ALL ON {', '.join(tables)}, metadata_aspect_v2 FROM {name}"))
        admin.execute(text(f"REVOKE ALL ON SCHEMA public, queue FROM {name}"))
        admin.execute(text(f"REVOKE ALL ON DATABASE {url.database} FROM {name}"))
        admin.execute(text(f"DROP ROLE {name}"))
        admin.close()


def cli(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    e = world.endpoints
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUDITOR_", "KAFKA_", "DATAHUB_"))}
    env.update(
        DATAHUB_MESSAGING_TRANSPORT="pgqueue",
        AUDITOR_STORE_URL=e.pg_url,
        AUDITOR_SEARCH_URL=e.opensearch,
        AUDITOR_SCHEMA_REGISTRY_URL=e.registry,
        AUDITOR_INDEX_PREFIX=world.prefix,
    )
    return subprocess.run(
        [sys.executable, "-m", "auditor.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_the_probe_times_a_canary_through_the_queue_and_the_watch_is_refused(world: World) -> None:
    done = cli(world, "probe", "--apply", "--via-store", "--slo", "30", "--interval", "0.2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["within_slo"] and result["publish_seconds"] is not None, result  # found in the queue
    gone = cli(world, "probe", "--apply", "--via-store", "--remove")
    assert gone.returncode == 0, gone.stderr
    watch = cli(world, "watch", "--group", "auditor-watch")
    assert watch.returncode == 2 and "not supported on pgQueue" in watch.stderr, watch.stderr
    assert world.consumer.drain(60)
