"""The sandbox's V3 option: its names and ids agree with the auditor's, read independently."""

from __future__ import annotations

import hashlib

import pytest

from auditor.platforms.datahub.naming import document_id_v3, entity_index_v3
from sandbox.__main__ import parser, v3_groups
from sandbox.naming import entity_doc_id_v3
from sandbox.naming import entity_index_v3 as sandbox_index_v3


def test_v3_names_and_ids() -> None:
    urn = "urn:li:dataset:(urn:li:dataPlatform:hive,Ümsatz 1,PROD)"
    assert entity_doc_id_v3(urn) == document_id_v3(urn) == hashlib.sha256(urn.encode()).hexdigest()
    assert sandbox_index_v3("Primary", "p") == entity_index_v3("primary", "p") == "p_primaryindex_v3"


def test_the_v3_flag() -> None:
    assert v3_groups(parser().parse_args(["consume"]).v3) is None
    assert v3_groups(parser().parse_args(["consume", "--v3"]).v3) == {}
    given = parser().parse_args(["seed", "--v3", "dataset=primary", "chart=primary"]).v3
    assert v3_groups(given) == {"dataset": "primary", "chart": "primary"}
    with pytest.raises(SystemExit, match="TYPE=GROUP"):
        v3_groups(["dataset"])
