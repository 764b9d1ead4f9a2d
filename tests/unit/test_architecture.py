"""The package as it installs: one top-level package, the layering contracts kept, mypy clean.

The checkout keeps the user's top-level folders (checks/, reports/, rebuild/); the wheel maps
them to auditor.checks, auditor.reports and auditor.rebuild. The contracts and the type check
run against that installed tree (built here with pip from a copy of the sources), so they see
the modules under the names users import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit import platform_contracts

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "auditor", "checks", "reports", "rebuild")


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install .` (no dependencies) of a copy of the sources into a target folder."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    site = work / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def test_the_wheel_installs_one_package_and_its_script(installed: Path) -> None:
    tops = {p.name for p in installed.iterdir() if not p.name.endswith(".dist-info")}
    assert tops == {"auditor", "bin"}, tops
    assert (installed / "bin" / "auditor").exists()
    for sub in ("checks", "reports", "rebuild", "core", "backends", "scan"):
        assert (installed / "auditor" / sub / "__init__.py").exists(), sub
    env = {**os.environ, "PYTHONPATH": str(installed)}
    for name in ("checks", "reports", "rebuild", "sandbox"):
        done = subprocess.run(
            [sys.executable, "-c", f"import {name}"], cwd=installed, env=env, capture_output=True, text=True
        )
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, name
    done = subprocess.run(
        [sys.executable, "-c", "import auditor.checks, auditor.reports; print(auditor.checks.__file__)"],
        cwd=installed,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.startswith(str(installed)), done.stdout + done.stderr


def test_import_contracts_are_kept(installed: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(ROOT)])}
    done = subprocess.run(
        [_tool("lint-imports"), str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=installed,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_package_type_checks(installed: Path) -> None:
    done = subprocess.run(
        [
            _tool("mypy"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            os.devnull,
            "-p",
            "auditor",
        ],
        cwd=installed,
        env={**os.environ, "MYPYPATH": str(installed)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _lint(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run(
        [_tool("lint-imports"), str(config), "--no-cache"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_registered_platform_keeps_the_generated_platform_contracts(
    installed: Path, tmp_path: Path
) -> None:
    platforms = platform_contracts.registered(ROOT / "pyproject.toml")
    shipped = {
        p.name for p in (installed / "auditor" / "platforms").iterdir() if (p / "__init__.py").exists()
    }
    assert shipped == set(platforms), "a platform package without its registry line escapes the contracts"
    config = tmp_path / "platforms.toml"
    config.write_text(text := platform_contracts.contracts(platforms, installed))
    done = _lint(config, installed)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = text.count("[[tool.importlinter.contracts]]")
    assert kept >= 1 + len(platforms)  # the shared layers' and one per platform at least
    assert f"{kept} kept, 0 broken" in done.stdout, done.stdout


def test_the_generated_contracts_catch_a_platform_importing_another(installed: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    shutil.copytree(installed / "auditor", site / "auditor")
    # OpenMetadata's code borrowing DataHub's names, and the scan engine importing a platform
    (site / "auditor" / "platforms" / "openmetadata" / "borrowed.py").write_text(
        "from auditor.platforms.datahub import naming\n"
    )
    (site / "auditor" / "scan" / "leak.py").write_text("import auditor.rebuild.openmetadata\n")
    platforms = platform_contracts.registered(ROOT / "pyproject.toml")
    config = tmp_path / "platforms.toml"
    config.write_text(platform_contracts.contracts(platforms, site))
    done = _lint(config, site)
    assert done.returncode != 0
    assert "auditor.platforms.openmetadata.borrowed -> auditor.platforms.datahub" in done.stdout, done.stdout
    assert "auditor.scan.leak -> auditor.rebuild.openmetadata" in done.stdout, done.stdout
