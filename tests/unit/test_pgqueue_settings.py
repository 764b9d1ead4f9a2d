"""pgQueue's settings: DataHub's DATAHUB_MESSAGING_TRANSPORT read (either case), `config init`
writing `transport` and [pgqueue] from it, and the CRC32 routing DataHub's queue uses."""

from __future__ import annotations

import pytest

from auditor.errors import ConfigError
from auditor.platforms.datahub.backends.pgqueue import crc32_partition
from auditor.platforms.datahub.config.init import plan, render
from auditor.settings import load_settings
from sandbox.pgqueue import stable_partition


@pytest.mark.parametrize("value", ["pgqueue", "PGQUEUE", " PgQueue "])
def test_datahub_s_transport_variable_selects_the_queue(value: str) -> None:
    s = load_settings(env={"DATAHUB_MESSAGING_TRANSPORT": value, "DATAHUB_PGQUEUE_SCHEMA": "q2"})
    assert (s.transport, s.pgqueue_schema, s.pgqueue_table_prefix) == ("pgqueue", "q2", "metadata_queue")
    assert load_settings(env={}).transport == "kafka"
    assert (
        load_settings(env={"DATAHUB_MESSAGING_TRANSPORT": "pgqueue", "AUDITOR_TRANSPORT": "kafka"}).transport
        == "kafka"
    )


@pytest.mark.parametrize(
    "env", [{"AUDITOR_TRANSPORT": "rabbitmq"}, {"DATAHUB_PGQUEUE_SCHEMA": "queue; drop table x"}]
)
def test_a_bad_transport_or_schema_name_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError):
        load_settings(env=env)


def test_config_init_writes_the_transport_and_the_queue_s_names(tmp_path) -> None:
    env = {
        "DATAHUB_MESSAGING_TRANSPORT": "pgqueue",
        "DATAHUB_PGQUEUE_TABLE_PREFIX": "mq",
        "EBEAN_DATASOURCE_URL": "jdbc:postgresql://pg:5432/datahub",
        "KAFKA_BOOTSTRAP_SERVER": "broker:9092",
    }
    path = tmp_path / "auditor.toml"
    path.write_text(render(plan(env)))
    s = load_settings(path, env={})
    assert (s.transport, s.pgqueue_table_prefix, s.pgqueue_schema) == ("pgqueue", "mq", "queue")
    assert s.kafka_bootstrap is None  # no Kafka on pgQueue: [kafka] commented out
    assert load_settings(path.write_text(render(plan({}))) and path, env={}).transport == "kafka"


def test_routing_is_datahub_s_crc32_in_the_sandbox_and_the_auditor() -> None:
    assert crc32_partition("123456789", 1000) == 0xCBF43926 % 1000  # CRC-32's check value
    for urn in ("urn:li:corpuser:datahub", "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)", "ü"):
        for n in (1, 2, 7):
            assert crc32_partition(urn, n) == stable_partition(urn, n)
