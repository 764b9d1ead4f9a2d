"""The event log: change-log topics, the MAE consumer group's offsets, and MCL look-ups by urn."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from auditor.backends import kafka_clients
from auditor.backends.commit_log import COMMITS_TOPIC, commits_partition, trailing_runs
from auditor.backends.protocols import Capability
from auditor.backends.registry import Registry
from auditor.core.records import CommitRun, MclHit, OffsetSample
from auditor.errors import AccessRefused, BackendUnavailable
from auditor.platforms.datahub.backends.mcl_decoding import HitDecoding
from auditor.platforms.datahub.urns import urn_partition

log = logging.getLogger(__name__)


def _ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


TLS_ALERTS = ("alert bad certificate", "alert certificate required", "alert unknown ca",
              "alert handshake failure")  # fmt: skip
OAUTH_HINT = "check the Kafka OAUTHBEARER token (kafka.oauthbearer_token_file) or MSK IAM's identity"


class EventLog(HitDecoding):
    """Read-only access to the MCL topics: it never joins or commits for the MAE group."""

    capabilities = frozenset({Capability.READ})

    def __init__(
        self, config: dict[str, Any], registry_url: Registry | str | None = None, timeout: float = 10.0
    ) -> None:
        """`config`: librdkafka settings (`bootstrap.servers`, security options; never logged)."""
        from confluent_kafka.admin import AdminClient

        bootstrap = config.get("bootstrap.servers")
        if not bootstrap:
            raise BackendUnavailable("no Kafka bootstrap servers configured")
        self.bootstrap = str(bootstrap)
        self.timeout = timeout
        self.description = self.bootstrap
        self.refused: tuple[str, str] | None = None  # (why, hint): the login or the certificate refused
        self._partitions: dict[str, int] = {}
        self.topic_errors: dict[str, str] = {}  # why a topic's metadata was refused
        self.read_whole = True  # whether the last `_read` reached its end (not a timeout)
        conf = {"logger": logging.getLogger("auditor.kafka"), **config, "error_cb": self._client_error}
        self.consumer: Any = None
        self._conf = conf
        self._group_readers: dict[str, Any] = {}  # group -> a consumer that only reads its offsets
        try:
            self.admin = AdminClient(conf)
        except Exception as exc:  # confluent-kafka 2.13+ waits here for an OAUTHBEARER token
            why = f"Kafka {self.bootstrap}: connecting failed: {exc}"
            raise AccessRefused(why, hint=OAUTH_HINT) from None
        kafka_clients.track(self)  # closed at exit at the latest (backends/kafka_clients.py)
        try:
            self._open_consumer(conf)
            self.description += self._init_decoding(registry_url, timeout)
        except BaseException:
            self.close()  # the clients made so far destroyed now, not at the interpreter's exit
            raise

    def _open_consumer(self, conf: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                **conf,
                # a throw-away group id: we assign partitions by hand and never commit
                "group.id": f"auditor-probe-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                # bounded reads only: a fetch left waiting at a log's end (500 ms by default)
                # would hold up the next assignment's first read by as much
                "fetch.wait.max.ms": 20,
            }
        )

    def close(self) -> None:
        """Every client closed and destroyed now, not at the interpreter's exit (a destroy then
        runs librdkafka's pending callbacks into a finalizing interpreter); idempotent."""
        consumer, self.consumer, self.admin = self.consumer, None, None  # type: ignore[assignment]
        readers, self._group_readers = self._group_readers, {}
        kafka_clients.untrack(self)
        for client in [consumer, *readers.values()]:
            if client is not None:
                client.close()  # destroys its handle too

    def partition_of(self, urn: str, partitions: int) -> int:
        """The partition GMS's producer sends a urn-keyed MCL to (murmur2, Kafka's default)."""
        return urn_partition(urn, partitions)

    def _client_error(self, error: Any) -> None:
        """librdkafka tells a refused SASL login or a failed certificate check only here; the
        request that needed the connection fails as a mere transport failure (an outage)."""
        from confluent_kafka import KafkaError

        hints = {
            KafkaError._AUTHENTICATION: "check the Kafka SASL mechanism and its user name and password "
            "(or OAUTHBEARER token, or MSK IAM identity)",
            KafkaError._SSL: "check the Kafka CA file (AUDITOR_KAFKA_SSL_CA_LOCATION) and, for mTLS, the "
            "client certificate and key (AUDITOR_KAFKA_SSL_CERTIFICATE_LOCATION, _KEY_LOCATION)",
        }
        code = error.code()
        # a broker that requires a client certificate (mTLS) and got none, or one it does not
        # trust, answers with a TLS alert: librdkafka reports that as a transport failure
        if code == KafkaError._TRANSPORT and any(a in error.str() for a in TLS_ALERTS):
            code = KafkaError._SSL
        if self.refused is None and code in hints:
            self.refused = error.str(), hints[code]

    def _fail(self, what: str, exc: BaseException) -> BackendUnavailable:
        try:
            self.admin.poll(0)  # serves the error callback
        except Exception:  # the client failing again: the error being raised says enough
            log.debug("serving the Kafka client's callbacks failed", exc_info=True)
        if self.refused is not None:
            why, hint = self.refused
            return AccessRefused(f"Kafka {self.bootstrap}: {what} failed: {why}", hint=hint)
        return BackendUnavailable(f"Kafka {self.bootstrap}: {what} failed: {exc}")

    def partitions(self, topic: str) -> int:
        """Partition count of a topic (0 when it does not exist or is not ours to see)."""
        if topic not in self._partitions:
            # in steps of a second: a refused login or certificate (the error callback's) ends the
            # wait at once instead of after the whole timeout (measured: 11 s before)
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    meta = self.admin.list_topics(topic=topic, timeout=min(1.0, self.timeout))
                    break
                except Exception as exc:
                    self.admin.poll(0)
                    if self.refused is not None or time.monotonic() >= deadline:
                        raise self._fail(f"metadata for {topic}", exc) from None
            t = meta.topics.get(topic)
            self._partitions[topic] = 0 if t is None or t.error is not None else len(t.partitions)
            if t is not None and t.error is not None:  # e.g. no ACL for it: Kafka then hides it
                self.topic_errors[topic] = t.error.str()
        return self._partitions[topic]

    def groups(self, prefix: str = "") -> list[str]:
        """The consumer groups the cluster knows whose id starts with `prefix` (list, no describe)."""
        try:
            listed = self.admin.list_consumer_groups(request_timeout=self.timeout).result(
                timeout=self.timeout
            )
        except Exception as exc:
            raise self._fail("listing consumer groups", exc) from None
        return sorted(g.group_id for g in listed.valid if g.group_id.startswith(prefix))

    def _describe(self, group: str) -> Any:
        """The group's description (DescribeGroups); raises what the broker answered."""
        futures = self.admin.describe_consumer_groups([group], request_timeout=self.timeout)
        return futures[group].result(timeout=self.timeout)

    def sample(self, topics: Iterable[str], group: str) -> list[OffsetSample]:
        """The group's committed offsets and the log bounds of every partition of `topics`."""
        from confluent_kafka import KafkaError, TopicPartition

        wanted = [TopicPartition(t, p) for t in topics for p in range(self.partitions(t))]
        if not wanted:
            return []
        members, owners = 0, dict[tuple[str, int], str]()
        try:  # first: a group we may not describe is refused here at once, saying so
            members, owners = _members(self._describe(group))
        except Exception as exc:  # otherwise: no members known (the offsets still count)
            if kafka_clients.error_of(exc)[0] == KafkaError.GROUP_AUTHORIZATION_FAILED:
                raise self._fail(f"offsets of group {group}", exc) from None
        committed = {
            (tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None)
            for tp in self._committed(group, wanted)
        }
        out = []
        now = time.time()
        for tp in wanted:
            try:
                low, high = self.consumer.get_watermark_offsets(tp, timeout=self.timeout)
            except Exception as exc:
                raise self._fail(f"watermarks of {tp.topic}[{tp.partition}]", exc) from None
            out.append(
                OffsetSample(
                    tp.topic,
                    tp.partition,
                    committed.get((tp.topic, tp.partition)),
                    low,
                    high,
                    members,
                    now,
                    owners.get((tp.topic, tp.partition)),  # its member: a quiet one of a busy member lags
                )
            )
        return out

    def _committed(self, group: str, wanted: list[Any]) -> list[Any]:
        """The group's committed offsets of `wanted`. A coordinator that moved (a broker restarted,
        a rolling upgrade) answers NOT_COORDINATOR until the client has looked it up again: asked
        again until the timeout, not reported as an outage."""
        from confluent_kafka import KafkaError

        moved = {
            KafkaError.NOT_COORDINATOR,
            KafkaError.COORDINATOR_NOT_AVAILABLE,
            KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        }
        deadline = time.monotonic() + self.timeout
        while True:
            left = max(0.5, deadline - time.monotonic())
            try:
                return list(self._group_reader(group).committed(wanted, timeout=left))
            except Exception as exc:
                again = kafka_clients.error_of(exc)[0] in moved
                if not again or time.monotonic() + 0.25 >= deadline:
                    raise self._fail(f"offsets of group {group}", exc) from None
                time.sleep(0.25)

    def _group_reader(self, group: str) -> Any:
        """A consumer of `group` that only reads its committed offsets (OffsetFetch): it never
        subscribes (so never joins the group) and never commits.

        Not the admin client's list_consumer_group_offsets: when the group's coordinator answers
        NOT_COORDINATOR (it moved: a broker restarted, a rolling upgrade), librdkafka (2.16, and
        its newest source: issue 5040) asks the admin client's consumer-group handler, which it
        does not have, to look the coordinator up again, and the process dies of SIGSEGV (seen in
        CI: a replay waiting for the MAE group right after a broker restart). A consumer has that
        handler: it looks the coordinator up again, and `_committed` asks once more."""
        from confluent_kafka import Consumer

        reader = self._group_readers.get(group)
        if reader is None:
            reader = Consumer({**self._conf, "group.id": group, "enable.auto.commit": False})
            self._group_readers[group] = reader
        return reader

    def _read(self, topic: str, partition: int, start: int, stop: int, cap: int) -> Iterable[Any]:
        """Messages of one partition from `start` up to (not including) `stop`, at most `cap`."""
        for batch in self._batches(topic, partition, start, stop, cap):
            yield from batch

    def _batches(self, topic: str, partition: int, start: int, stop: int, cap: int) -> Iterator[list[Any]]:
        """`_read`'s messages a fetched batch at a time (a triage's look-up reads tens of thousands
        of messages for the few of one urn: the per-message work is the cost)."""
        from confluent_kafka import TopicPartition

        self.read_whole = True  # False when a read ends on a timeout, short of `stop`
        if start >= stop:
            return
        what = f"reading {topic}[{partition}]"
        try:  # the client raises (a broker gone mid-run, a fatal error): an outage, said as one
            self.consumer.assign([TopicPartition(topic, partition, start)])
        except Exception as exc:
            raise self._fail(what, exc) from None
        seen = 0
        try:
            want = min(cap, stop - start)
            while seen < want:
                # consume() waits for the whole batch or the timeout: never ask for more than is left
                try:
                    batch = self.consumer.consume(num_messages=min(500, want - seen), timeout=self.timeout)
                except Exception as exc:
                    raise self._fail(what, exc) from None
                if not batch:
                    self.read_whole = False
                    return
                cut = len(batch)
                for i, msg in enumerate(batch):  # an error is rare: where the first one is
                    if msg.error() is not None:
                        cut = i
                        break
                good = batch[:cut]
                # offsets ascend within a partition: what lies past `stop` is at the tail
                while good:
                    last = good[-1].offset()
                    if last is not None and last < stop:
                        break
                    good.pop()
                if good:
                    seen += len(good)
                    yield good
                if len(good) < cut:  # a message at or past `stop`
                    return
                if cut < len(batch):
                    error = batch[cut].error()
                    if error is None or error.code() == -191:  # _PARTITION_EOF
                        return
                    raise self._fail(what, Exception(str(error)))
        finally:
            try:
                self.consumer.unassign()
            except Exception:  # the read's own outcome (or its error) is what counts
                log.debug("unassigning %s failed", what, exc_info=True)

    def message_time(self, topic: str, partition: int, offset: int) -> datetime | None:
        """Timestamp of the message at `offset` (the group's position in time)."""
        for msg in self._read(topic, partition, offset, offset + 1, 1):
            return _ts(msg.timestamp()[1])
        return None

    def offset_for_time(self, topic: str, partition: int, when: datetime) -> int | None:
        """First offset whose timestamp is at or after `when` (None: none yet)."""
        from confluent_kafka import TopicPartition

        ms = int(when.timestamp() * 1000)
        try:
            found = self.consumer.offsets_for_times(
                [TopicPartition(topic, partition, ms)], timeout=self.timeout
            )
        except Exception as exc:
            raise self._fail(f"offsets for time on {topic}[{partition}]", exc) from None
        return found[0].offset if found and found[0].offset >= 0 else None

    def commit_times(
        self, group: str, wanted: set[tuple[str, int]], lookback: float, cap: int = 50_000
    ) -> dict[tuple[str, int], CommitRun] | None:
        """Since when each wanted partition's committed offset has held its value, from the
        broker's `__consumer_offsets` (the last `lookback` seconds of the group's partition of
        it). None when that topic cannot be read (not ours to see, or too busy to read in
        `cap` records): the caller then knows only its own samples."""
        from confluent_kafka import TopicPartition

        window_start = time.time() - lookback
        try:
            n = self.partitions(COMMITS_TOPIC)
            if not n or not wanted:
                return None
            p = commits_partition(group, n)
            begin = self.offset_for_time(COMMITS_TOPIC, p, _ts(int(window_start * 1000)))
            _low, end = self.consumer.get_watermark_offsets(
                TopicPartition(COMMITS_TOPIC, p), timeout=self.timeout
            )
            begin = end if begin is None else begin
            if end - begin > cap:
                return None
            records = [
                (m.key(), m.value(), m.timestamp()[1] / 1000)
                for m in self._read(COMMITS_TOPIC, p, begin, end, cap)
            ]
        except Exception:  # no ACL for the internal topic, a read refused: not evidence
            return None
        if not self.read_whole:  # a commit missed would read as "none since": no evidence at all
            return None
        return trailing_runs(records, group, wanted, window_start)

    def find(
        self,
        topic: str,
        partition: int,
        urns: set[str],
        start: int,
        stop: int,
        cap: int = 200_000,
    ) -> tuple[list[MclHit], bool]:
        """MCLs keyed by one of `urns` in [start, stop); and whether the range was read whole."""
        keys = {u.encode("utf-8"): u for u in urns}
        hits: list[MclHit] = []
        read = 0
        for batch in self._batches(topic, partition, start, stop, cap):
            read += len(batch)
            for msg in [m for m in batch if m.key() in keys]:
                hit = self._hit(
                    (topic, partition, msg.offset()), keys[msg.key()], _ts(msg.timestamp()[1]), msg.value()
                )
                if hit is not None:
                    hits.append(hit)
        # the read stops early at the cap, at the end of the log, or on a timeout (not whole)
        return hits, read < cap and self.read_whole


def _members(described: Any) -> tuple[int, dict[tuple[str, int], str]]:
    """A group description's member count, and which member owns each assigned partition."""
    owners = {
        (tp.topic, tp.partition): m.member_id
        for m in described.members
        if m.assignment is not None
        for tp in m.assignment.topic_partitions
    }
    return len(described.members), owners
