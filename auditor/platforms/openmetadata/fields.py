"""OpenMetadata's compared fields: what the row says, what the doc says, and how they are compared.

The key fields of an entity: version, updatedAt, name, fullyQualifiedName, description,
owners, tags, domains and deleted. OpenMetadata keeps owners and tags out of the entity JSON (its
EntityRepository nulls them before storing: they live in `entity_relationship`, relation
owns=8, and `tag_usage`), so the truth for those two is the relationship rows, plus whatever
the JSON itself holds (a writer that keeps them inline). Rules:

- `deleted` is compared as a boolean: the soft-delete path writes the string 'true' by script,
  a rebuild writes true; a doc without it reads as not deleted.
- owners compare as a set of ids (order is not meaning), tags as a set of tag FQNs; a doc's
  `tier` (OpenMetadata moves the Tier.* tag out of `tags`) counts as one of its tags.
- domains compare as a set of ids: the truth is the entity's `has` (10) relationships from a
  domain, else its parent's (inherited); a document holds `domains` (1.9 on) or, written before
  1.9's rename, one `domain` object (still read after an upgrade; so is a row's `domain`).
- `classificationTags` / `glossaryTags` (the tag FQNs split by TagLabel source, newer releases:
  auditor/platforms/openmetadata/document.py SPLIT_TAGS_SINCE) are compared where the document
  holds them: each must hold the entity's own labels of that source and nothing but its own and
  its children's (which children a release counts differs); `Tier.*` is left out of both sides
  (newer ParseTags count it, older did not). A document without them was written by a release
  that did not write them: never a difference.
- version as a number (the index maps it to float), updatedAt as an integer, a missing or
  null description as the empty one; a doc one soft delete (or restore) behind keeps the
  version before it, as OpenMetadata's own script leaves it (`only_the_delete_flag_moved`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from auditor.core.json_guard import loads
from auditor.platforms.openmetadata import relations
from auditor.platforms.openmetadata.derive import (
    MAPPING,
    has_children,
    inline_child_labels,
    is_map,
    part_hash,
)

COMPARED = ("version", "updatedAt", "name", "fullyQualifiedName", "description", "owners", "tags", "domains")
# a doc read for the comparison needs only these (`_source` filtering keeps the read small)
DOC_SOURCE = (
    "id",
    "name",
    "fullyQualifiedName",
    "description",
    "version",
    "updatedAt",
    "deleted",
    "owners.id",
    "owners.type",
    "owners.name",
    "tags.tagFQN",
    "tier.tagFQN",
    "domains.id",
    "domain.id",  # an index written before 1.9 renamed it
    "owner.id",  # ... and before 1.5 renamed `owner`
    "owner.type",
    "owner.name",
    "classificationTags",  # newer releases (document.py SPLIT_TAGS_SINCE)
    "glossaryTags",
    "service.id",
    "upstreamLineage.fromEntity.id",  # an empty list is left out by the filter: read as none
    "followers",
    "totalVotes",
)
SPLIT_FIELDS = ("classificationTags", "glossaryTags")
# TagLabel.TagSource as tag_usage stores it (an ordinal) or as a TagLabel spells it (any case) ->
# its field's place in SPLIT_FIELDS
_SOURCE_INDEX: dict[float | str, int] = {0: 0, 1: 1, "classification": 0, "glossary": 1}
_SOURCE_INDEX.update({"Classification": 0, "Glossary": 1})  # as TagLabel spells them: no lower()
_NO_SPLIT_TAGS = ((frozenset[str](), frozenset[str]()), (frozenset[str](), frozenset[str]()))


def as_bool(value: Any) -> bool | None:
    """true / 'true' / 'True' / 1 -> True, false / 'false' / 0 -> False, None -> None; other -> None."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "t", "yes"):
            return True
        if lowered in ("false", "0", "f", "no", ""):
            return False
    return None


def _number(value: Any) -> float | None:
    if type(value) is float:  # the common case, without the try
        return round(value, 6)
    try:
        return None if value is None or isinstance(value, bool) else round(float(value), 6)
    except (TypeError, ValueError):
        return None


def owner_set(refs: Iterable[Any]) -> frozenset[str]:
    """The references' keys: an id lowercased, else `type:name`; what is neither is left out
    (made inline: every row and every document has some)."""
    out = set()
    for ref in refs:
        if type(ref) is dict or is_map(ref):  # (a dict without the call)
            if ref.get("id"):
                out.add(str(ref["id"]).lower())
            elif ref.get("name"):
                out.add(f"{ref.get('type') or ''}:{ref['name']}")
    return frozenset(out)


