"""Writing to the search cluster (repairs only): bulk requests sized in bytes, every item checked."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from auditor.backends import journal as _journal
from auditor.backends.bulk_json import dumps as _json
from auditor.backends.protocols import Capability
from auditor.backends.search import SearchIndex
from auditor.backends.search_retry import RETRY_STATUSES, retryable
from auditor.errors import BackendUnavailable

MAX_BYTES = 5 * 1024 * 1024  # well under the 10 MiB some managed clusters refuse (HTTP 413)
REASON_CAP = 400
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def said(error: Any, cap: int = REASON_CAP) -> str:
    """A bulk item's error as one line: `type: reason`, then what caused it (OpenSearch's
    "failed to parse" says why only there), control characters out, capped."""
    if not isinstance(error, dict):
        text = str(error or "")
    else:
        text, seen = "", 0
        while isinstance(error, dict) and seen < 3:
            kind, why = error.get("type"), str(error.get("reason") or "")
            if not text:
                text = f"{kind}: {why}" if kind and why else why or str(kind or "")
            elif why and why not in text:  # a cause that says more (OpenSearch's "failed to parse")
                text += f"; caused by {kind}: {why}"
            error, seen = error.get("caused_by"), seen + 1
    text = _CONTROL.sub(" ", text).strip()
    return text if len(text) <= cap else text[: cap - 1] + "…"


@dataclass(frozen=True)
class BulkItem:
    """One write: `index` (the whole doc, replacing), `create` (only if no doc has the id: 409
    otherwise) or `delete`."""

    op: str
    index: str
    doc_id: str
    urn: str  # the entity it belongs to (failures are reported by urn)
    doc: dict[str, Any] | None = None
    # (seq_no, primary_term) the doc must still have: a write since then answers 409, never lost
    if_seq: tuple[int, int] | None = None
    raw: bytes | None = None  # the document's bytes to send as they are (an undo's before-image)

    @property
    def conditional(self) -> bool:
        """Refused (409) rather than written over a doc that changed since it was read."""
        return self.if_seq is not None or self.op == "create"


@dataclass(frozen=True)
class BulkFailure:
    item: BulkItem
    status: int
    reason: str


# the cluster refuses every write to an index behind a block (`index.blocks.read_only`, or the
# `read_only_allow_delete` the flood-stage disk watermark sets, which answers 429): no retry of the
# bulk, nor any later one, gets through until someone lifts it
BLOCKED = "cluster_block_exception"


def _refused(blocked: dict[str, str]) -> BackendUnavailable:
    """One error for the writes a block refuses: each index blocked, with the cluster's reason."""
    reasons = "; ".join(f"{index}: {why}" for index, why in sorted(blocked.items()))
    return BackendUnavailable(
        f"the search cluster refuses every write to {reasons}",
        hint='lift the block (`PUT <index>/_settings {"index.blocks.read_only": null, '
        '"index.blocks.read_only_allow_delete": null}`; after the flood-stage disk watermark set it, '
        "free disk first), then run the repair again (a checkpoint left: --resume)",
    )


