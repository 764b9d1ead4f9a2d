"""The children's tags found by a range under each row's hash (a whole-table stream's TagSpill)
equal those found by a probe for each child's hash (a read of a few rows): the two lookups of
auditor/platforms/openmetadata/child_tags.py, over the cases a real catalog holds."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from auditor.platforms.openmetadata.child_tags import _attach
from auditor.platforms.openmetadata.derive import part_hash, quote_name
from auditor.platforms.openmetadata.document import fqn_hash
from auditor.platforms.openmetadata.records import om_row


def _h(fqn: str) -> str:
    return fqn_hash(fqn)


def _child(parent_fqn: str, *names: str) -> str:
    return ".".join([_h(parent_fqn), *(part_hash(quote_name(n)) for n in names)])


def _row(n: int, fqn: str, **children: Any) -> Any:
    return om_row(f"id-{n:03d}", json.dumps({"id": f"id-{n:03d}", "fullyQualifiedName": fqn, **children}),
                  None, False, (), (), ())  # fmt: skip


ROWS = [
    _row(1, "svc.db.s.orders", columns=[{"name": "id"}, {"name": "address", "children": [{"name": "zip"}]}]),
    _row(2, 'svc.db.s."dotted.name"', columns=[{"name": "a.b"}]),
    _row(3, "svc.db.s.empty", columns=[]),  # child keys, no child: a usage under it is stale
    _row(4, "svc.db.s.nochildren"),
    _row(5, "svc.db.s.orders", columns=[{"name": "id"}]),  # a second row of the same name
    _row(6, "svc.pipe", tasks=[{"name": "load"}]),
    _row(7, "svc.db.s.untagged", columns=[{"name": "x"}]),
    om_row("id-008", "{not json", None, False, (), (), ()),
    _row(9, "svc.container", dataModel={"columns": [{"name": "c"}]}),
    _row(10, "svc.container.inner", dataModel={"columns": [{"name": "c"}]}),
]
USAGES = [  # (target, tag, source, labelType, state), in (target, rowid) order once sorted
    (_child("svc.db.s.orders", "id"), "PII.Sensitive", 0, 0, 1),
    (_child("svc.db.s.orders", "id"), "Glossary.Term", 1, 0, 1),
    (_child("svc.db.s.orders", "address", "zip"), "PII.Address", 0, 0, 1),
    (_child("svc.db.s.orders", "dropped"), "PII.Stale", 0, 0, 1),  # a column since dropped
    (_h("svc.db.s.orders"), "Tier.Tier1", 0, 0, 1),  # the row's own: not a child's
    (_child('svc.db.s."dotted.name"', "a.b"), "PII.Dotted", 0, 0, 1),
    (_child("svc.db.s.empty", "gone"), "PII.Stale", 0, 0, 1),
    (_child("svc.pipe", "load"), "Ops.Task", 0, 0, 1),
    (_child("svc.container", "c"), "Data.Outer", 0, 0, 1),
    (_child("svc.container.inner", "c"), "Data.Inner", 0, 0, 1),
]


def _ordered(rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    ranked = sorted(enumerate(rows), key=lambda r: (r[1][0], r[0]))
    return [row for _, row in ranked]


def _probe(hashes: list[str]) -> list[tuple[Any, ...]]:
    wanted = set(hashes)
    return _ordered([u for u in USAGES if u[0] in wanted])


def _under(owns: list[str]) -> list[tuple[Any, ...]]:
    return _ordered([u for u in USAGES if any(u[0].startswith(h + ".") for h in owns)])


def _labels(rows: Sequence[Any]) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    return [(r.id, tuple((t["tagFQN"], t["target"]) for t in r.tags)) for r in rows]


def test_the_range_under_each_row_finds_what_a_probe_for_each_child_finds() -> None:
    by_range, by_probe = _attach(ROWS, _under, under=True), _attach(ROWS, _probe)
    assert _labels(by_range) == _labels(by_probe)
    found = dict(_labels(by_range))
    assert sorted(t for t, _ in found["id-001"]) == ["Glossary.Term", "PII.Address", "PII.Sensitive"]
    assert "PII.Stale" not in {t for labels in found.values() for t, _ in labels}  # dropped columns
    assert "Tier.Tier1" not in {t for t, _ in found["id-001"]}  # the row's own is not a child's
    assert [t for t, _ in found["id-002"]] == ["PII.Dotted"]
    assert found["id-003"] == found["id-004"] == found["id-007"] == ()
    assert [t for t, _ in found["id-005"]] == [t for t, _ in found["id-001"] if t != "PII.Address"]
    assert [t for t, _ in found["id-006"]] == ["Ops.Task"]
    assert [t for t, _ in found["id-009"]] == ["Data.Outer"]  # not its child container's column
    assert [t for t, _ in found["id-010"]] == ["Data.Inner"]


def test_rows_keep_their_order_the_unreadable_one_as_it_came() -> None:
    out = _attach(ROWS, _under, under=True)
    assert [r.id for r in out] == [r.id for r in ROWS]
    assert out[7] is ROWS[7]  # unreadable JSON: passed on for the check to report
    assert out[0].own_hash == _h("svc.db.s.orders") and isinstance(out[0].json, dict)
