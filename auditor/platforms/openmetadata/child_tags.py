"""The tags of an entity's children (columns, tasks, fields), looked up by their FQN hashes.

A child's tags are `tag_usage` rows whose `targetFQNHash` is the child's FQN hash. Matching
them by prefix of the entity's hash in SQL cannot use an index on PostgreSQL (a LIKE under a
non-C collation, and an OR with the entity's own hash): per row it read the whole table.
Instead the children's FQNs come from the row's JSON and their hashes are computed here, a
page of rows at a time. A read of a few rows looks them up in the database (one indexed `IN`
lookup per 1,000 hashes); a stream of a whole table reads `tag_usage` once, in one query, into
a temporary SQLite file keyed by target (`TagSpill`), and a page takes one lookup there, not
one database probe per child. Memory stays flat: the labels wait on disk. Each row's JSON is
parsed once, here: the row carries the parsed entity on (an unreadable one passes as it came,
for the check to report with its reason).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

import orjson

from auditor.backends.dbapi import sql_of
from auditor.core.json_guard import load_object
from auditor.platforms.openmetadata.derive import CHILD_TAGGED, child_hashes, has_children
from auditor.platforms.openmetadata.document import fqn_hash
from auditor.platforms.openmetadata.records import OmRow, om_row
from auditor.platforms.openmetadata.spill import temp_file

_BY_TARGET = itemgetter(1, 0)  # a usage's (target, rowid)
IN_LIST = 1000  # hashes per lookup (an index probe each)
PAGE = 500
COLUMNS = "SELECT targetFQNHash, tagFQN, source, labelType, state FROM tag_usage"
Lookup = Callable[[list[str]], Iterable[Sequence[Any]]]  # hashes -> (target, tag, source, type, state)


def _paged(rows: Iterable[OmRow], lookup: Lookup, under: bool = False) -> Iterator[OmRow]:
    """`under`: `lookup` takes the rows' own hashes and answers every usage under each (a range
    probe a row, where one a child cost four times as many); else it takes the children's."""
    page: list[OmRow] = []
    for row in rows:
        page.append(row)
        if len(page) >= PAGE:
            yield from _attach(page, lookup, under)
            page = []
    if page:
        yield from _attach(page, lookup, under)


def _attach(page: Sequence[OmRow], lookup: Lookup, under: bool = False) -> list[OmRow]:
    parsed: list[dict[str, Any] | None] = []
    hashes: list[str | None] = []
    for row in page:
        data = load_object(row.json)  # unreadable: the check reports it, with the reason
        own = data.get("fullyQualifiedName") if data else None
        parsed.append(data)
        hashes.append(fqn_hash(own) if data and isinstance(own, str) and own else None)
    usages: Iterable[Sequence[Any]] = ()
    if under:  # every usage under the rows that may have children, then only theirs are walked
        owns = {h for h, data in zip(hashes, parsed, strict=True) if h and data and has_children(data)}
        usages = list(lookup(sorted(owns))) if owns else []  # read twice: a list
        owns = {p for u in usages for p in _parents(str(u[0])) if p in owns}
    wanted: dict[str, list[int]] = {}
    for n, (data, own_hash) in enumerate(zip(parsed, hashes, strict=True)):
        if data and own_hash and (not under or own_hash in owns):
            for child in child_hashes(data, own_hash):
                if child in wanted:
                    wanted[child].append(n)
                else:
                    wanted[child] = [n]
    if wanted and not under:
        usages = lookup(sorted(wanted))
    found: dict[int, list[dict[str, Any]]] = {}
    # (a usage under a row but of no child of it, a column since dropped, is not wanted: left out)
    for target, tag, source, label_type, state in usages if wanted else ():
        rows = wanted.get(str(target))
        if rows is None:
            continue
        for n in rows:
            label = {"tagFQN": tag, "source": source, "labelType": label_type, "state": state,
                     "target": str(target)}  # fmt: skip
            if n in found:
                found[n].append(label)
            else:
                found[n] = [label]
    return [
        row if data is None else _with(row, data, found.get(n), h)
        for n, (row, data, h) in enumerate(zip(page, parsed, hashes, strict=True))
    ]


def _parents(target: str) -> Iterator[str]:
    """Every hash a usage's target sits under (`a.b.c`: `a.b`, `a`)."""
    cut = target.rfind(".")
    while cut > 0:
        yield target[:cut]
        cut = target.rfind(".", 0, cut)


