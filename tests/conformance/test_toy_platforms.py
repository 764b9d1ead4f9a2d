"""The conformance suite on the platforms that need no server: the toy platform of the tests
(registered at run time) and the same code as another distribution's platform, installed by
pip from a wheel into a temporary folder and found through its entry point only. Beside them,
what the registry refuses of a plug-in: a declaration without its methods, a name two
distributions claim, an entry point that does not load."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest
from plugin import build_wheel, install, toy_source
from suite import Broken, run_suite
from typer.testing import CliRunner

from auditor import platforms
from auditor.cli import app
from auditor.errors import ConfigError
from auditor.settings import Settings, load_settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
import toy_platform  # noqa: E402

OLD = datetime.now(UTC) - timedelta(hours=1)


class ToyDeployment:
    """A toy world (rows and documents in memory) of the platform `module` defines."""

    knobs: dict[str, float] = {}  # noqa: RUF012 (read only)

    def __init__(self, module: ModuleType, name: str, tmp: Path) -> None:
        self.module, self.platform, self.url = module, name, f"toy://{name}-conformance"
        self.state = tmp / f"{name}.sqlite"
        w = module.World()
        for key in ("healthy", "missing", "stale", "orphan", "other"):
            w.rows[key] = module.Row(key, f"about {key}", OLD)
            w.docs[key] = module.expected(w.rows[key])
        module.WORLDS[self.url] = self.world = w

    def settings(self) -> Settings:
        return load_settings(env={}, platform=self.platform, store_url=self.url, state_file=str(self.state))

    def break_three(self) -> Broken:
        w = self.world
        del w.docs["missing"]  # the index write lost
        w.rows["stale"].description = "written since"  # the document keeps the older value
        del w.rows["orphan"]  # deleted from the database, its document left behind
        return Broken(missing="missing", stale="stale", orphan="orphan", healthy="healthy")

    def settle(self) -> None:
        return None

    def close(self) -> None:
        self.module.WORLDS.pop(self.url, None)


@pytest.fixture
def toy(tmp_path: Path) -> Iterator[ToyDeployment]:
    platforms.register("toy", toy_platform.Toy)
    d = ToyDeployment(toy_platform, "toy", tmp_path)
    yield d
    d.close()
    platforms.unregister("toy")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """A folder on sys.path that wheels are installed into (removed after, with what it held)."""
    folder = tmp_path / "site"
    folder.mkdir()
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    platforms.installed.cache_clear()
    yield folder
    sys.path.remove(str(folder))
    for name in [m for m in sys.modules if m.split(".")[0] in {"acme_catalog", "boom", "fork"}]:
        del sys.modules[name]
    importlib.invalidate_caches()
    platforms.installed.cache_clear()
    for name in ("acme", "half", "datahub", "broken", "boom"):
        platforms._loaded.pop(name, None)


def test_the_toy_platform_conforms(toy: ToyDeployment) -> None:
    run_suite(toy)


def test_a_platform_from_another_distribution_conforms(site: Path, tmp_path: Path) -> None:
    wheel = build_wheel(
        tmp_path,
        "acme-catalog",
        "acme_catalog",
        {"acme": "acme_catalog.platform:PLATFORM"},
        {"__init__.py": '"""Acme\'s catalog, audited."""\n', "platform.py": toy_source("acme", "Acme")},
    )
    install(wheel, site)
    assert "acme" in platforms.names()  # found through its entry point, nothing registered by hand
    assert [e.distribution for e in platforms.installed()["acme"]] == ["acme-catalog"]
    module = importlib.import_module("acme_catalog.platform")
    assert platforms.get("acme") is module.PLATFORM and platforms.get("acme").title == "Acme"
    listed = CliRunner().invoke(app, ["platforms", "-f", "json"])
    assert listed.exit_code == 0, listed.output
    assert {"name": "acme", "distribution": "acme-catalog", "title": "Acme", "capabilities": ["triage"],
            "refused": None} in json.loads(listed.stdout)  # fmt: skip
    d = ToyDeployment(module, "acme", tmp_path)
    try:
        run_suite(d)
    finally:
        d.close()


