"""A platform in a distribution of its own, built and installed by pip into a temporary folder:
the toy platform's module under another package and name, registered only by its wheel's entry
point (group `auditor.platforms`), as a plug-in from another team would be."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

TOY = Path(__file__).resolve().parents[1] / "unit" / "toy_platform.py"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    out: Path, dist: str, package: str, entry_points: dict[str, str], files: dict[str, str]
) -> Path:
    """A pure-Python wheel (PEP 427) of `files` (path in the package -> text) whose metadata
    declares `entry_points` (name -> "module:attribute") in the group `auditor.platforms`."""
    version = "1.0.0"
    info = f"{dist.replace('-', '_')}-{version}.dist-info"
    points = "[auditor.platforms]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    members = {f"{package}/{path}": text.encode() for path, text in files.items()}
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: auditor-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    members[f"{info}/entry_points.txt"] = points.encode()
    record = [_record_line(name, data) for name, data in members.items()] + [f"{info}/RECORD,,"]
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = out / f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return wheel


def install(wheel: Path, target: Path) -> None:
    """`pip install --target`: offline, no dependencies (the auditor is the running one)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def toy_source(name: str, title: str) -> str:
    """The toy platform's module as another distribution's: its own name and title."""
    text = TOY.read_text()
    assert 'NAME = "toy"' in text and 'title = "Toy"' in text
    return text.replace('NAME = "toy"', f'NAME = "{name}"').replace('title = "Toy"', f'title = "{title}"') + (
        "\n\nPLATFORM = Toy()\n"
    )
