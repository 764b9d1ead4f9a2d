"""DataHub's zero-downtime reindex as the scan reads it: from its upgrade state, or index names."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from auditor.core.records import AspectRow, EntityRows
from auditor.platforms.datahub.scan.reindex import DataHubReindexRunning, detect, refuse_full

ALIAS = "p_datasetindex_v2"
NEXT = "p_datasetindex_v2_1_7_0-1_1767225600000"


class Store:
    def __init__(self, result: dict[str, str] | None) -> None:
        self.result = result

    def stream_entities(self, types: tuple[str, ...] = (), urn_like: str | None = None) -> Any:
        assert types == ("dataHubUpgrade",) and urn_like is None  # the type's urn range, no LIKE
        if self.result is None:
            return
        meta = json.dumps({"state": "IN_PROGRESS", "result": self.result})
        row = AspectRow("dataHubUpgradeResult", meta, None, datetime.now(UTC))
        yield EntityRows("urn:li:dataHubUpgrade:BuildIndicesIncremental_1.7.0-1", {row.aspect: row})


class Search:
    def __init__(self, meta: dict[str, tuple[list[str], int]]) -> None:
        self.meta = meta

    def index_meta(self, pattern: str) -> dict[str, tuple[list[str], int]]:
        assert pattern == "p_*index_v*"
        return self.meta


STATE = {f"{ALIAS}.nextIndexName": NEXT, f"{ALIAS}.status": "IN_PROGRESS", f"{ALIAS}.reindexStartTime": "5"}


def test_the_upgrade_state_names_a_next_index_not_behind_the_alias() -> None:
    search = Search({ALIAS: ([], 1), NEXT: ([], 2)})
    (found,) = detect(Store(STATE), search, "p", [ALIAS])
    assert (found.phase, found.next_index, found.serving, found.source) == (
        "in_progress",
        NEXT,
        (ALIAS,),
        "upgrade state",
    )
    assert NEXT in found.notice() and "not" in found.notice()
    with pytest.raises(DataHubReindexRunning) as refused:
        refuse_full(Store(STATE), search, "p", [ALIAS])
    assert refused.value.exit_code == 3 and NEXT in str(refused.value)


def test_after_the_swap_it_is_a_notice_and_full_is_allowed() -> None:
    search = Search({NEXT: ([ALIAS], 2)})
    done = {**STATE, f"{ALIAS}.status": "COMPLETED"}
    (found,) = detect(Store(done), search, "p", [ALIAS])
    assert found.phase == "swapped" and found.serving == (NEXT,)
    refuse_full(Store(done), search, "p", [ALIAS])  # nothing raised


def test_without_the_state_row_a_newer_versioned_index_behind_no_alias_is_one() -> None:
    own_full = f"{ALIAS}_1767225600001"  # the auditor's own --full staging name: no version
    older = "p_datasetindex_v2_1_6_0-0_1700000000000"  # an earlier reindex's kept backing index
    search = Search({"p_datasetindex_v2_x": ([ALIAS], 10), older: ([], 3), own_full: ([], 20)})
    assert detect(Store(None), search, "p", [ALIAS]) == []
    search.meta[NEXT] = ([], 30)
    (found,) = detect(Store(None), search, "p", [ALIAS])
    assert (found.next_index, found.source, found.status) == (NEXT, "index names", "")


def test_a_state_for_another_index_or_a_deleted_next_index_is_ignored() -> None:
    search = Search({ALIAS: ([], 1)})  # the next index is gone (a failed run cleaned up)
    assert detect(Store(STATE), search, "p", [ALIAS]) == []
    assert detect(Store(STATE), Search({ALIAS: ([], 1), NEXT: ([], 2)}), "p", ["p_chartindex_v2"]) == []


def test_the_reindex_and_v3_sections_survive_json_and_a_shard_merge() -> None:
    from auditor.core.model import Report, Selection
    from auditor.reports.json_report import to_dict
    from auditor.reports.merge import from_dict, merge

    notice = {"alias": ALIAS, "phase": "in_progress", "next_index": NEXT}
    parts = []
    for i, urn in enumerate(("urn:li:dataset:a", "urn:li:dataset:b")):
        v3 = {"indices": {"dataset": "p_primaryindex_v3"}, "wrong_in_v3_only": [urn], "disagreeing": 1}
        r = Report(datetime.now(UTC), scope=Selection(shard=(i, 2)), sections={"reindex": [notice], "v3": v3})
        parts.append(from_dict(json.loads(json.dumps(to_dict(r), default=str))))
    merged = merge(parts)
    assert merged.sections["reindex"] == [notice]
    v3 = merged.sections["v3"]
    assert v3["wrong_in_v3_only"] == ["urn:li:dataset:a", "urn:li:dataset:b"]
    assert v3["disagreeing"] == 2 and v3["indices"] == {"dataset": "p_primaryindex_v3"}
