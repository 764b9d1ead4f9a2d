"""A MAE-consumer look-alike: group `generic-mae-consumer-job-client`, both MCL topics."""

# It decodes each Avro MCL, applies it (IndexUpdater), then commits the batch's offsets
# synchronously. Fault knobs can be flipped while it runs: pause/resume, stall, rate,
# skip_index_write.

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from sandbox.avro import MclCodec
from sandbox.endpoints import Endpoints
from sandbox.indexer import IndexUpdater
from sandbox.mcl import ChangeLog, read_mcl
from sandbox.naming import MAE_CONSUMER_GROUP, MCL_TOPICS
from sandbox.search import SearchStore, as_store, connect
from sandbox.topics import CLIENT_LOG, OFFSET_UNSET, ensure_topics, group_lag

log = logging.getLogger(__name__)

SkipPredicate = Callable[[str, str], bool]  # (urn, aspect name) -> skip the entity doc write?
COMMIT_INTERVAL_S = 1.0  # a throttled batch still commits at least this often


@dataclass
class ConsumerStats:
    """Counters since start (read them from any thread)."""

    consumed: int = 0
    applied: int = 0
    skipped_index_writes: int = 0
    unchanged: int = 0
    failed_writes: int = 0  # bulk items the search backend rejected (dropped, like DataHub)
    errors: int = 0
    commits: int = 0
    last_error: str | None = None
    committed: dict[tuple[str, int], int] = field(default_factory=dict)


