"""The copy a first `--full` keeps of the concrete live index its swap removes, so that the swap
can be undone (`rebuild undo` moves the live name, then an alias, onto the copy).

An alias cannot share a name with an index: the first swap over a concrete live index (a fresh
install's) removes it in the same `_aliases` request that adds the alias. Before that request,
the index is copied into `<live>_kept-<ms>`, with its mappings and settings (`create_like`), each
document's `_source` as the bytes the cluster holds (a real-time multi-get's, written back as they
are), read through a scroll of ids and nothing else. The client copies, not `_reindex`: the reindex
module is not in every distribution (the stack's Elasticsearch 9 and OpenSearch 3 answer 405).

The platform keeps writing the live index while it is copied, and nothing blocks it (a write
block fails the platform's writes: DataHub's consumer drops what is refused). So the copy is
made exact by passes over `_seq_no`, which every write (index or delete, anyone's) raises on its
shard: each pass notes every primary shard's max `_seq_no` (the mark), refreshes the live index
(what the mark covers is then searchable) and copies again every document whose `_seq_no` is
above the last pass's mark. A pass that finds the marks unmoved has nothing left to copy; a
document deleted meanwhile is not found by `_seq_no` (a delete leaves no document), so the copy
then holds at least every id of the live index, and equal counts mean equal ids: where the copy
holds more, the ids the live index no longer has are deleted from it and the passes go on. The
swap is sent at once after a pass that found nothing (the caller's next request). A live index
written during each of `PASSES` passes (a busy consumer never leaves it quiet for a pass's
length) is taken as the last pass left it, deleted ids dropped as above: the writes after that
pass's marks are then covered as the window below is, over a pass's length instead of a request's.

What a write landing in the milliseconds between that last pass and the swap means: the swap
removes the index it went to, so the copy never holds it, and nothing can read it afterwards.
The platform wrote it for a row changed a moment before (its consumer's lag), as the promote's
catch-up after the swap assumes when it reloads into the fresh index every entity whose rows
changed since its mark. So after the swap the entities whose rows changed since the last pass
(`since()`: `SKEW` before it, for that lag, but never before the copy began: what was written
before is in the copy) are written into the copy too, from the same rows as the fresh index:
an undo never serves for them a state older than the one the swap served. Refusing the undo
instead would refuse nearly every undo under a busy consumer. Those entities were written
during the repair by someone else: their documents in the copy are the rows' current state as
the auditor projects them, not the bytes the concrete index held before the repair (as a
document written since a targeted repair is left as it was written, not put back). A consumer
further behind than `SKEW`, or a delete in that window (its entity has no rows to select), is
not covered: the copy keeps the older document, which a scan after an undo reports.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

from auditor.backends.index_writer import BulkItem, IndexWriter
from auditor.backends.raw_sources import read_versioned
from auditor.errors import AuditorError
from auditor.exit_codes import ExitCode

log = logging.getLogger(__name__)
PASSES = 10  # passes that look for a quiet moment (a pass that finds nothing new)
PAGE = 1000  # ids a scroll page, and documents a multi-get and a bulk


class NotKept(AuditorError):
    """The copy could not be made or kept up: the swap is not sent (the staged index deleted)."""

    exit_code = ExitCode.INCOMPLETE


def kept_name(live: str, fresh: str) -> str:
    """`<live>_kept-<the fresh index's epoch ms>`: beside its run's fresh index. Not the shape of
    DataHub's zero-downtime reindex's next index (`<alias>_<version>_<ms>`, which the scan finds by
    name: a copy so named would read as a reindex in progress, and refuse the next `--full`),
    nor a name OpenMetadata's OrphanedIndexCleaner takes (`_rebuild_`)."""
    return f"{live}_kept-{fresh.rsplit('_', 1)[-1]}"


def kept_note(live: str, kept: str) -> str:
    """What the report says of the copy kept of the concrete index the swap removed."""
    return (
        f"the concrete index {live} was removed in the swap; its copy {kept} is kept: `auditor rebuild undo "
        f"RUN --apply` moves {live} (then an alias) onto it; drop it with "
        f'curl -X DELETE "$SEARCH_URL"/{kept} once the rebuild is not to be undone'
    )