def _with(
    row: OmRow, data: dict[str, Any], labels: list[dict[str, Any]] | None, own_hash: str | None
) -> OmRow:
    """`dataclasses.replace(row, json=data, tags=..., own_hash=own_hash, text=<the JSON's text>)`,
    made directly (replace looks the fields up again for every row of the scan)."""
    tags = (*row.tags, *labels) if labels else row.tags
    text = row.json if isinstance(row.json, str | bytes) else None  # (bytearray: not kept)
    return om_row(
        row.id, data, row.updated_at, row.deleted, row.owners, tags, row.domains, own_hash, row.links, text
    )


def with_child_tags(engine: Any, entity_type: str, rows: Iterable[OmRow]) -> Iterator[OmRow]:
    """The rows, each with its children's tag_usage labels added (`target`: the child's hash)."""
    if entity_type not in CHILD_TAGGED:
        yield from rows
        return

    def lookup(hashes: list[str]) -> Iterator[Sequence[Any]]:
        postgres = engine.dialect.name == "postgresql"
        with engine.connect() as conn:
            for i in range(0, len(hashes), IN_LIST):
                chunk = hashes[i : i + IN_LIST]
                params: dict[str, Any]
                if postgres:  # one array parameter: no 1,000-parameter statement to parse and plan
                    sql, params = f"{COLUMNS} WHERE targetFQNHash = ANY(:hashes)", {"hashes": chunk}
                else:
                    marks = ", ".join(f":h{k}" for k in range(len(chunk)))
                    sql = f"{COLUMNS} WHERE targetFQNHash IN ({marks})"
                    params = {f"h{k}": v for k, v in enumerate(chunk)}
                yield from conn.execute(sql_of(engine)(sql), params)

    yield from _paged(rows, lookup)


class TagSpill:
    """Every tag_usage row, read in one query and kept in a temporary SQLite file by target."""

    def __init__(self, engine: Any, directory: str | None = None) -> None:
        self.path = temp_file("tags", ".sqlite", directory)
        self.db = sqlite3.connect(self.path, check_same_thread=False)
        try:
            self.db.execute("PRAGMA journal_mode = OFF")
            self.db.execute("PRAGMA synchronous = OFF")
            self.db.execute("CREATE TABLE t (target TEXT NOT NULL, tag, source, label_type, state)")
            with engine.connect() as conn:
                result = conn.execution_options(stream_results=True, yield_per=5000).execute(
                    sql_of(engine)(COLUMNS)
                )
                for batch in result.partitions(5000):
                    self.db.executemany(
                        "INSERT INTO t VALUES (?, ?, ?, ?, ?)", [(str(r[0]), *r[1:]) for r in batch]
                    )
            self.db.execute("CREATE INDEX t_target ON t (target)")
            self.db.commit()
        except BaseException:
            self.close()
            raise

    def _lookup(self, hashes: list[str]) -> list[Sequence[Any]]:
        sql = (
            "SELECT target, tag, source, label_type, state FROM t "
            "WHERE target IN (SELECT value FROM json_each(?)) ORDER BY target, rowid"
        )
        return self.db.execute(sql, (orjson.dumps(hashes).decode(),)).fetchall()

    def _under(self, owns: list[str]) -> list[Sequence[Any]]:
        """Every usage whose target starts with one of these hashes and a dot (a child's, a
        grandchild's), in (target, rowid) order as `_lookup` answers: one index range a hash
        (hashes are hex digits and dots, and '/' follows '.' in bytes). A usage under two of the
        hashes (a container's and its child container's) is answered once."""
        sql = (
            "SELECT t.rowid, t.target, t.tag, t.source, t.label_type, t.state FROM json_each(?) AS j "
            "CROSS JOIN t WHERE t.target > j.value || '.' AND t.target < j.value || '/'"
        )
        got = self.db.execute(sql, (orjson.dumps(owns).decode(),)).fetchall()
        if len(owns) > 1:  # a usage under two of them comes twice
            got = list({r[0]: r for r in got}.values())
        got.sort(key=_BY_TARGET)
        return [r[1:] for r in got]

    def attach(self, entity_type: str, rows: Iterable[OmRow]) -> Iterator[OmRow]:
        """The rows with their children's labels (see `with_child_tags`)."""
        return _paged(rows, self._under, under=True) if entity_type in CHILD_TAGGED else iter(rows)

    def close(self) -> None:
        self.db.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