def _one(value: Any) -> list[Any]:
    return [value] if is_map(value) else []


def domain_refs(holder: Mapping[str, Any]) -> list[Any]:
    """A row's or a doc's domain references: `domains` (1.9 on) or the one `domain` before it."""
    single = holder.get("domain")
    return [*_list(holder.get("domains")), *([single] if is_map(single) else [])]


def _domains(holder: Mapping[str, Any]) -> frozenset[str]:
    """`owner_set(domain_refs(holder))`, nothing built for a holder without either field."""
    if not holder.get("domains") and holder.get("domain") is None:
        return _NONE
    return owner_set(domain_refs(holder))


def tag_set(labels: Iterable[Any]) -> frozenset[str]:
    out = set()
    for label in labels:
        fqn = label.get("tagFQN") if type(label) is dict or is_map(label) else label
        if isinstance(fqn, str) and fqn:
            out.add(fqn)
    return frozenset(out)


@dataclass(frozen=True)
class KeyFields:
    """One side's key fields, normalised for comparison."""

    version: float | None
    updated_at: int | None
    name: str | None
    fqn: str | None
    description: str
    owners: frozenset[str]
    tags: frozenset[str]
    deleted: bool
    domains: frozenset[str] = frozenset()
    # per split field: (the labels that must be there, the labels that may be there); a doc's
    # are the same set twice; None: not compared (a doc written without them)
    split: tuple[tuple[frozenset[str], frozenset[str]] | None, ...] = (None, None)
    # from entity_relationship (relations.py); a row's None: its type does not write it (or the
    # caller did not say the type): not compared. A doc's: what it holds, none when it lacks it
    service: str | None = None  # the service's id, "" for none
    lineage: frozenset[str] | None = None  # the upstream entities' ids
    followers: frozenset[str] | None = None
    votes: int | None = None

    def related(self) -> dict[str, Any]:
        lineage, followers = self.lineage, self.followers
        return {
            "service": self.service,
            "upstreamLineage": None if lineage is None else sorted(lineage),
            "followers": None if followers is None else sorted(followers),
            "totalVotes": self.votes,
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "updatedAt": self.updated_at,
            "name": self.name,
            "fullyQualifiedName": self.fqn,
            "description": self.description,
            "owners": sorted(self.owners),
            "tags": sorted(self.tags),
            "domains": sorted(self.domains),
            "deleted": self.deleted,
            **{
                name: (sorted(pair[0]) if pair else None)
                for name, pair in zip(SPLIT_FIELDS, self.split, strict=True)
            },
            **self.related(),
        }

    def key(self) -> Key | None:
        """These fields as (bytes of all but the split ones, the split ones as they are): keys that
        agree (`keys_agree`) are fields `differences` finds nothing in, with the same deleted
        flag (what the join compares first). None when bytes could not tell (a value that is not
        equal to itself, or not a plain one)."""
        return _key_of(
            self.version,
            self.updated_at,
            self.name,
            self.fqn,
            self.description,
            self.owners,
            self.tags,
            self.deleted,
            self.domains,
            self.split,
            self.service,
            self.lineage,
            self.followers,
            self.votes,
        )


def _key_of(
    version: float | None,
    updated_at: int | None,
    name: Any,
    fqn: Any,
    description: Any,
    owners: frozenset[str],
    tags: frozenset[str],
    deleted: bool,
    domains: frozenset[str],
    split: tuple[tuple[frozenset[str], frozenset[str]] | None, ...],
    service: str | None,
    lineage: frozenset[str] | None,
    followers: frozenset[str] | None,
    votes: int | None,
) -> Key | None:
    """`KeyFields.key` of these values (KeyFields' fields in order), made without a KeyFields: the
    scan keys every row and document, and compares the fields in full only where keys differ."""
    if version is not None and not math.isfinite(version):
        return None  # NaN is not equal to itself: the full comparison decides
    for text in (name, fqn, description):
        if text is not None and not isinstance(text, str):
            return None
    # none and not compared alike: a row whose type writes none agrees with a doc holding none
    try:
        base = orjson.dumps(
            [
                version,
                updated_at,
                name,
                fqn,
                description,
                sorted(owners),
                sorted(tags),
                sorted(domains),
                deleted,
                service or None,
                sorted(lineage) if lineage else None,
                sorted(followers) if followers else None,
                votes or None,
            ]
        )
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer past 64 bits
        return None
    return base, split


