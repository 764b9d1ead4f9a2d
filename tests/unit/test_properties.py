"""Property-based tests (hypothesis): the urn parser, the doc-id encoder and the projection
hold for any input, not only the examples written down."""

from __future__ import annotations

from urllib.parse import quote_plus, unquote_plus

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from auditor.platforms.datahub.backends.store import byte_ordered
from auditor.platforms.datahub.documents.projection import project_entity
from auditor.platforms.datahub.naming import document_id
from auditor.platforms.datahub.registry.registry import Registry
from auditor.platforms.datahub.urn_text import normalize
from auditor.platforms.datahub.urns import UrnError, entity_type, is_valid_urn, parse_urn, urn_partition

REGISTRY = Registry.load()
# a key part: no parentheses or commas of its own, not empty (what DataHub's TupleKey allows)
PART = st.text(
    alphabet=st.characters(blacklist_characters="(),", blacklist_categories=("Cs",)), min_size=1, max_size=30
)


@given(st.one_of(st.text(), st.text(alphabet=st.characters(max_codepoint=127))))
def test_the_doc_id_is_javas_urlencoder_and_round_trips(text: str) -> None:
    encoded = document_id(text)
    assert unquote_plus(encoded) == text
    # Java keeps a-z A-Z 0-9 . - * _ ; space is '+'; all else %XX in upper case (even '~')
    assert encoded == quote_plus(text, safe="*").replace("~", "%7E")


@given(PART, PART, st.sampled_from(["PROD", "DEV"]))
def test_a_dataset_urn_parses_into_its_parts(platform: str, name: str, origin: str) -> None:
    urn = f"urn:li:dataset:(urn:li:dataPlatform:{platform},{name},{origin})"
    kind, parts = parse_urn(urn)
    assert kind == "dataset" and parts == [f"urn:li:dataPlatform:{platform}", name, origin]
    assert entity_type(urn) == "dataset" and is_valid_urn(urn)
    assert normalize(f"  '{urn}' ")[0] == urn  # quoted and spaced, read the same
    assert 0 <= urn_partition(urn, 4) < 4


@given(st.text(max_size=200))
def test_any_text_is_a_urn_or_a_clear_refusal(text: str) -> None:
    try:
        urn, _ = normalize(text)
    except UrnError as exc:
        assert str(exc)  # says what is wrong
    else:
        assert is_valid_urn(urn)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150)
@given(
    st.sampled_from(
        ["globalTags", "ownership", "datasetProperties", "glossaryTerms", "status", "schemaMetadata"]
    ),
    JSON,
)
def test_the_projection_survives_any_aspect_value(aspect: str, value: object) -> None:
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,db.t,PROD)"
    fields = project_entity(REGISTRY, urn, {aspect: value}).fields  # type: ignore[dict-item]
    assert fields["urn"] == urn and fields["platform"] == "urn:li:dataPlatform:hive"


@given(st.text(min_size=1, max_size=40).filter(lambda s: "," not in s and "(" not in s and ")" not in s))
def test_a_tag_projects_its_name_whatever_it_is(name: str) -> None:
    urn = f"urn:li:tag:{name}"
    assume(is_valid_urn(urn))
    fields = project_entity(REGISTRY, urn, {"tagProperties": {"name": name}}).fields
    assert fields["name"] == name and fields["urn"] == urn


def _pad_space_key(urn: str) -> str:
    """How MySQL's utf8mb4_bin orders a urn: by code point, as if padded with spaces."""
    return urn.ljust(64, " ")


@settings(max_examples=300)
@given(
    st.lists(st.text(alphabet="ab !\t\x01\x1f\n", min_size=0, max_size=6), max_size=30),
    st.lists(st.sampled_from(["k", "s", "t"]), min_size=1, max_size=3, unique=True),
    st.integers(min_value=1, max_value=7),
)
def test_rows_in_pad_space_order_come_out_in_code_point_order(
    names: list[str], aspects: list[str], size: int
) -> None:
    # one urn per PAD SPACE key: DataHub's primary key cannot hold 'a' and 'a ' both
    urns = list({_pad_space_key(u).rstrip(" "): u for u in (f"urn:li:tag:{n}" for n in names)}.values())
    rows = [(u, a, "{}") for u in urns for a in aspects]
    rows.sort(key=lambda r: (_pad_space_key(r[0]), r[1]))  # as the database returns them
    parts = [rows[i : i + size] for i in range(0, len(rows), size)]
    assert [row for part in byte_ordered(parts) for row in part] == sorted(rows)


@settings(max_examples=200)
@given(
    st.lists(st.text(alphabet="ab !\t\x01\x1f\n", min_size=0, max_size=6), max_size=30, unique=True),
    st.integers(min_value=1, max_value=7),
)
def test_rows_of_a_no_pad_collation_pass_through_unchanged(names: list[str], size: int) -> None:
    """MySQL 8's `utf8mb4_0900_bin` (NO PAD) already returns code-point order: the same read,
    unchanged (the query does not differ between the collations)."""
    rows = sorted((f"urn:li:tag:{n}", a, "{}") for n in names for a in ("k", "s"))
    parts = [rows[i : i + size] for i in range(0, len(rows), size)]
    assert [row for part in byte_ordered(parts) for row in part] == rows
