"""A plain one-process HTTP reader of the documents a DataHub scan reads: the yardstick the scan
is held to (issue 38: "at most 1.2x a plain one-process HTTP reader of the same documents").

Nothing of the project: urllib3 (the clients' own transport), orjson, a point in time +
search_after, 2,000 hits a page, each index sorted by the keys the scan sorts it by, every
document's `_source` parsed. What it does with a hit is count it (and hand it to a `sink`:
bench/scan_bench.py's plain reader compares it with the entity's rows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import urllib3

PAGE = 2000


class PlainReader:
    def __init__(self, url: str, kind: str) -> None:
        self.base = url.rstrip("/")
        self.kind = kind  # "opensearch" or "elasticsearch"
        self.http = urllib3.PoolManager(maxsize=2)

    def _post(self, path: str, body: dict[str, Any] | None = None, method: str = "POST") -> Any:
        data = orjson.dumps(body) if body is not None else None
        response = self.http.request(
            method, self.base + path, body=data, headers={"Content-Type": "application/json"}
        )
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {response.data[:300]!r}")
        return orjson.loads(response.data)

    def read(
        self,
        index: str,
        sort: list[str],
        page: int = PAGE,
        slice_: tuple[int, int] | None = None,
        sink: Callable[[dict[str, Any]], None] | None = None,
    ) -> int:
        """Every document of `index` in `sort` order (of slice i of n of the point in time, when
        `slice_` is (i, n)); the number read. `sink`: handed each hit."""
        if self.kind == "opensearch":
            pit = self._post(f"/{index}/_search/point_in_time?keep_alive=5m")["pit_id"]
        else:
            pit = self._post(f"/{index}/_pit?keep_alive=5m")["id"]
        body: dict[str, Any] = {
            "size": page,
            "sort": [{f: {"order": "asc"}} for f in sort],
            "track_total_hits": False,
        }
        if slice_ is not None:
            body["slice"] = {"id": slice_[0], "max": slice_[1]}
        count = 0
        try:
            while True:
                body["pit"] = {"id": pit, "keep_alive": "5m"}
                response = self._post("/_search", body)
                pit = response.get("pit_id") or pit
                hits = response["hits"]["hits"]
                for hit in hits:
                    if hit["_source"] is not None:
                        count += 1
                    if sink is not None:
                        sink(hit)
                if len(hits) < page:
                    return count
                body["search_after"] = hits[-1]["sort"]
        finally:
            if self.kind == "opensearch":
                self._post("/_search/point_in_time", {"pit_id": [pit]}, method="DELETE")
            else:
                self._post("/_pit", {"id": pit}, method="DELETE")
