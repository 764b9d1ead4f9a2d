"""The rows a repair walks: version-0 rows of a selection, keyset-paged on (urn, aspect)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from auditor.core.model import Selection
from auditor.core.records import AspectRow, rows_digest
from auditor.platforms.datahub.backends.store import MetadataStore

PAGE = 5000


@dataclass
class RowSource:
    """Pages of `(urn, row)` in (urn, aspect) byte order, never by OFFSET."""

    store: MetadataStore
    selection: Selection

    def page(self, after: tuple[str, str] | None, limit: int) -> list[tuple[str, AspectRow]]:
        return self.store.page_rows(self.selection, after, limit)

    def order(self) -> str:
        """The order of the pages' keys: "bytes", or "collation" where PostgreSQL walks its
        primary key in a collation that is not byte order (a selection without a urn list)."""
        store = self.store
        native = store.postgres and not self.selection.urns and not store.sorts_as_bytes()
        return "collation" if native else "bytes"

    def unchanged(self, page: list[tuple[str, AspectRow]]) -> bool:
        """Nothing in the page's key range was written, deleted or rewritten since it was read:
        one digest the database computes against the same digest of the rows as read."""
        if not page:
            return True
        urns = tuple(sorted({u for u, _ in page})) if self.selection.urns else ()
        first, last = (page[0][0], page[0][1].aspect), (page[-1][0], page[-1][1].aspect)
        return self.store.page_digest(self.selection, first, last, urns, len(page)) == rows_digest(page)

    def urns(self) -> Iterator[str]:
        """Each urn with a row in the selection, once, in order."""
        after, last = None, None
        while page := self.page(after, PAGE):
            for urn, _ in page:
                if urn != last:
                    yield urn
                    last = urn
            after = (page[-1][0], page[-1][1].aspect)
