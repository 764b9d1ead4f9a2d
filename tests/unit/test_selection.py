"""`--urn-like` as both sides read it: the wildcard query means what SQL LIKE means (`%`, `_`,
`\\` escaping), and a pattern ending in a lone escape is refused before anything runs."""

from __future__ import annotations

import pytest

from auditor.backends.search import like_to_wildcard
from auditor.core.model import Selection
from auditor.errors import ConfigError


@pytest.mark.parametrize(
    ("like", "wildcard"),
    [
        ("urn:li:dataset:%", "urn:li:dataset:*"),
        ("a_b", "a?b"),
        ("a\\%b", "a%b"),
        ("a\\_b", "a_b"),
        ("a*b?", "a\\*b\\?"),
        ("a\\\\b", "a\\\\b"),
        ("a\\xb", "axb"),  # LIKE: an escaped ordinary character is itself
    ],
)
def test_the_wildcard_means_what_like_means(like: str, wildcard: str) -> None:
    assert like_to_wildcard(like) == wildcard


@pytest.mark.parametrize("like", ["a\\", "a\\\\\\", "\\"])
def test_a_lone_trailing_escape_is_refused(like: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Selection(urn_like=like)
    assert refused.value.exit_code == 2 and "lone backslash" in str(refused.value)


def test_an_escaped_backslash_at_the_end_is_fine() -> None:
    assert Selection(urn_like="a\\\\").urn_like == "a\\\\"
