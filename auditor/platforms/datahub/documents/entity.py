"""One joined entity: its rows, its search doc, its system-metadata docs and its edges."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.core.records import EntityRows, SearchDoc, json_loads


@dataclass(slots=True)
class JoinedEntity:
    """Everything the store and the projections hold for one urn."""

    urn: str
    entity_type: str
    index: str | None  # the entity index this type's docs live in (None: no such index)
    rows: EntityRows | None = None
    doc: SearchDoc | None = None
    system_metadata: list[dict[str, Any]] = field(default_factory=list)
    edges: list[dict[str, Any]] = field(default_factory=list)
    _aspects: dict[str, Any] | None = None
    _malformed: dict[str, str] | None = None
    cache: dict[str, Any] = field(default_factory=dict)  # per-entity memo for checks

    def parse(self) -> None:
        aspects: dict[str, Any] = {}
        malformed: dict[str, str] = {}
        if self.rows is not None:
            for name, row in self.rows.rows.items():
                if name in self.rows.duplicated:
                    malformed[name] = (
                        "more than one version-0 row for this aspect (the table lacks DataHub's primary "
                        "key on urn, aspect, version): which one DataHub serves is undefined"
                    )
                    continue
                try:
                    value = json_loads(row.metadata)
                except ValueError as exc:
                    malformed[name] = f"metadata is not valid JSON: {exc}"
                    continue
                if not isinstance(value, dict):
                    malformed[name] = f"metadata is a JSON {type(value).__name__}, not an object"
                    continue
                aspects[name] = value
        self._aspects, self._malformed = aspects, malformed

    @property
    def aspects(self) -> dict[str, Any]:
        """The version-0 aspects parsed from JSON (malformed ones left out, see `malformed`)."""
        if self._aspects is None:
            self.parse()
        assert self._aspects is not None
        return self._aspects

    @property
    def malformed(self) -> dict[str, str]:
        if self._malformed is None:
            self.parse()
        assert self._malformed is not None
        return self._malformed

    def system_metadata_of(self, aspect: str) -> dict[str, Any] | None:
        row = self.rows.rows.get(aspect) if self.rows else None
        if row is None or not row.systemmetadata:
            return None
        try:
            value = json_loads(row.systemmetadata)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
