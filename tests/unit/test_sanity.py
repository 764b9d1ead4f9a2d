"""The sanity rules before deletion (auditor/core/sanity.py), which every platform's scan and
repair share: when a scan's orphans make the store "far smaller than the index", and how much
of an index a repair deletes without being given the number."""

from __future__ import annotations

import pytest

from auditor.core.sanity import StoreSmaller, refuse, refuse_deletion, store_smaller
from auditor.errors import DeletionRefused
from auditor.exit_codes import ExitCode


def test_most_documents_orphaned_is_the_store_smaller_a_few_are_findings() -> None:
    assert store_smaller(50, {"i": 54}, {"i": 3}) is None  # a few orphans: each its own finding
    assert store_smaller(20, {"i": 24}, {"i": 4}) is None  # most of a tiny index, under the floor
    found = store_smaller(3, {"a": 30, "b": 24}, {"a": 28, "b": 23})
    assert found is not None and (found.rows, found.documents, found.orphans) == (3, 54, 51)
    assert found.indices == {"a": (28, 30), "b": (23, 24)} and "51 of them (94%)" in found.text
    # one index emptied of its rows while the others are fine: said, naming that index
    one = store_smaller(500, {"a": 480, "b": 40}, {"b": 40})
    assert one is not None and one.indices == {"b": (40, 40)}
    # an empty store: from two orphans on (one is a finding)
    assert store_smaller(0, {"i": 1}, {"i": 1}) is None
    empty = store_smaller(0, {"i": 2}, {"i": 2})
    assert empty is not None and "holds no entity" in empty.text


def test_a_sharded_scan_adds_its_shards_findings() -> None:
    a, b = StoreSmaller(1, 30, 28, {"i": (28, 30)}), StoreSmaller(2, 24, 20, {"i": (20, 24)})
    assert a.plus(b) == StoreSmaller(3, 54, 48, {"i": (48, 54)}) and a.plus(None) == a
    assert StoreSmaller.of({"rows": 3, "documents": 54, "orphans": 48, "indices": {"i": [48, 54]}}) == a.plus(
        b
    )


def test_a_repair_deletes_a_small_share_of_an_index_unasked_never_the_whole_index() -> None:
    assert refuse_deletion({"i": 1}, {"i": 20}, None) is None  # a small catalog's orphan
    assert refuse_deletion({"i": 10}, {"i": 20}, None) is None  # the floor
    assert refuse_deletion({"i": 50}, {"i": 1000}, None) is None  # 5%
    assert refuse_deletion({"i": 1}, {"i": 1}, None) is None  # an index of one document
    assert "(100%)" in (refuse_deletion({"i": 3}, {"i": 3}, None) or "")  # never a whole index
    assert "51 of the 1000" in (refuse_deletion({"i": 51}, {"i": 1000}, None) or "")
    # over several indices each under the floor, the whole is judged too
    assert refuse_deletion({"a": 9, "b": 9}, {"a": 20, "b": 20}, None) is not None


def test_the_number_given_allows_up_to_it_whatever_the_share() -> None:
    assert refuse_deletion({"i": 54}, {"i": 54}, 54) is None
    assert "more than --allow-delete 53" in (refuse_deletion({"i": 54}, {"i": 54}, 53) or "")
    with pytest.raises(DeletionRefused) as refused:
        refuse({"i": 54}, {"i": 54}, None, "postgresql://***@db/datahub")
    assert refused.value.exit_code == ExitCode.STORE_SMALLER == 8
    assert "Nothing was deleted" in str(refused.value) and "--allow-delete 54" in (refused.value.hint or "")
