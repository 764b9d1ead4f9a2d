"""Regenerate auditor/platforms/datahub/versions/rules.json from the published acryl-datahub wheels.

Usage: .venv/bin/python scripts/datahub_rules.py [--wheels DIR] [--check]

Downloads each release's wheel from the package index (pip download, no dependencies, into
DIR, a cache kept between runs), unpacks its `datahub/metadata/schemas/*.avsc` into a temporary
folder and reads them with the auditor's own schema rules (auditor.platforms.datahub.versions.
generate). `--check` writes nothing and exits 1 when the shipped file differs.

Each server line `v1.N.0` is paired with the wheel released with it (`1.N.0`); the newest line
also with the newest wheel, the one the auditor installs. Add a release here and re-run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from auditor.platforms.datahub.versions.generate import pack, rules_of

RELEASES = [
    ("1.0.0", "1.0.0"),
    ("1.1.0", "1.1.0"),
    ("1.2.0", "1.2.0"),
    ("1.3.0", "1.3.0"),
    ("1.3.1", "1.3.1"),
    ("1.4.0", "1.4.0"),
    ("1.5.0", "1.5.0"),
    ("1.6.0", "1.6.0"),
    ("1.7.0", "1.7.0"),
    ("1.7.0.17", "1.7.0.17"),
]
TARGET = Path(__file__).resolve().parent.parent / "auditor/platforms/datahub/versions/rules.json"


def wheel(version: str, cache: Path) -> Path:
    found = sorted(cache.glob(f"acryl_datahub-{version}-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                str(cache),
                f"acryl-datahub=={version}",
            ],
            check=True,
        )
        found = sorted(cache.glob(f"acryl_datahub-{version}-*.whl"))
    return found[0]


def schemas(path: Path, into: Path) -> Path:
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.startswith("datahub/metadata/schemas/") and name.endswith(".avsc"):
                (into / Path(name).name).write_bytes(zf.read(name))
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, default=Path.home() / ".cache/auditor/wheels")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    rules = []
    for release, version in RELEASES:
        with tempfile.TemporaryDirectory() as tmp:
            rules.append(rules_of(schemas(wheel(version, args.wheels), Path(tmp))))
        print(f"{release}: acryl-datahub {version}, {len(rules[-1]['aspects'])} aspects", file=sys.stderr)
    data = pack([(r, f"acryl-datahub=={v}") for r, v in RELEASES], rules)
    text = json.dumps(data, indent=0, separators=(",", ":")) + "\n"
    if args.check:
        same = TARGET.exists() and TARGET.read_text() == text
        print("rules.json is current" if same else "rules.json differs from the wheels", file=sys.stderr)
        return 0 if same else 1
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
