"""What one deployment indexes: its release's rules narrowed by its indices' live mappings.

The auditor's projection follows the installed wheel (the newest rules). A deployment's documents
were written by its own release: a field that release does not write is never expected of them,
and neither is a field an index's mapping does not hold (the server never indexed it: DataHub
adds a field to the mapping before any document can hold it). Both are `withheld`: left out of
the expected document and never written by a repair.

A document that lacks exactly fields its release adds over an older one, the rest consistent,
was written by that older release (an upgrade whose RestoreIndices never ran): `older_release`
names it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from auditor.core.records import DYNAMIC
from auditor.platforms.datahub.documents.emit import _aspect_fields
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.versions.rules import Catalog, ReleaseRules, catalog

# fields every document holds that no aspect writes: never withheld
_ALWAYS = frozenset({"urn", "systemCreated", "runId", "removed"})


@dataclass
class IndexRules:
    """The release a scan judges by, its indices' mappings, and what documents showed of both."""

    registry: Registry
    rules: ReleaseRules
    catalog: Catalog
    mappings: dict[str, frozenset[str] | None] = field(default_factory=dict)  # index -> mapped fields
    # reads the mapping of an index not in `mappings` (index or alias -> fields; None: no witness)
    read_mapping: Callable[[str], Mapping[str, frozenset[str]]] | None = None
    # when the judged release started writing (its first upgrade row); None: unknown
    since: datetime | None = None
    # the ids of the upgrade steps the deployment finished (a backfill's runId: documents/behind.py)
    upgrade_steps: frozenset[str] = frozenset()
    # the upgrade rows these rules were chosen from, as read (None: not read); DataHub's own
    # reindexes are told from the same rows (scan/reindex.py), not read again
    upgrade_rows: list[tuple[str, str, datetime | None]] | None = None
    # (entity type, field) -> documents holding a field the judged release does not write
    newer_fields: Counter[tuple[str, str]] = field(default_factory=Counter)
    _withheld: dict[tuple[str, str | None], tuple[frozenset[str], frozenset[str]]] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def installed(cls, registry: Registry) -> IndexRules:
        """The installed wheel's own rules (the newest release known), no mapping."""
        known = catalog()
        try:
            import datahub

            rules = known.get(datahub.__version__)
        except (ImportError, KeyError):
            rules = known.newest
        return cls(registry, rules, known)

    @property
    def release(self) -> str:
        return self.rules.release

    def installed_fields(self, entity_type: str) -> frozenset[str]:
        """Every doc field the installed rules write for the type."""
        out: set[str] = set()
        for spec in self.registry.entity_aspects(entity_type):
            out.update(name for name, _ in _aspect_fields(spec))
        return frozenset(out)

    def withheld(self, entity_type: str, index: str | None) -> frozenset[str]:
        """Fields never expected of the type's documents in `index`: its release does not write
        them, or no document there holds them (the index's mapping lacks them)."""
        return self._split(entity_type, index)[0]

    def not_written(self, entity_type: str, index: str | None) -> frozenset[str]:
        """Fields a repair never writes to the type's documents in `index`: those its release
        does not write, and those its mapping lacks unless the mapping takes new fields as
        documents bring them (`dynamic`): there the server itself adds a field its release
        writes with the first document that holds it, and so does a repair (under live writes a
        field can enter the mapping while a repair runs)."""
        withheld, by_release = self._split(entity_type, index)
        mapped = self.mapped(index) if index is not None else None
        return by_release if mapped is not None and DYNAMIC in mapped else withheld

    def not_in_release(self, entity_type: str) -> frozenset[str]:
        """Fields the installed rules write that the judged release does not."""
        return self._split(entity_type, None)[1]

    def _split(self, entity_type: str, index: str | None) -> tuple[frozenset[str], frozenset[str]]:
        key = (entity_type, index)
        found = self._withheld.get(key)
        if found is None:
            installed = self.installed_fields(entity_type)
            by_release = installed - self.rules.fields_of(entity_type) - _ALWAYS
            mapped = self.mapped(index) if index is not None else None
            by_mapping = installed - mapped - _ALWAYS if mapped is not None else frozenset()
            found = self._withheld[key] = (by_release | by_mapping, by_release)
        return found

    def mapped(self, index: str) -> frozenset[str] | None:
        """The fields `index`'s mapping holds (None: not known, nothing withheld for it)."""
        if index not in self.mappings and self.read_mapping is not None:
            found = self.read_mapping(index)
            self.mappings.update(found)
            self.mappings.setdefault(index, None)
        return self.mappings.get(index)

    def searchable(self, entity_type: str) -> bool:
        """Whether the judged release writes a document for the type at all (DataHub writes none
        for a type with no searchable field: telemetry, globalSettings, dataHubUpgrade, ...)."""
        if entity_type not in self.rules.entities:  # unknown to the release: the installed rules
            return bool(self.installed_fields(entity_type))
        return self.rules.searchable(entity_type)

    def note_newer(self, entity_type: str, source: Mapping[str, object]) -> None:
        """Count the fields a document holds that the judged release does not write."""
        for name in self.not_in_release(entity_type):
            if source.get(name) is not None:
                self.newer_fields[(entity_type, name)] += 1

    def older_release(self, entity_type: str, aspects: Iterable[str], fields: Iterable[str]) -> str | None:
        """The newest release before the judged one that writes none of `fields` for the type but
        knows every aspect in `aspects` (so it indexed them): the release that wrote a document
        lacking exactly those fields. None: no older release explains it."""
        found = self.older_releases(entity_type, aspects, fields)
        return found[0] if found else None

    def older_releases(
        self, entity_type: str, aspects: Iterable[str], fields: Iterable[str]
    ) -> tuple[str, ...]:
        """Every shipped release, newest first, that would have written such a document: the
        newest `older_release` and the older ones next to it that index it alike (1.0.0 to
        1.2.0 write the same chart document: which of them ran, the document cannot tell)."""
        wanted, held = set(fields), set(aspects)
        out: list[str] = []
        for rules in self.catalog.older_than(self.rules.release):
            known = rules.entities.get(entity_type)
            fits = known is not None and held <= known and not wanted & rules.fields_of(entity_type)
            if fits:
                out.append(rules.release)
            elif out:
                break
        return tuple(out)

    def newer_warning(self) -> str | None:
        """A warning when documents hold fields the judged release never writes (a wrong
        --platform-version, or a release newer than the data says)."""
        if not self.newer_fields:
            return None
        docs = sum(self.newer_fields.values())
        shown = ", ".join(f"{t}.{f} ({n})" for (t, f), n in self.newer_fields.most_common(3))
        return (
            f"{docs} document field(s) are ones DataHub {self.rules.release} does not write "
            f"(e.g. {shown}): the documents were written by a newer release than the one judged by "
            "(is --platform-version right?)"
        )
