"""The auditor's own OpenMetadata search document, built from a row (the repair writes it).

Written from OpenMetadata's SearchIndex.buildSearchIndexDoc as its sources describe it, not
copied from any writer: the entity JSON without the fields the server never indexes, plus the
common attributes (displayName, entityType, owners, followers, totalVotes, descriptionStatus,
fqnParts, deleted as a boolean, tier apart from the tags) and fqnHash.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from auditor.platforms.openmetadata.derive import (
    enrich,
    inline_child_labels,
    part_hash,
    place_child_tags,
    unique_refs,
)

# SearchIndex.DEFAULT_EXCLUDED_FIELDS (top level)
EXCLUDED = ("changeDescription", "votes", "incrementalChangeDescription", "connection", "changeSummary")
# tag_usage stores enums by ordinal (TagLabel.TagSource, LabelType, State)
TAG_SOURCES = ("Classification", "Glossary")
LABEL_TYPES = ("Manual", "Propagated", "Automated", "Derived", "Generated")
STATES = ("Suggested", "Confirmed")
# the first release whose documents hold `classificationTags` / `glossaryTags` (ParseTags' tag FQNs
# split by TagLabel source; the 1.9-line SearchIndex and TableIndex read do not write them, the
# TaggableIndex line does; docs/versions.md says what the sources pin and what they do not)
SPLIT_TAGS_SINCE = (1, 10, 0)
# index classes that put `tier` whatever it is (TableIndex: `doc.put("tier", getTierTag())`, null
# when none); SearchIndex's common attributes add it only when there is one
TIER_ALWAYS = frozenset(
    {"table", "dashboard", "topic", "pipeline", "glossaryTerm", "database", "databaseSchema"}
)


def split_by_source(labels: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """ParseTags (newest): the FQNs of the Classification labels (a Tier among them) and of the
    Glossary labels, in the labels' order."""
    out: dict[str, list[str]] = {"classificationTags": [], "glossaryTags": []}
    for label in labels:
        field = {"Classification": "classificationTags", "Glossary": "glossaryTags"}.get(
            str(label.get("source"))
        )
        if field and label.get("tagFQN") and label["tagFQN"] not in out[field]:
            out[field].append(str(label["tagFQN"]))
    return out


def split_fqn(fqn: str) -> list[str]:
    """`service.db."schema.with.dots".table` -> its parts; a quoted part keeps its quotes."""
    if '"' not in fqn:
        return fqn.split(".")
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in fqn:
        if ch == '"':
            quoted = not quoted
            current.append(ch)
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


def fqn_hash(fqn: str) -> str:
    """FullyQualifiedName.buildHash: the MD5 hex of each part, joined with dots."""
    if '"' not in fqn:  # (most names) the parents' part, shared by every sibling, made once
        head, dot, last = fqn.rpartition(".")
        return _unquoted_hash(head) + "." + part_hash(last) if dot else part_hash(fqn)
    return ".".join(part_hash(p) for p in split_fqn(fqn))


@lru_cache(maxsize=4096)  # bounded: a catalog's tables sit under far fewer schemas
def _unquoted_hash(fqn: str) -> str:
    """`fqn_hash` of a name without quotes."""
    return ".".join(part_hash(p) for p in fqn.split("."))


def fqn_parts(fqn: str) -> list[str]:
    """SearchIndex.getFQNParts: FullyQualifiedName.getAllParts (every contiguous run of parts,
    joined with dots: `s`, `s.d`, `d.c`, ...) without the entity's own name (a set in
    OpenMetadata; sorted here)."""
    parts = split_fqn(fqn)
    out = {".".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}
    out.discard(parts[-1])
    return sorted(out)


def _ordinal(value: Any, names: tuple[str, ...]) -> Any:
    if isinstance(value, int) and 0 <= value < len(names):
        return names[value]
    return value


def tag_label(usage: Mapping[str, Any]) -> dict[str, Any]:
    """A tag_usage row (or an inline TagLabel) as the TagLabel the document carries."""
    fqn = usage.get("tagFQN")
    own_name = split_fqn(fqn)[-1].strip('"') if isinstance(fqn, str) and fqn else None
    label = {
        "tagFQN": fqn,
        "name": usage.get("name") or own_name,  # TagLabel.name: the last part of its FQN
        "source": _ordinal(usage.get("source"), TAG_SOURCES),
        "labelType": _ordinal(usage.get("labelType"), LABEL_TYPES),
        "state": _ordinal(usage.get("state"), STATES),
    }
    return {k: v for k, v in label.items() if v is not None}


