"""The tags of an entity's children (columns, tasks, fields), looked up by their FQN hashes.

A child's tags are `tag_usage` rows whose `targetFQNHash` is the child's FQN hash. Matching
them by prefix of the entity's hash in SQL cannot use an index on PostgreSQL (a LIKE under a
non-C collation, and an OR with the entity's own hash): per row it read the whole table.
Instead the children's FQNs come from the row's JSON, their hashes are computed here, and a
page of rows takes one indexed `IN` lookup per 100 hashes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from auditor.core.json_guard import load_object
from auditor.platforms.openmetadata.derive import CHILD_TAGGED, child_hashes
from auditor.platforms.openmetadata.document import fqn_hash
from auditor.platforms.openmetadata.records import OmRow

IN_LIST = 1000  # hashes per lookup (an index probe each)
PAGE = 500


def with_child_tags(engine: Engine, entity_type: str, rows: Iterable[OmRow]) -> Iterator[OmRow]:
    """The rows, each with its children's tag_usage labels added (`target`: the child's hash)."""
    if entity_type not in CHILD_TAGGED:
        yield from rows
        return
    page: list[OmRow] = []
    for row in rows:
        page.append(row)
        if len(page) >= PAGE:
            yield from _attach(engine, page)
            page = []
    if page:
        yield from _attach(engine, page)


def _attach(engine: Engine, page: Sequence[OmRow]) -> list[OmRow]:
    wanted: dict[str, list[int]] = {}
    for n, row in enumerate(page):
        data = load_object(row.json)  # unreadable: the check reports it, with the reason
        own = data.get("fullyQualifiedName") if data else None
        if data and isinstance(own, str) and own:
            for child in child_hashes(data, fqn_hash(own)):
                wanted.setdefault(child, []).append(n)
    if not wanted:
        return list(page)
    found: dict[int, list[dict[str, Any]]] = {}
    hashes = sorted(wanted)
    postgres = engine.dialect.name == "postgresql"
    columns = "SELECT targetFQNHash, tagFQN, source, labelType, state FROM tag_usage"
    with engine.connect() as conn:
        for i in range(0, len(hashes), IN_LIST):
            chunk = hashes[i : i + IN_LIST]
            params: dict[str, Any]
            if postgres:  # one array parameter: no 1,000-parameter statement to parse and plan
                sql, params = f"{columns} WHERE targetFQNHash = ANY(:hashes)", {"hashes": chunk}
            else:
                marks = ", ".join(f":h{k}" for k in range(len(chunk)))
                sql = f"{columns} WHERE targetFQNHash IN ({marks})"
                params = {f"h{k}": v for k, v in enumerate(chunk)}
            for target, tag, source, label_type, state in conn.execute(text(sql), params):
                label = {"tagFQN": tag, "source": source, "labelType": label_type, "state": state}
                for n in wanted.get(str(target), ()):
                    found.setdefault(n, []).append({**label, "target": str(target)})
    return [replace(row, tags=(*row.tags, *found[n])) if n in found else row for n, row in enumerate(page)]
