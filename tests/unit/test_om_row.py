"""`om_row` makes an `OmRow` without the frozen dataclass's `__init__`: the same object, for every
field the dataclass has (a field added to `OmRow` and not to `om_row` fails here)."""

from __future__ import annotations

from dataclasses import fields

from auditor.platforms.openmetadata.records import OmRow, om_row


def test_om_row_is_the_row_init_makes_with_every_field() -> None:
    given = {
        "row_id": "id-1",
        "json": {"name": "t"},
        "updated_at": 5,
        "deleted": False,
        "owners": ({"id": "o"},),
        "tags": ({"tagFQN": "PII.Sensitive"},),
        "domains": ({"id": "d"},),
        "own_hash": "abc",
        "links": ({"r": 0, "id": "s"},),
        "text": '{"name": "t"}',
    }
    made = om_row(*given.values())
    assert [f.name for f in fields(OmRow)] == ["id", *list(given)[1:]]
    assert made == OmRow(*given.values()) and vars(made) == vars(OmRow(*given.values()))
