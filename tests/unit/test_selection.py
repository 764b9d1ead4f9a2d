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


def test_what_a_search_read_retries() -> None:
    from auditor.backends.search import retryable

    class TransportError(Exception):
        def __init__(self, status: object) -> None:
            self.status_code = status

    class ConnectionError(TransportError):  # noqa: A001 - the clients' own names
        pass

    class ConnectionTimeout(ConnectionError):
        pass

    class SSLError(ConnectionError):  # opensearch-py's: a ConnectionError
        pass

    assert [retryable(TransportError(s)) for s in (429, 502, 503, 504)] == [True] * 4
    assert not retryable(TransportError(400)) and not retryable(TransportError(401))
    assert retryable(ConnectionError("N/A")) and retryable(ConnectionTimeout("N/A"))
    assert not retryable(SSLError("N/A")), "a certificate that failed verification fails again"
    assert not retryable(ValueError("x"))


def test_what_counts_as_an_index_that_does_not_exist() -> None:
    from auditor.backends.search import not_found

    class OpenSearchError(Exception):  # opensearch-py's: the status on the exception
        def __init__(self, status: int, text: str = "") -> None:
            super().__init__(text)
            self.status_code = status

    class Meta:
        def __init__(self, status: int) -> None:
            self.status = status

    class ElasticsearchError(Exception):  # elasticsearch's 8/9 client: the status on its meta
        def __init__(self, status: int) -> None:
            super().__init__("")
            self.meta = Meta(status)

    assert not_found(OpenSearchError(404)) and not_found(ElasticsearchError(404))
    assert not_found(Exception("index_not_found_exception: no such index [x]"))  # said only in words
    assert not not_found(OpenSearchError(500, "a shard failed")) and not not_found(ElasticsearchError(403))
    assert not not_found(ConnectionError("timed out after 404 ms"))  # a number in a message is not a 404