def _position(msg: Message) -> tuple[str, int, int]:
    """(topic, partition, offset) of a fetched message."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    assert topic is not None and partition is not None and offset is not None
    return topic, partition, offset


class MaeConsumer:
    """MCL -> search indices, with fault knobs. Only one instance per group should run."""

    def __init__(
        self,
        search: SearchStore | str | Any = "opensearch",
        endpoints: Endpoints | None = None,
        *,
        group_id: str = MAE_CONSUMER_GROUP,
        topics: Iterable[str] = MCL_TOPICS,
        index_prefix: str = "",
        batch_size: int = 200,
        poll_timeout: float = 0.2,
        consumer_config: dict[str, Any] | None = None,
    ) -> None:
        self.endpoints = endpoints or Endpoints.from_env()
        self.store = connect(search, self.endpoints) if isinstance(search, str) else as_store(search)
        self.updater = IndexUpdater(self.store, index_prefix)
        self.group_id = group_id
        self.topics = tuple(topics)
        self.batch_size = batch_size
        self.poll_timeout = poll_timeout
        self.codec = MclCodec(self.endpoints.registry)
        self.config = {
            "bootstrap.servers": self.endpoints.kafka,
            "group.id": group_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 1000,
            "enable.partition.eof": False,
            "logger": CLIENT_LOG,
            **(consumer_config or {}),
        }
        self.stats = ConsumerStats()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._assigned = threading.Event()
        self._thread: threading.Thread | None = None
        self._paused = False
        self._stalled = False
        self._rate: float | None = None
        self._commit_every = COMMIT_INTERVAL_S
        self._skip: SkipPredicate | None = None
        self._next_slot = 0.0

    # ------------------------------------------------------------------ lifecycle

    def start(self, *, wait_assigned: bool = True, timeout: float = 30.0) -> MaeConsumer:
        """Run the consume loop in a background thread (waits for the group assignment)."""
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("consumer already running")
        ensure_topics(self.endpoints.kafka)
        self._stop.clear()
        self._assigned.clear()
        self._thread = threading.Thread(target=self._run, name=f"mae-{self.group_id}", daemon=True)
        self._thread.start()
        if wait_assigned and not self._assigned.wait(timeout):
            self.stop()
            raise TimeoutError(f"no partitions assigned to {self.group_id} within {timeout}s")
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Leave the group and end the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def run(self) -> None:
        """Consume in the calling thread until `stop()` (CLI use)."""
        ensure_topics(self.endpoints.kafka)
        self._stop.clear()
        self._run()

    @property
    def running(self) -> bool:
        """True while the consume thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> MaeConsumer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until the group's committed offsets reach the end offsets of every partition."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                lags = group_lag(self.endpoints.kafka, self.group_id, self.topics)
            except KafkaException:  # a broker just restarted ("leader epoch is newer"): wait it out
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
                continue
            if all(p.committed >= p.end or (p.committed == OFFSET_UNSET and p.end == 0) for p in lags):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    # ------------------------------------------------------------------ fault knobs

    def pause(self) -> None:
        """Stop fetching (Kafka pause): nothing is applied or committed until `resume()`."""
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        """Undo `pause()` and `stall()`."""
        with self._lock:
            self._paused = False
            self._stalled = False

    def stall(self) -> None:
        """Stay in the group and keep polling, but neither apply nor commit (Burrow's STALL)."""
        with self._lock:
            self._stalled = True

    def rate(self, per_second: float | None, commit_every: float = COMMIT_INTERVAL_S) -> None:
        """Throttle to `per_second` messages per second (None: unthrottled), committing what is
        done every `commit_every` seconds (Kafka's auto-commit cadence is 5 s)."""
        with self._lock:
            self._rate = per_second if per_second else None
            self._commit_every = commit_every
            self._next_slot = 0.0

    def skip_index_write(self, which: SkipPredicate | Iterable[str] | None) -> None:
        """Consume and commit, but do not write the entity doc (DataHub's log-and-skip).

        `which`: a set of urns, a predicate `(urn, aspect_name) -> bool`, or None to clear.
        """
        if which is None or callable(which):
            predicate = which
        else:
            urns = frozenset(which)

            def predicate(urn: str, _aspect: str) -> bool:
                return urn in urns

        with self._lock:
            self._skip = predicate

    def reset_faults(self) -> None:
        """Back to a healthy consumer."""
        self.resume()
        self.rate(None)
        self.skip_index_write(None)

    @property
    def paused(self) -> bool:
        """True while paused."""
        return self._paused

    @property
    def stalled(self) -> bool:
        """True while stalled."""
        return self._stalled

    # ------------------------------------------------------------------ the loop

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._assigned.set()

    def _run(self) -> None:
        consumer = Consumer(self.config)
        consumer.subscribe(list(self.topics), on_assign=self._on_assign)
        kafka_paused: list[TopicPartition] = []
        try:
            while not self._stop.is_set():
                if self._paused:
                    assignment = consumer.assignment()
                    if assignment and {(tp.topic, tp.partition) for tp in assignment} != {
                        (tp.topic, tp.partition) for tp in kafka_paused
                    }:
                        kafka_paused = assignment
                        consumer.pause(kafka_paused)
                    stray = consumer.poll(self.poll_timeout)  # keeps the membership alive
                    if stray is not None and stray.error() is None:
                        self._rewind(consumer, [stray])  # prefetched before the pause
                    continue
                if kafka_paused:
                    consumer.resume(kafka_paused)
                    kafka_paused = []
                messages = consumer.consume(self.batch_size, self.poll_timeout)
                if messages:
                    self._process(consumer, messages)
        finally:
            consumer.close()

    def _process(self, consumer: Consumer, messages: list[Message]) -> None:
        done: dict[tuple[str, int], int] = {}
        last_commit = time.monotonic()
        for index, msg in enumerate(messages):
            if self._stop.is_set() or self._paused or self._stalled:
                self._rewind(consumer, messages[index:])
                if self._stalled:
                    time.sleep(self.poll_timeout)
                break
            error = msg.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.warning("consumer error: %s", error)
                continue
            if not self._throttle():
                self._rewind(consumer, messages[index:])
                break
            self._handle(msg)
            topic, partition, offset = _position(msg)
            done[(topic, partition)] = offset + 1
            if self._rate and time.monotonic() - last_commit >= self._commit_every:
                self._commit(consumer, done)
                done = {}
                last_commit = time.monotonic()
        self._commit(consumer, done)

    def _handle(self, msg: Message) -> None:
        self.stats.consumed += 1
        try:
            value = msg.value()
            if value is None:
                return
            change: ChangeLog = read_mcl(self.codec.decode(_position(msg)[0], value))
            skip = self._skip
            write_doc = not (skip is not None and skip(change.urn, change.aspect_name))
            applied = self.updater.apply(change, write_entity_doc=write_doc, flush=False)
            self.stats.applied += 1
            if applied.entity_doc == "skipped":
                self.stats.skipped_index_writes += 1
            elif applied.entity_doc == "unchanged":
                self.stats.unchanged += 1
        except Exception as exc:  # DataHub logs a failed MCL and moves on
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("failed to apply MCL at %s[%d]@%d", msg.topic(), msg.partition(), msg.offset())

    def _throttle(self) -> bool:
        """Sleep until the next rate slot; False if a knob or stop interrupted the wait."""
        rate = self._rate
        if not rate:
            return True
        now = time.monotonic()
        slot = max(self._next_slot, now)
        while time.monotonic() < slot:
            if self._stop.is_set() or self._paused or self._stalled:
                return False
            time.sleep(min(0.05, slot - time.monotonic()))
        self._next_slot = slot + 1.0 / rate
        return True

    @staticmethod
    def _rewind(consumer: Consumer, unprocessed: list[Message]) -> None:
        """Seek each partition back to its first unprocessed message."""
        first: dict[tuple[str, int], int] = {}
        for msg in unprocessed:
            if msg.error() is None:
                topic, partition, offset = _position(msg)
                first.setdefault((topic, partition), offset)
        for (topic, partition), offset in first.items():
            consumer.seek(TopicPartition(topic, partition, offset))

    def _commit(self, consumer: Consumer, done: dict[tuple[str, int], int]) -> None:
        """Flush the batch's index writes (failures are logged and dropped), then commit."""
        try:
            self.stats.failed_writes += self.updater.flush()
        except Exception as exc:  # the search backend is down: the batch's writes are lost
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("bulk write failed; skipping the batch's index writes")
        if not done:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in done.items()]
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:  # not committed: these messages will be seen again
            self.stats.errors += 1
            self.stats.last_error = f"commit failed: {exc}"
            log.warning("offset commit failed: %s", exc)
            return
        self.stats.commits += 1
        self.stats.committed.update(done)
