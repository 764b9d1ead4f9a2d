"""How many index streams get a reader process (the setting, or the cores)."""

from __future__ import annotations

import os

import pytest

from auditor.backends import search_readers
from auditor.backends.search_readers import reader_processes


def test_the_setting_is_taken_as_given() -> None:
    assert reader_processes(0) == 0
    assert reader_processes(5) == 5


@pytest.mark.parametrize(("cores", "expected"), [(1, 0), (2, 2), (8, 8)])
def test_by_default_as_many_as_the_cores_and_none_on_one(
    monkeypatch: pytest.MonkeyPatch, cores: int, expected: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)), raising=False)
    assert reader_processes(None) == expected


def test_an_error_from_a_reader_is_raised_as_its_own_kind_or_as_a_backend_failure() -> None:
    from auditor.errors import AccessRefused, BackendUnavailable

    with pytest.raises(AccessRefused, match="refused") as refused:
        search_readers._raise("AccessRefused", "search cluster x: refused", "check the role")
    assert refused.value.hint == "check the role"
    with pytest.raises(BackendUnavailable, match="boom"):
        search_readers._raise("NotAnAuditorError", "boom", None)


def test_a_reader_reads_through_the_lean_client_unless_its_requests_are_signed() -> None:
    from auditor.backends.search import SearchIndex
    from auditor.backends.search_auth import SearchAuth
    from auditor.backends.search_lean import LeanClient, lean_client

    for kind in ("opensearch", "elasticsearch"):
        assert isinstance(SearchIndex("http://127.0.0.1:9", kind=kind, lean=True).client, LeanClient)
        assert not isinstance(SearchIndex("http://127.0.0.1:9", kind=kind).client, LeanClient)
    signed = SearchAuth(aws=object())  # type: ignore[arg-type] (a signer: only its presence counts)
    assert lean_client("opensearch", "http://127.0.0.1:9", signed, True, None, 1.0, None) is None
    assert lean_client("solr", "http://127.0.0.1:9", SearchAuth(), True, None, 1.0, None) is None


def test_a_request_the_lean_client_does_not_speak_is_the_full_clients() -> None:
    """A job that asks for more than a reader's requests gets the full client's method (opened
    then), never a guess at the request."""
    from auditor.backends.search_auth import SearchAuth
    from auditor.backends.search_lean import LeanClient

    lean = LeanClient("opensearch", "http://127.0.0.1:9", SearchAuth(), True, None, 1.0, None)
    assert lean._full is None
    assert type(lean.indices).__module__.startswith("opensearchpy")  # the full client's namespace
    assert lean._full is not None and lean.indices is lean._full.indices
    with pytest.raises(AttributeError):
        lean._nothing_private  # noqa: B018
    lean.close()