def key_of(values: tuple[Any, ...]) -> Key | None:
    """The key of `row_values`' or `doc_values`' values: `KeyFields(*values).key()`, without the
    KeyFields."""
    return _key_of(*values)


# a side's key: its compared fields but the split ones as bytes, and the split ones (a row's as
# the range its labels may span, a doc's as the one set it holds, twice)
Key = tuple[bytes, tuple[tuple[frozenset[str], frozenset[str]] | None, ...]]


def keys_agree(truth: Key | None, seen: Key | None) -> bool:
    """The row's key (`truth`) and its doc's agree: `differences` finds nothing, `deleted` matches
    (each split field as `differences` compares it: not where either side lacks it)."""
    if truth is None or seen is None or truth[0] != seen[0]:
        return False
    return all(
        want is None or held is None or want[0] <= held[0] <= want[1]
        for want, held in zip(truth[1], seen[1], strict=True)
    )


def _int(value: Any) -> int | None:
    n = _number(value)
    return None if n is None else int(n)


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


class BadRow(ValueError):
    """A row whose JSON cannot be read as an entity."""


def parse_entity(raw: Any, row_id: str) -> dict[str, Any]:
    """The entity JSON of a row (text, bytes or already decoded); BadRow when it is not one."""
    if isinstance(raw, bytes | bytearray):
        raw = raw.decode("utf-8", "replace")
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except ValueError as exc:
            raise BadRow(f"the json column is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise BadRow(f"the json column holds a {type(raw).__name__}, not an entity object")
    if str(raw.get("id", "")) != row_id:
        raise BadRow(f"the JSON's id {raw.get('id')!r} is not the row's id")
    return raw


def _fqn_hash(fqn: str) -> str:
    from auditor.platforms.openmetadata.document import split_fqn  # a cycle at import time

    return ".".join(part_hash(p) for p in split_fqn(fqn))


@lru_cache(maxsize=4096)  # bounded: a catalog's tag names repeat from label to label
def _not_tier(fqn: str) -> bool:
    return fqn.split(".")[0].lower() != "tier"


def _split_of(
    mine: tuple[set[str], set[str]] | None, theirs: tuple[set[str], set[str]] | None
) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """The row's `classificationTags` and `glossaryTags` as (must hold, may hold): the entity's own
    labels of each source, and those plus its children's (`_Labels`: Tier.* left out)."""
    if mine is None and theirs is None:
        return _NO_SPLIT_TAGS  # most rows: nothing to build
    held = mine or (set(), set())
    extra = theirs or (set(), set())
    return tuple((frozenset(held[n]), frozenset(held[n] | extra[n])) for n in range(len(SPLIT_FIELDS)))


def untagged_text(text: str | bytes) -> bool:
    """No object decoded from this JSON text has a `tags` key: the key is written `"tags"`, or
    with a `\\u` escape (the only escape that makes a letter). OpenMetadata keeps the labels in
    tag_usage, not in the stored JSON: most rows' children then need no walk for inline ones."""
    if isinstance(text, str):  # (a backslash looked for first: one character's search is memchr)
        return '"tags"' not in text and ("\\" not in text or "\\u" not in text)
    return b'"tags"' not in text and (b"\\" not in text or b"\\u" not in text)


class _Labels:
    """A row's tag labels walked once: every FQN (`tags`) and the split ones by source, its own
    (`mine`) and its children's (`theirs`), each label looked at once."""

    __slots__ = ("tags", "mine", "theirs")

    def __init__(self) -> None:
        self.tags: set[str] = set()
        self.mine: tuple[set[str], set[str]] | None = None
        self.theirs: tuple[set[str], set[str]] | None = None

    def add(self, labels: Iterable[Any], of_children: bool) -> None:
        for label in labels:
            if not isinstance(label, MAPPING):
                if isinstance(label, str) and label:  # a bare FQN counts among the tags, unsplit
                    self.tags.add(label)
                continue
            fqn = label.get("tagFQN")
            if not (isinstance(fqn, str) and fqn):
                continue
            self.tags.add(fqn)
            source = label.get("source")
            if source is None:
                continue
            # which split field (0: classificationTags, 1: glossaryTags), None: neither
            at = _SOURCE_INDEX.get(source) if isinstance(source, int | float | str) else None
            if at is None and isinstance(source, str):
                at = _SOURCE_INDEX.get(source.lower())
            if at is None or not _not_tier(fqn):
                continue
            if of_children:
                self.theirs = self.theirs or (set(), set())
                self.theirs[at].add(fqn)
            else:
                self.mine = self.mine or (set(), set())
                self.mine[at].add(fqn)


def row_fields(
    entity: Mapping[str, Any],
    owners: Iterable[Any] = (),
    tags: Iterable[Any] = (),
    domains: Iterable[Any] = (),
    own_hash: str | None = None,
    links: Iterable[Mapping[str, Any]] = (),
    entity_type: str | None = None,
) -> KeyFields:
    """The truth: the entity JSON plus its owner and domain relationships (inherited ones
    included) and tag usages (its children's included, auditor/platforms/openmetadata/derive.py);
    with `entity_type`, also what its index class takes from `links` (relations.py).
    `own_hash`: the hash of the JSON's FQN when the caller has it (made here otherwise)."""
    return KeyFields(*row_values(entity, owners, tags, domains, own_hash, links, entity_type))


def row_values(entity: Mapping[str, Any], *related: Any, text: str | bytes | None = None) -> tuple[Any, ...]:
    """`row_fields`' values in KeyFields' order (for `_key_of` without a KeyFields), each label,
    reference and link looked at once: the scan makes them for every row. `related`: row_fields'
    owners, tags, domains, own_hash, links and entity_type, in that order. `text`: the JSON text
    `entity` was decoded from, when the caller has it (its children are not walked for inline
    labels when it cannot hold a `tags` key: `untagged_text`)."""
    owners, tags, domains, own_hash, links, entity_type = related
    fqn = entity.get("fullyQualifiedName")
    tags = tags if isinstance(tags, tuple | list) else list(tags)
    targeted = False
    for t in tags:
        if isinstance(t, MAPPING) and t.get("target") is not None:
            targeted = True
            break
    # the hash of the entity's FQN tells its own usages from its children's (none: no need)
    own_hash = (own_hash or _fqn_hash(fqn)) if targeted and isinstance(fqn, str) and fqn else None
    labels = _Labels()
    inline = entity.get("tags")
    if inline:  # (most rows: OpenMetadata keeps them in tag_usage) an empty walk is a call saved
        labels.add(_list(inline), False)
    walk = has_children(entity) and (text is None or not untagged_text(text))
    inline = inline_child_labels(entity) if walk else None
    if inline:
        labels.add(inline, True)
    if targeted:
        own = [t for t in tags if not isinstance(t, MAPPING) or t.get("target") in (None, own_hash)]
        labels.add(own, False)
        labels.add(
            [t for t in tags if isinstance(t, MAPPING) and t.get("target") not in (None, own_hash)], True
        )
    elif tags:
        labels.add(tags, False)
    held = entity.get("owners")
    return (
        _number(entity.get("version")),
        _int(entity.get("updatedAt")),
        entity.get("name"),
        fqn,
        entity.get("description") or "",
        owner_set([*held, *owners] if isinstance(held, list) else owners),
        frozenset(labels.tags),
        _deleted(entity.get("deleted")),
        _domains(entity) | owner_set(domains) if domains else _domains(entity),
        _split_of(labels.mine, labels.theirs),
        *(_related(entity, links, entity_type) if entity_type else (None, None, None, None)),
    )


def _related(
    entity: Mapping[str, Any], links: Iterable[Mapping[str, Any]], entity_type: str
) -> tuple[str | None, frozenset[str] | None, frozenset[str], int]:
    """The row's side of the fields relations.py derives, for its type: (service, lineage,
    followers, votes), the links bucketed by relation once (relations.py's functions each take
    the links of their own relation)."""
    contains: list[Mapping[str, Any]] = []
    upstream: list[Mapping[str, Any]] = []
    follows: list[Mapping[str, Any]] = []
    voted: list[Mapping[str, Any]] = []
    for x in links:
        r = x.get("r")
        if r == relations.CONTAINS:
            contains.append(x)
        elif r == relations.UPSTREAM:
            upstream.append(x)
        elif r == relations.FOLLOWS:
            follows.append(x)
        elif r == relations.VOTED:
            voted.append(x)
    service = None
    if entity_type in relations.SERVICE_BACKED:
        found = relations.service_link(contains) if contains else None
        inline = entity.get("service")  # a writer that keeps it in the JSON
        service = str(found["id"]) if found else str(inline.get("id") or "") if is_map(inline) else ""
    held = entity.get("followers")
    inline_followers = [str(f.get("id")) for f in _list(held) if is_map(f)] if held else []
    return (
        service,
        (relations.upstream_ids(upstream) if upstream else _NONE)
        if relations.has_lineage(entity_type)
        else None,
        frozenset([*relations.follower_ids(follows), *inline_followers])
        if follows or inline_followers
        else _NONE,
        relations.total_votes(voted) if voted else 0,
    )


_NONE = frozenset[str]()


def doc_fields(source: Mapping[str, Any]) -> KeyFields:
    """What the search document says (deleted as a boolean, the tier among the tags)."""
    return KeyFields(*doc_values(source))


def doc_values(source: Mapping[str, Any]) -> tuple[Any, ...]:
    """`doc_fields`' values in KeyFields' order (see `row_values`)."""
    get = source.get
    tier, service = get("tier"), get("service")
    held = get("owners")
    owner = get("owner")  # `owner` before 1.5
    tags = get("tags")
    followers = get("followers")
    return (
        _number(get("version")),
        _int(get("updatedAt")),
        get("name"),
        get("fullyQualifiedName"),
        get("description") or "",
        owner_set([*_list(held), *_one(owner)]) if held or owner is not None else _NONE,
        tag_set([*_list(tags), *([tier] if is_map(tier) else [])]) if tags or tier else _NONE,
        _deleted(get("deleted")),
        _domains(source),
        (_doc_split(get(SPLIT_FIELDS[0])), _doc_split(get(SPLIT_FIELDS[1]))),
        str(service.get("id") or "") if is_map(service) else "",
        _lineage(get("upstreamLineage")),
        (frozenset([str(f) for f in followers]) if followers else _NONE)
        if isinstance(followers, list)
        else _NONE,
        _int(get("totalVotes")) or 0,
    )


def _deleted(value: Any) -> bool:
    """`bool(as_bool(value))`, a boolean or none answered at once (nearly every row and doc)."""
    if value is True:
        return True
    if value is False or value is None:
        return False
    return bool(as_bool(value))


def _lineage(entries: Any) -> frozenset[str]:
    if not isinstance(entries, list) or not entries:
        return _NONE
    return frozenset(
        str(e["fromEntity"].get("id")) for e in entries if is_map(e) and is_map(e.get("fromEntity"))
    )


def _doc_split(value: Any) -> tuple[frozenset[str], frozenset[str]] | None:
    if not isinstance(value, list):
        return None  # written by a release without the field
    if not value:
        return _NO_SPLIT_TAGS[0]
    held = frozenset(t for t in tag_set(value) if _not_tier(t))
    return held, held


def _changed_fields(change: Any) -> set[str]:
    if not isinstance(change, MAPPING):
        return set()
    names = set()
    for key in ("fieldsAdded", "fieldsUpdated", "fieldsDeleted"):
        for item in _list(change.get(key)):
            if isinstance(item, MAPPING) and item.get("name"):
                names.add(str(item["name"]))
    return names


def only_the_delete_flag_moved(entity: Mapping[str, Any], doc: KeyFields) -> bool:
    """A soft delete or a restore bumps the row's version and updatedAt but reaches search as a
    script that sets `deleted` alone (SOFT_DELETE_RESTORE_SCRIPT): the doc keeps the version
    before it. True when the row's last change touched only `deleted`, came right after the
    version the doc holds, and the doc's flag agrees: its version and updatedAt are not stale."""
    change = entity.get("changeDescription")
    if _changed_fields(change) != {"deleted"} or not isinstance(change, MAPPING):
        return False
    return (
        _number(change.get("previousVersion")) == doc.version
        and bool(as_bool(entity.get("deleted"))) == doc.deleted
    )


def differences(truth: KeyFields, doc: KeyFields) -> list[str]:
    """The compared fields (besides deleted) whose values differ, in COMPARED order."""
    pairs = {
        "version": (truth.version, doc.version),
        "updatedAt": (truth.updated_at, doc.updated_at),
        "name": (truth.name, doc.name),
        "fullyQualifiedName": (truth.fqn, doc.fqn),
        "description": (truth.description, doc.description),
        "owners": (truth.owners, doc.owners),
        "tags": (truth.tags, doc.tags),
        "domains": (truth.domains, doc.domains),
    }
    out = [name for name in COMPARED if pairs[name][0] != pairs[name][1]]
    for name, want, held in zip(SPLIT_FIELDS, truth.split, doc.split, strict=True):
        if want is not None and held is not None and not (want[0] <= held[0] <= want[1]):
            out.append(name)
    related = doc.related()
    out += [name for name, want in truth.related().items() if want is not None and want != related[name]]
    return out