class KeptCopy:
    """The copy of the concrete index `live` as `name`, brought up to date by `settle()`."""

    def __init__(self, writer: IndexWriter, live: str, name: str) -> None:
        self.writer, self.live, self.name = writer, live, name
        self.marks: dict[str, int] = {}  # each primary shard's max `_seq_no` the copy holds up to
        self.copied = 0  # documents copied, all passes
        self.passes = 0
        self.began: datetime | None = None  # the first marks: every write before is in the copy
        self.quiet_at: datetime | None = None  # the copy is whole up to this instant

    def start(self) -> None:
        """Create the copy and copy every document; refused (NotKept) when it cannot be made
        (no room: a disk watermark's block, a shard that cannot be allocated): then nothing of the
        rebuild has started, and the concrete index is never removed without its copy."""
        try:
            settings = self.writer.create_like(self.live, self.name)
            self._pass()
            restored = {
                k: settings.get(k, v) for k, v in (("number_of_replicas", "1"), ("refresh_interval", "1s"))
            }
            self.writer.put_settings(self.name, restored)
        except AuditorError as exc:
            raise self._refused(exc) from None

    def settle(self) -> None:
        """Copy what was written since, pass after pass, until a pass finds nothing new and the
        copy holds the live index's ids exactly (module docstring); the swap is to follow at once.
        A live index never quiet for a pass's length (a busy consumer) is taken as its last pass
        left it: what was written after that pass's marks is for rows changed since, which the
        caller writes into the copy after the swap (`since()`), as for the window before a swap."""
        try:
            for _ in range(PASSES):
                at = datetime.now(UTC)
                if self.writer.max_seq_nos(self.live) != self.marks:
                    self._pass()
                    continue
                self.quiet_at = at  # nothing written since the marks: the copy is whole up to now
                self.writer.refresh(self.live, self.name)
                more = self._more_in_copy()
                if more is None and self.writer.max_seq_nos(self.live) == self.marks:
                    return
                if more:
                    self._drop_gone()
            self.writer.refresh(self.live, self.name)
            if self._more_in_copy():
                self._drop_gone()
        except AuditorError as exc:
            raise self._refused(exc) from None
        log.info(
            "%s was written during each of %d passes: its copy as the last one left it", self.live, PASSES
        )

    def _more_in_copy(self) -> bool | None:
        """None: the copy counts as many documents as the live index; True: more (documents
        deleted from the live index since they were copied); False: fewer (written since)."""
        copy, live = self.writer.documents(self.name), self.writer.documents(self.live)
        return None if copy == live else copy > live

    def since(self, skew: timedelta) -> datetime:
        """The rows changed since this instant may have been written to the live index after the
        copy's last pass (module docstring): their entities are written into the copy too."""
        assert self.began is not None and self.quiet_at is not None, "settle() first"
        return max(self.quiet_at - skew, self.began)

    def _pass(self) -> None:
        """One pass: the marks noted, then every document written above the last ones copied."""
        at = datetime.now(UTC)
        self.began = self.began or at
        marks = self.writer.max_seq_nos(self.live)
        self.writer.refresh(self.live)
        # the lowest shard's mark (`_seq_no` counts per shard): more is copied again, never less;
        # a shard still empty (-1) makes each pass copy the whole index again, slower, not wrong
        since = min(self.marks.values(), default=-1)
        query = {"range": {"_seq_no": {"gt": since}}} if since >= 0 else {"match_all": {}}
        ids: list[str] = []
        for hit in self._ids(self.live, query):
            ids.append(hit)
            if len(ids) >= PAGE:
                self._copy(ids)
                ids = []
        self._copy(ids)
        self.marks, self.quiet_at = marks, at  # whole up to the marks
        self.passes += 1

    def _ids(self, index: str, query: dict[str, Any]) -> Any:
        body = {"size": PAGE, "_source": False, "sort": ["_doc"], "query": query}
        try:
            for hit in self.writer.search.scroll_hits(index, body):
                yield hit["_id"]
        except AuditorError:
            raise
        except Exception as exc:
            raise self.writer.search._fail(f"reading {index}", exc) from None

    def _copy(self, ids: list[str]) -> None:
        """The documents as the live index holds them now, their bytes as they are."""
        if not ids:
            return
        found = read_versioned(self.writer.search, self.live, ids)
        items = [BulkItem("index", self.name, i, i, source, raw=raw) for i, (source, _, raw) in found.items()]
        failed = self.writer.bulk(items)
        if failed:
            first = failed[0]
            raise NotKept(
                f"{len(failed)} documents could not be copied (e.g. {first.item.doc_id}: {first.reason})"
            )
        self.copied += len(items)

    def _drop_gone(self) -> None:
        """The ids the copy holds that the live index no longer has (deleted since they were
        copied), deleted from the copy: the copy's ids a page at a time, each page looked up in
        the live index (memory flat in the index's documents)."""
        page: list[str] = []
        for doc_id in self._ids(self.name, {"match_all": {}}):
            page.append(doc_id)
            if len(page) >= PAGE:
                self._delete_gone(page)
                page = []
        self._delete_gone(page)

    def _delete_gone(self, ids: list[str]) -> None:
        there = self.writer.search.present(self.live, ids)
        failed = self.writer.bulk([BulkItem("delete", self.name, i, i) for i in ids if i not in there])
        if failed:
            raise NotKept(
                f"{len(failed)} documents deleted from {self.live} could not be deleted from its copy"
            )

    def _refused(self, exc: AuditorError) -> NotKept:
        return NotKept(
            f"{self.live}: its copy {self.name} could not be made ({exc}): not swapped, nothing removed "
            "(the staged index and the copy deleted); the concrete index is only replaced with a copy "
            "kept for the undo",
            hint="free room on the search cluster (the copy is the size of the index), or take a "
            "snapshot of the index",
        )