class IndexWriter:
    """Bulk writes with bounded backoff on 429/503; a failed item is returned, never dropped."""

    capabilities = frozenset({Capability.BULK_WRITE, Capability.DELETE, Capability.ALIAS})

    def __init__(self, search: SearchIndex, *, retries: int = 5, sleep: Callable[[float], None] = time.sleep):
        self.client = search.client
        self._search = search  # its refusals name the identity and what to grant (search_auth.py)
        self.elastic = search.kind == "elasticsearch"  # its client names the bodies differently
        self.written: set[str] = set()  # indices written to (refreshed before verification)
        self.description = search.description
        self.retries = retries
        self.sleep = sleep
        # the repair's write journal (auditor/backends/journal.py): before-images, then results
        self.journal = _journal.active()

    @property
    def search(self) -> SearchIndex:
        """The cluster it writes to, for the reads a writer's caller makes around its writes."""
        return self._search

    def _lines(self, item: BulkItem) -> bytes:
        self.written.add(item.index)
        meta: dict[str, Any] = {"_index": item.index, "_id": item.doc_id}
        if item.if_seq is not None:
            meta["if_seq_no"], meta["if_primary_term"] = item.if_seq
        action = _json({item.op: meta}) + b"\n"
        if item.op == "delete":
            return action
        return action + (item.raw if item.raw is not None else _json(item.doc)) + b"\n"

    def bulk(self, items: Sequence[BulkItem], max_bytes: int = MAX_BYTES) -> list[BulkFailure]:
        """Write every item; return those that failed for good (a delete of a missing doc is fine;
        a document that cannot be written as JSON at all is a failure of its own, status 0)."""
        failures: list[BulkFailure] = []
        chunk: list[tuple[BulkItem, bytes]] = []
        size = 0
        for item in items:
            try:
                lines = self._lines(item)
            except (TypeError, ValueError, RecursionError, MemoryError) as exc:
                failures.append(BulkFailure(item, 0, said(f"its document cannot be written as JSON: {exc}")))
                continue
            if chunk and size + len(lines) > max_bytes:
                failures += self._send(chunk)
                chunk, size = [], 0
            chunk.append((item, lines))
            size += len(lines)
        if chunk:
            failures += self._send(chunk)
        return failures

    def _send(self, chunk: list[tuple[BulkItem, bytes]]) -> list[BulkFailure]:
        """One bulk request; items refused with 429/503 are sent again, with backoff, a few times."""
        failed: list[BulkFailure] = []
        todo = chunk
        batch = self.journal.before(self._search, chunk) if self.journal is not None else 0
        for attempt in range(self.retries + 1):
            try:
                body = b"".join(lines for _, lines in todo)
                response = self.client.bulk(operations=body) if self.elastic else self.client.bulk(body=body)
            except Exception as exc:  # 429/5xx, a timeout, a dropped connection: the same bulk again
                if retryable(exc) and attempt < self.retries:
                    self._backoff(attempt)
                    continue
                raise self._search._fail("bulk write", exc) from None
            if self.journal is not None:
                self.journal.after(batch, todo, response)
            retry, refused = self._read(todo, response)
            failed += refused
            if not retry:
                return failed
            todo = retry
            if attempt < self.retries:
                self._backoff(attempt)
        return failed + [BulkFailure(i, 429, f"still refused after {self.retries} retries") for i, _ in todo]

    def _read(
        self, sent: list[tuple[BulkItem, bytes]], response: Any
    ) -> tuple[list[tuple[BulkItem, bytes]], list[BulkFailure]]:
        body = response.body if hasattr(response, "body") else response
        retry: list[tuple[BulkItem, bytes]] = []
        failed: list[BulkFailure] = []
        blocked: dict[str, str] = {}  # index -> why the cluster refuses every write to it
        for (item, lines), result in zip(sent, body.get("items", []), strict=False):
            outcome = next(iter(result.values()))
            status = int(outcome.get("status", 500))
            if status < 300 or (item.op == "delete" and status == 404):
                continue
            error = outcome.get("error")
            if isinstance(error, dict) and error.get("type") == BLOCKED:
                blocked.setdefault(item.index, said(error))
            elif status in RETRY_STATUSES:
                retry.append((item, lines))
            else:
                failed.append(BulkFailure(item, status, said(error)))
        if blocked:
            raise _refused(blocked)
        return retry, failed

    def _backoff(self, attempt: int) -> None:
        self.sleep(min(30.0, 0.5 * 2**attempt) * (0.5 + random.random()))

    def delete_by_query(self, index: str, query: dict[str, Any]) -> int:
        try:
            request: dict[str, Any] = {"query": query} if self.elastic else {"body": {"query": query}}
            done = self.client.delete_by_query(index=index, refresh=True, conflicts="proceed", **request)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 404 or getattr(exc, "status", None) == 404:
                return 0
            raise self._search._fail("delete", exc) from None
        body = done.body if hasattr(done, "body") else done
        return int(body.get("deleted", 0))

    def refresh_written(self) -> None:
        if self.written:
            self.refresh(*sorted(self.written))

    def refresh(self, *indices: str) -> None:
        try:
            self.client.indices.refresh(index=",".join(indices))
        except Exception as exc:
            raise self._search._fail("refresh", exc) from None

    # -- index administration (a full rebuild) -------------------------------------------
    # settings an index reports but a new index may not be created with
    NOT_COPIED = frozenset(
        {"uuid", "version", "creation_date", "provided_name", "blocks", "routing", "resize",
         "verified_before_close", "history", "replication", "lifecycle", "hidden"}
    )  # fmt: skip

    def concrete(self, name: str) -> tuple[list[str], bool]:
        """The indices behind `name`, and whether `name` is an alias (else a concrete index)."""
        try:
            if self.client.indices.exists_alias(name=name):
                found = self.client.indices.get_alias(name=name)
                body = found.body if hasattr(found, "body") else found
                return sorted(body), True
            return ([name] if self.client.indices.exists(index=name) else []), False
        except Exception as exc:
            raise self._search._fail(f"resolving {name}", exc) from None

    def create_like(self, source: str, name: str) -> dict[str, Any]:
        """A new index with `source`'s mappings and settings, tuned for loading; `source`'s settings."""
        try:
            settings = self._body(self.client.indices.get_settings(index=source))[source]["settings"]["index"]
            mappings = self._body(self.client.indices.get_mapping(index=source))[source]["mappings"]
            copied = {k: v for k, v in settings.items() if k not in self.NOT_COPIED}
            copied.update({"number_of_replicas": 0, "refresh_interval": "-1"})
            body = {"settings": {"index": copied}, "mappings": mappings}
            if self.journal is not None:
                self.journal.index_created(name, source)
            if self.elastic:
                self.client.indices.create(index=name, settings=body["settings"], mappings=mappings)
            else:
                self.client.indices.create(index=name, body=body)
        except Exception as exc:
            raise self._search._fail(f"creating {name}", exc) from None
        return dict(settings)

    def put_settings(self, index: str, settings: dict[str, Any]) -> None:
        try:
            if self.elastic:
                self.client.indices.put_settings(index=index, settings={"index": settings})
            else:
                self.client.indices.put_settings(index=index, body={"index": settings})
        except Exception as exc:
            raise self._search._fail(f"settings of {index}", exc) from None

    def documents(self, *indices: str) -> int:
        """How many documents the indices hold, as the cluster counts them."""
        counted = self._search.indices(",".join(indices))
        return sum(counted.get(index, 0) for index in indices)

    def delete_index(self, index: str) -> None:
        """Delete one index by its concrete name (a staged index that was not swapped in)."""
        if self.journal is not None:
            self.journal.index_dropped(index)
        try:
            self.client.indices.delete(index=index)
        except Exception as exc:
            raise self._search._fail(f"deleting {index}", exc) from None

    def swap(self, actions: list[dict[str, Any]], kept: dict[str, str] | None = None) -> None:
        """One atomic `_aliases` request; an error (or an unacknowledged answer) is raised. `kept`:
        the copy kept of each concrete index the request removes (journaled with it, for the undo)."""
        if self.journal is not None:
            self.journal.aliases_moved(actions, self.aliases_of(actions), kept)
        try:
            if self.elastic:
                done = self.client.indices.update_aliases(actions=actions)
            else:
                done = self.client.indices.update_aliases(body={"actions": actions})
        except Exception as exc:
            raise self._search._fail("the alias swap", exc) from None
        if not self._body(done).get("acknowledged"):
            raise BackendUnavailable(
                f"search cluster {self.description}: the alias swap was not acknowledged"
            )

    def max_seq_nos(self, index: str) -> dict[str, int]:
        """Each primary shard's highest `_seq_no` in `index`: it moves with every write, anyone's."""
        try:
            found = self._body(self.client.indices.stats(index=index, metric="docs", level="shards"))
        except Exception as exc:
            raise self._search._fail(f"the shards of {index}", exc) from None
        shards = found.get("indices", {}).get(index, {}).get("shards", {})
        return {
            shard: int(copy.get("seq_no", {}).get("max_seq_no", -1))
            for shard, copies in shards.items()
            for copy in copies
            if copy.get("routing", {}).get("primary")
        }

    def settled(self, index: str) -> None:
        """A full rebuild's index, served and caught up: where its shards' seq_nos stand, so that its
        undo can tell whether anyone wrote to it since (journaled; nothing without a journal)."""
        if self.journal is not None:
            self.journal.settled(index, self.max_seq_nos(index))

    def aliases_of(self, actions: list[dict[str, Any]]) -> dict[str, list[str]]:
        """For each alias `actions` name, the indices it points at now ([]: none, or not an alias)."""
        names = sorted({a[k]["alias"] for a in actions for k in a if "alias" in a[k]})
        return {
            name: (found if is_alias else []) for name in names for found, is_alias in [self.concrete(name)]
        }

    @staticmethod
    def _body(response: Any) -> Any:
        return response.body if hasattr(response, "body") else response
