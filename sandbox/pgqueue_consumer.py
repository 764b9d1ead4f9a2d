"""The MAE-consumer look-alike on pgQueue: DataHub's poll worker over the PostgreSQL queue tables.

Each cycle registers the group on its topics (the heartbeat aggressive retention relies on),
leases the partitions' heads, applies the MCLs (IndexUpdater, as `MaeConsumer`), then acks them:
the lease becomes `__acked__` and `consumer_offset.offset_value` moves over the contiguous run.
The same fault knobs as `MaeConsumer`: pause (no polling, no heartbeat: a consumer gone), stall
(heartbeats, neither applies nor acks), rate (a backlog), skip_index_write.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from sandbox.consumer import MaeConsumer
from sandbox.endpoints import Endpoints
from sandbox.naming import MAE_CONSUMER_GROUP, MCL_TOPICS
from sandbox.pgqueue import Handle, QueueStore, new_owner


class _Message:
    """A leased row seen through the few methods `MaeConsumer._handle` calls on a Kafka message."""

    def __init__(self, h: Handle) -> None:
        self.h = h

    def value(self) -> bytes:
        return self.h.payload

    def topic(self) -> str:
        return self.h.topic

    def partition(self) -> int:
        return self.h.partition

    def offset(self) -> int:
        return self.h.seq - 1

    def error(self) -> None:
        return None


class PgQueueMaeConsumer(MaeConsumer):
    """MCL rows -> search indices; only one instance per group should run."""

    def __init__(
        self,
        queue: QueueStore,
        search: Any = "opensearch",
        endpoints: Endpoints | None = None,
        *,
        group_id: str = MAE_CONSUMER_GROUP,
        topics: Iterable[str] = MCL_TOPICS,
        index_prefix: str = "",
        batch_size: int = 200,
        poll_timeout: float = 0.2,
    ) -> None:
        super().__init__(
            search,
            endpoints,
            group_id=group_id,
            topics=topics,
            index_prefix=index_prefix,
            batch_size=batch_size,
            poll_timeout=poll_timeout,
        )
        self.queue = queue
        self.owner = new_owner(group_id)

    def start(self, *, wait_assigned: bool = True, timeout: float = 30.0) -> PgQueueMaeConsumer:
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("consumer already running")
        self._stop.clear()
        for topic in self.topics:  # registered before start() returns: retention waits for it
            self.queue.register(self.group_id, topic)
        self._thread = threading.Thread(target=self._run, name=f"pgq-{self.group_id}", daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        self._stop.clear()
        self._run()

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until the group's watermark reaches every partition's last sequence."""
        deadline = time.monotonic() + timeout
        while True:
            if all(p.committed >= p.end for p in self.queue.lag(self.group_id, self.topics)):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self._paused:
                time.sleep(self.poll_timeout)
                continue
            for topic in self.topics:
                self.queue.register(self.group_id, topic)
            if self._stalled:  # in the group, polling, but neither applying nor acking
                time.sleep(self.poll_timeout)
                continue
            got = 0
            for topic in self.topics:
                leased = self.queue.receive(self.group_id, topic, self.owner, self.batch_size)
                got += len(leased)
                self._process_leased(leased)
            if not got:
                time.sleep(self.poll_timeout)

    def _process_leased(self, leased: list[Handle]) -> None:
        done: list[Handle] = []
        last_ack = time.monotonic()
        for h in leased:
            if self._stop.is_set() or self._paused or self._stalled or not self._throttle():
                break  # the rest stays leased until its visibility timeout, as in DataHub
            self._handle(_Message(h))  # type: ignore[arg-type]
            done.append(h)
            if self._rate and time.monotonic() - last_ack >= self._commit_every:
                self._ack(done)
                done, last_ack = [], time.monotonic()
        self._ack(done)
        if len(done) < len(leased):  # released now rather than after the visibility timeout
            self._release([h for h in leased if h not in done])

    def _ack(self, done: list[Handle]) -> None:
        try:
            self.stats.failed_writes += self.updater.flush()
        except Exception as exc:  # the search backend is down: the batch's writes are lost
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
        if not done:
            return
        self.queue.ack(self.group_id, done)
        self.stats.commits += 1
        for h in done:
            self.stats.committed[(h.topic, h.partition)] = h.seq

    def _release(self, handles: list[Handle]) -> None:
        """Explicit release (nack): the lease's owner becomes `__released__`, expired at once."""
        from sqlalchemy import text

        with self.queue.engine.begin() as conn:
            for h in handles:
                conn.execute(
                    text(
                        f"UPDATE {self.queue.p}_message_group_lease SET lock_owner = '__released__', "
                        "locked_until = now() - interval '1 second' WHERE message_id = :id "
                        "AND message_enqueued_at = :at AND consumer_group = :g AND lock_owner = :o"
                    ),
                    {"id": h.id, "at": h.enqueued_at, "g": self.group_id, "o": self.owner},
                )
