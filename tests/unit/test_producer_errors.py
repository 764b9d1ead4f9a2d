"""How a fatal error of the Kafka producer becomes one clear line: whichever of the three shapes
confluent-kafka gives it (a KafkaException; a SystemError caused by one; a SystemError with no
exception at all, when only librdkafka's FATAL log line says why)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from auditor.backends.connect import kafka_config
from auditor.errors import BackendUnavailable
from auditor.platforms.datahub.backends.producer import ClientLog, MclProducer, producer_config
from auditor.settings import Settings

DENIED = "Broker: Cluster authorization failed: Failed to acquire idempotence PID from broker b:9092/1"


def producer() -> MclProducer:
    p = MclProducer.__new__(MclProducer)  # no broker: only the error handling is under test
    p.topic, p.description, p.log = "MetadataChangeLog_Versioned_v1", "b:9092", ClientLog()
    return p


def raises(exc: BaseException, cause: BaseException | None = None):
    def call(timeout: float) -> int:
        if cause is not None:
            raise exc from cause
        raise exc

    return call


def fatal() -> KafkaException:
    return KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED, DENIED, fatal=True))


@pytest.mark.parametrize("shape", ["exception", "caused", "bare"])
def test_a_refused_producer_id_is_one_line_with_the_hint(shape: str) -> None:
    p = producer()
    p.log.log(logging.CRITICAL, "%s [%s] %s", "FATAL", "rdkafka#producer-1", f"Fatal error: {DENIED}")
    call = {
        "exception": raises(fatal()),
        "caused": raises(SystemError("<method 'append'> returned a result with an exception set"), fatal()),
        "bare": raises(SystemError("<built-in method flush> returned NULL without setting an exception")),
    }[shape]
    with pytest.raises(BackendUnavailable) as caught:
        p._client(call, 1.0)
    assert "Cluster authorization failed" in str(caught.value), caught.value
    assert caught.value.hint and "Write on the topic MetadataChangeLog_Versioned_v1" in caught.value.hint


def test_a_bare_system_error_without_a_fatal_line_still_ends_in_one_line() -> None:
    with pytest.raises(BackendUnavailable) as caught:
        producer()._client(raises(SystemError("returned NULL without setting an exception")), 1.0)
    assert "the Kafka client failed" in str(caught.value) and caught.value.hint is None


def test_a_failing_callback_of_ours_is_not_called_the_brokers_refusal() -> None:
    with pytest.raises(SystemError):
        producer()._client(raises(SystemError("callback failed"), TypeError("a bug of ours")), 1.0)


def test_lines_below_fatal_pass_through_and_are_not_kept(caplog: pytest.LogCaptureFixture) -> None:
    log = ClientLog()
    with caplog.at_level(logging.DEBUG, logger="auditor.kafka"):
        log.log(logging.WARNING, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "Disconnected")
    assert log.fatal is None and "Disconnected" in caplog.text


def test_the_fatal_line_reaches_the_client_log_even_when_the_connection_brings_a_logger() -> None:
    """The connection's settings carry a logger of their own; it must not displace the one that
    keeps the fatal line (it did: the bare SystemError then said nothing of why)."""
    log = ClientLog()
    conf = producer_config(kafka_config(Settings(kafka_bootstrap="b:9092")), log)
    assert conf["logger"] is log and conf["enable.idempotence"] is True and conf["acks"] == "all"
    assert conf["bootstrap.servers"] == "b:9092"