HALF = """
from auditor.platforms.base import Capability
from acme_catalog.platform import Toy


class Half(Toy):
    name = "half"
    capabilities = frozenset({Capability.TRIAGE, Capability.SERVE, Capability.WATCH})


PLATFORM = Half()
"""


def test_a_declaration_without_its_methods_is_refused_when_loaded(site: Path, tmp_path: Path) -> None:
    """A plug-in that declares the console and the watch without their methods is refused the
    first time it is asked for, naming its distribution and what is missing: not later, by a
    user's `auditor serve` failing half-way."""
    files = {"__init__.py": "", "platform.py": toy_source("acme", "Acme"), "half.py": HALF}
    install(
        build_wheel(tmp_path, "acme-catalog", "acme_catalog", {"half": "acme_catalog.half:PLATFORM"}, files),
        site,
    )
    with pytest.raises(ConfigError) as refused:
        platforms.get("half")
    said = str(refused.value)
    assert "from acme-catalog" in said
    assert "the freshness watch (auditor watch) but provides no `open_watch`" in said
    assert "the resident console (auditor serve) but provides no `open_resident`" in said
    listed = CliRunner().invoke(app, ["platforms", "--json"])  # what an operator runs after installing
    assert listed.exit_code == 2, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["half"]["refused"] and "open_watch" in rows["half"]["refused"]
    assert rows["half"]["distribution"] == "acme-catalog"
    assert rows["openmetadata"]["refused"] is None and "serve" in rows["openmetadata"]["capabilities"]


def test_a_name_two_distributions_claim_and_a_broken_entry_point_are_refused(
    site: Path, tmp_path: Path
) -> None:
    fork = build_wheel(
        tmp_path, "fork", "fork", {"datahub": "fork.platform:PLATFORM", "broken": "fork.nothing:PLATFORM"},
        {"__init__.py": "", "platform.py": toy_source("datahub", "Fork")},
    )  # fmt: skip
    install(fork, site)
    with pytest.raises(ConfigError, match="registered by more than one distribution: ") as twice:
        platforms.get("datahub")
    assert "datahub-auditor" in str(twice.value) and "fork (fork.platform:PLATFORM)" in str(twice.value)
    with pytest.raises(ConfigError, match="'broken' \\(from fork\\) cannot be loaded: ModuleNotFoundError"):
        platforms.get("broken")


def test_a_plug_in_that_fails_on_import_is_refused_and_breaks_no_other_platform(
    site: Path, tmp_path: Path
) -> None:
    """Its platform module and its environment module raise at import: asked for, it is refused
    with the error named (never a traceback); DataHub's settings and commands go on as before."""
    boom = "raise RuntimeError('kaboom at import')\n"
    files = {"__init__.py": "", "platform.py": boom, "environment.py": boom}
    install(build_wheel(tmp_path, "boom", "boom", {"boom": "boom.platform:PLATFORM"}, files), site)
    with pytest.raises(ConfigError, match="'boom' \\(from boom\\) cannot be loaded: RuntimeError: kaboom"):
        platforms.get("boom")
    assert load_settings(env={}, store_url="postgresql://x@h/db").platform == "datahub"
    listed = CliRunner().invoke(app, ["platforms", "--json"])
    assert listed.exit_code == 2, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert "kaboom" in rows["boom"]["refused"] and rows["datahub"]["refused"] is None


def test_the_real_platforms_are_registered_by_this_distributions_entry_points() -> None:
    found = platforms.installed()
    assert {n: [e.value for e in found[n]] for n in ("datahub", "openmetadata")} == {
        "datahub": ["auditor.platforms.datahub.platform:PLATFORM"],
        "openmetadata": ["auditor.platforms.openmetadata.platform:PLATFORM"],
    }
    assert platforms.names()[0] == "datahub"
