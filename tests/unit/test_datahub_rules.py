"""DataHub's per-release index rules: generated from the wheels, never hand-copied.

The shipped rules.json is regenerated here for the installed acryl-datahub wheel (the newest
release the auditor knows) and must come out identical; a wheel the file does not list fails
with what to run. Release numbers compare as DataHub's do.
"""

from __future__ import annotations

import json
from pathlib import Path

import datahub
import pytest

from auditor.platforms.datahub.registry.loader import _wheel_schemas_dir
from auditor.platforms.datahub.versions.generate import pack, rules_of
from auditor.platforms.datahub.versions.rules import (
    Release,
    VersionError,
    catalog,
    oldest_without,
    unpack,
)

RULES = Path(__file__).resolve().parents[2] / "auditor/platforms/datahub/versions/rules.json"


def test_the_installed_wheel_regenerates_its_shipped_rules() -> None:
    data = json.loads(RULES.read_text())
    shipped = [r["release"] for r in data["releases"]]
    installed = datahub.__version__
    assert installed in shipped, (
        f"acryl-datahub {installed} is installed but rules.json has no entry for it: add it to "
        "scripts/datahub_rules.py RELEASES and run scripts/datahub-rules"
    )
    assert rules_of(_wheel_schemas_dir()) == unpack(data).get(installed).as_lists()


def test_pack_and_unpack_are_inverse() -> None:
    a = {"aspects": {"x": ["f", "g"], "y": []}, "entities": {"e": ["x", "y"]}}
    b = {"aspects": {"x": ["g", "h"], "z": ["k"]}, "entities": {"e": ["x", "z"], "n": ["z"]}}
    data = pack([("1.0.0", "w1"), ("1.1.0", "w2")], [a, b])
    releases = unpack(data)
    empty_dropped = {"aspects": a["aspects"], "entities": a["entities"]}
    assert releases.get("1.0.0").as_lists() == empty_dropped
    assert releases.get("1.1.0").as_lists() == b


def test_known_differences_between_releases() -> None:
    c = catalog()
    old, new = c.get("1.0.0"), c.newest
    assert {"createdAt", "lastModifiedAt"} <= new.aspects["chartInfo"] - old.aspects["chartInfo"]
    assert "ownerAttributionActors" in new.aspects["ownership"] - old.aspects["ownership"]
    assert {"hasUpstreams", "fineGrainedUpstreams"} <= new.aspects["upstreamLineage"]
    assert "hasUpstreams" not in old.aspects["upstreamLineage"]
    # entity types DataHub writes no document for: no aspect holds a searchable field
    for internal in ("telemetry", "globalSettings", "dataHubUpgrade", "dataHubStepState"):
        assert not new.searchable(internal), internal
    assert new.searchable("dataset") and old.searchable("dataset")
    # the 1.7.0 wheel had no createdAt yet (its 1.7.0.x patch builds added it)
    assert oldest_without(c, new.release, "chart", ["createdAt"]) == "1.7.0"
    assert oldest_without(c, new.release, "chart", ["title"]) is None


@pytest.mark.parametrize(
    ("text", "parts", "pre"),
    [
        ("v1.7.0.1", (1, 7, 0, 1), (1, 0)),
        ("1.7.0", (1, 7, 0), (1, 0)),
        ("v1.0.0rc3", (1, 0, 0), (0, 3)),
        ("v1.4.0-0", (1, 4, 0), (1, 0)),
        ("1.10", (1, 10, 0), (1, 0)),
    ],
)
def test_release_numbers(text: str, parts: tuple[int, ...], pre: tuple[int, int]) -> None:
    r = Release.parse(text)
    assert (r.parts, r.pre) == (parts, pre)


def test_release_order_and_rules_chosen() -> None:
    assert Release.parse("1.10.0") > Release.parse("1.9.0")
    assert Release.parse("v1.0.0rc3") < Release.parse("1.0.0")
    c = catalog()
    assert c.for_release(Release.parse("v1.7.0.1")) == (c.get("1.7.0"), None)
    assert c.for_release(Release.parse("1.4.0.9"))[0].release == "1.4.0"
    rules, warning = c.for_release(Release.parse("1.9.2"))
    assert rules is c.newest and warning and "1.9.2" in warning and "newer" in warning
    rules, warning = c.for_release(Release.parse("0.14.1"))
    assert rules.release == "1.0.0" and warning and "older" in warning
    with pytest.raises(VersionError, match="not a DataHub release"):
        Release.parse("latest")
