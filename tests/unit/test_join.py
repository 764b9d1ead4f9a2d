"""The merge-join: full outer join of sorted streams, order enforced, prefetch transparent."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditor.core.join import JoinOrderError, merge_join, ordered, ordered_groups, prefetch


def test_outer_join_of_three_streams() -> None:
    a = iter([("a", 1), ("c", 3), ("d", 4)])
    b = iter([("b", "B"), ("c", "C")])
    c = iter([("d", "D"), ("e", "E")])
    rows = list(merge_join({"a": a, "b": b, "c": c}))
    assert rows == [
        ("a", {"a": 1}),
        ("b", {"b": "B"}),
        ("c", {"a": 3, "b": "C"}),
        ("d", {"a": 4, "c": "D"}),
        ("e", {"c": "E"}),
    ]


def test_byte_order_of_awkward_urns_matches_python_order() -> None:
    urns = [
        "urn:li:dataset:(urn:li:dataPlatform:hive,A b,PROD)",
        "urn:li:dataset:(urn:li:dataPlatform:hive,a%b,PROD)",
        "urn:li:dataset:(urn:li:dataPlatform:hive,café,PROD)",
        "urn:li:dataset:(urn:li:dataPlatform:hive,中文,PROD)",
        "urn:li:dataset:(urn:li:dataPlatform:hive,~x*,PROD)",
    ]
    # UTF-8 byte order (what binary collations and Lucene keywords use) == code point order
    assert sorted(urns) == sorted(urns, key=lambda u: u.encode("utf-8"))
    left = iter([(u, "row") for u in sorted(urns)])
    right = iter([(u, "doc") for u in sorted(urns, key=lambda u: u.encode())])
    assert all(len(parts) == 2 for _, parts in merge_join({"l": left, "r": right}))


def test_out_of_order_stream_fails_loudly() -> None:
    with pytest.raises(JoinOrderError, match="not in urn byte order"):
        list(ordered(["a", "c", "b"], lambda x: x, "store"))


def test_ordered_groups() -> None:
    docs = [("a", 1), ("a", 2), ("b", 3)]
    assert list(ordered_groups(docs, "idx")) == [("a", [1, 2]), ("b", [3])]
    assert list(ordered_groups([], "idx")) == []
    with pytest.raises(JoinOrderError, match="idx is not in urn byte order"):
        list(ordered_groups([("b", 1), ("b", 2), ("a", 3)], "idx"))


@given(st.lists(st.tuples(st.sampled_from(["", "a", "a ", "b", "é", "中"]), st.integers()), max_size=30))
def test_ordered_groups_is_groupby_of_sorted_pairs_and_refuses_others(pairs: list[tuple[str, int]]) -> None:
    keys = [k for k, _ in pairs]
    if keys == sorted(keys):
        expected = [(k, [v for _, v in g]) for k, g in itertools.groupby(pairs, key=lambda p: p[0])]
        assert list(ordered_groups(pairs, "s")) == expected
    else:
        with pytest.raises(JoinOrderError):
            list(ordered_groups(pairs, "s"))


def test_prefetch_keeps_order_and_reraises() -> None:
    assert list(prefetch(iter(range(5000)), chunk=7)) == list(range(5000))

    def broken():
        yield 1
        raise RuntimeError("server went away")

    with pytest.raises(RuntimeError, match="server went away"):
        list(prefetch(broken()))


def test_prefetch_closes_its_source_when_read_whole_or_left_early() -> None:
    """The source (a generator holding a database cursor, say) is closed by the thread that runs
    it: at its end, and when the reader stops early (its cursor not left open until GC)."""
    import threading

    closed: list[str] = []

    def source(n: int) -> object:
        try:
            yield from range(n)
        finally:
            closed.append(threading.current_thread().name)

    assert list(prefetch(source(5), depth=1, chunk=2)) == [0, 1, 2, 3, 4]
    assert closed == ["prefetch"]
    early = prefetch(source(10_000), depth=1, chunk=10)
    assert [next(early) for _ in range(3)] == [0, 1, 2]
    early.close()
    assert closed == ["prefetch", "prefetch"]