def owner_ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    """An owner reference with its displayName filled (the name when it has none)."""
    out = {k: v for k, v in ref.items() if v is not None}
    out["displayName"] = out.get("displayName") or out.get("name")
    return {k: v for k, v in out.items() if v is not None}


def build_document(
    entity: Mapping[str, Any],
    entity_type: str,
    owners: Iterable[Mapping[str, Any]] = (),
    tags: Iterable[Mapping[str, Any]] = (),
    domains: Iterable[Mapping[str, Any]] = (),
    release: tuple[int, ...] | None = None,
    related: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole document for one entity: its JSON, then the attributes OpenMetadata adds (its
    children's tags, inherited owners and domains, column names: auditor/platforms/openmetadata/derive.py;
    `related`: its service, lineage, followers and votes from entity_relationship, relations.py)."""
    doc = {k: v for k, v in entity.items() if k not in EXCLUDED}
    owner_refs: dict[str, dict[str, Any]] = {}
    for ref in [*(entity.get("owners") or []), *owners]:
        key = str(ref.get("id") or f"{ref.get('type')}:{ref.get('name')}")
        owner_refs.setdefault(key, owner_ref(ref))
    tags = list(tags)
    own_hash = fqn_hash(str(entity.get("fullyQualifiedName") or ""))
    theirs = [t for t in tags if t.get("target") not in (None, own_hash)]  # the children's
    children = [{**tag_label(t), "target": t["target"]} for t in theirs]
    place_child_tags(doc, children, fqn_hash)
    labels: dict[str, dict[str, Any]] = {}
    own = [t for t in tags if t.get("target") in (None, own_hash)]
    for usage in [*(entity.get("tags") or []), *own, *inline_child_labels(entity), *children]:
        label = tag_label(usage)
        if label.get("tagFQN"):
            labels.setdefault(str(label["tagFQN"]), label)
    tier = next((t for t in labels.values() if str(t["tagFQN"]).split(".")[0].lower() == "tier"), None)
    fqn = entity.get("fullyQualifiedName") or entity.get("name") or ""
    votes = entity.get("votes") or {}
    doc.update(
        displayName=entity.get("displayName") or entity.get("name"),
        entityType=entity_type,
        owners=list(owner_refs.values()),
        domains=[owner_ref(d) for d in unique_refs([*(entity.get("domains") or []), *domains])],
        followers=[str(f.get("id")) for f in entity.get("followers") or [] if isinstance(f, Mapping)],
        totalVotes=max(int(votes.get("upVotes", 0)) - int(votes.get("downVotes", 0)), 0),
        descriptionStatus="COMPLETE" if entity.get("description") else "INCOMPLETE",
        # getCommonAttributesMap's source maps: empty when the row says nothing of them
        descriptionSources=entity.get("descriptionSources") or {},
        tagSources=entity.get("tagSources") or {},
        tierSources=entity.get("tierSources") or {},
        fqnParts=fqn_parts(str(fqn)),
        deleted=bool(entity.get("deleted") is True or str(entity.get("deleted")).lower() == "true"),
        tags=[t for t in labels.values() if t is not tier],
    )
    if tier is not None or entity_type in TIER_ALWAYS:
        doc["tier"] = tier
    if release is None or release >= SPLIT_TAGS_SINCE:
        doc.update(split_by_source(labels.values()))
    if fqn:
        doc["fqnHash"] = fqn_hash(str(fqn))
    doc.update(related or {})
    as_released(doc, release)
    return enrich(doc, entity, entity_type)


def as_released(doc: dict[str, Any], release: tuple[int, ...] | None) -> None:
    """The renames a release predates, undone: before 1.9 a document holds one `domain` (the
    1.9.0 migration made it `domains`), before 1.5 one `owner` (`owners` from 1.5.0). None: the
    newest shape."""
    if release is None:
        return
    for before, many, one in (((1, 9, 0), "domains", "domain"), ((1, 5, 0), "owners", "owner")):
        if release < before and many in doc:
            refs = doc.pop(many) or []
            doc[one] = refs[0] if refs else None
