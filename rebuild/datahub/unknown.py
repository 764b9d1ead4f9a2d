"""`--urn` values no entity has: neither a row in the table nor a document in any index.

A repair of a urn with rows rebuilds it; one with documents and no rows removes them (orphans).
A urn with neither is a typo or another environment's: the repair refuses it (exit 7, as the
triage and OpenMetadata's repair do) rather than report "applied and verified clean" over
nothing. Each urn is looked for where a repair would touch it: its rows, its entity document (V2,
and V3 where the deployment has it), its system-metadata documents, the graph edges it is the
source of.
"""

from __future__ import annotations

from collections.abc import Sequence

from auditor.backends.protocols import Search
from auditor.errors import UnknownUrn
from auditor.platforms.datahub.backends.store import MetadataStore
from auditor.platforms.datahub.naming import (
    document_id,
    document_id_v3,
    entity_index,
    graph_index,
    system_metadata_index,
)
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urns import entity_type
from auditor.platforms.datahub.v3 import v3_indices
from auditor.rebuild.datahub.stored import left_behind, read_entity_docs


def unknown_urns(
    store: MetadataStore, search: Search, registry: Registry, prefix: str, urns: Sequence[str]
) -> list[str]:
    """The urns of `urns` that have no row and no document (in the order given)."""
    wanted = list(dict.fromkeys(urns))
    held = {urn for urn, _ in store.fingerprints(tuple(sorted(wanted)))}  # keys and digests, no JSON
    rest = [u for u in wanted if u not in held]
    if not rest:
        return []
    by_index: dict[str, dict[str, str]] = {}
    v3 = v3_indices(search, prefix, registry)  # a V3 document (its own id) counts as one
    for urn in rest:
        name = registry.spelled(entity_type(urn))
        by_index.setdefault(entity_index(name, prefix), {})[document_id(urn)] = urn
        if name in v3:
            by_index.setdefault(v3[name], {})[document_id_v3(urn)] = urn
    present = {i for i in by_index if i in search.names(i)}  # one by one: a missing one lists none
    stored = read_entity_docs(search, {i: ids for i, ids in by_index.items() if i in present})
    rest = [u for u in rest if u not in stored.docs and u not in stored.unread]  # unread: not known absent
    for index, field in ((system_metadata_index(prefix), "urn"), (graph_index(prefix), "source.urn")):
        if rest and index in search.names(index):
            found = left_behind(search, index, field, {u: set() for u in rest})
            rest = [u for u in rest if u not in found]
    return rest


def refuse_unknown(
    store: MetadataStore, search: Search, registry: Registry, prefix: str, urns: Sequence[str]
) -> None:
    """UnknownUrn naming the first `--urn` no entity has (and how many more)."""
    unknown = unknown_urns(store, search, registry, prefix, urns)
    if unknown:
        more = f" (and {len(unknown) - 1} more --urn like it)" if len(unknown) > 1 else ""
        raise UnknownUrn(
            f"no row and no document has the urn {unknown[0]!r}{more}: nothing to repair",
            hint="check the urn (`auditor triage URN` names near matches); a urn with rows is rebuilt, "
            "one with documents and no rows has them removed",
        )
