"""DataHub releases as the sandbox indexes them: each release's own wheel says which fields exist.

The sandbox's projection (sandbox/projection.py) is the newest release's. To index as an older
release does, the consumer leaves out every field that release's wheel does not annotate for the
aspect. The wheel is read here on its own terms, not through the auditor: every `Searchable`
annotation of an aspect's .avsc gives the doc fields it names (`fieldName`, `hasValuesFieldName`,
`numValuesFieldName`, else the annotated record field's name or the last step of its path).
Wheels come from the package index (pip download), cached in ~/.cache/auditor/wheels.

Also what a deployment of a release holds besides the catalog: the rows its upgrade jobs and its
own bookkeeping write (dataHubUpgrade steps, a telemetry client id, the global settings).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from sandbox.projection import SEARCH_FIELDS

WHEELS = Path.home() / ".cache" / "auditor" / "wheels"
# the backfill steps a release's system update runs once (datahub-upgrade), by first release
_STEPS = (("1.0.0", "dashboard-info-v1"), ("1.4.0", "mlmodel-key-v1"))


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def wheel(release: str) -> Path:
    """The acryl-datahub wheel of a release (downloaded once)."""
    WHEELS.mkdir(parents=True, exist_ok=True)
    found = sorted(WHEELS.glob(f"acryl_datahub-{release}-*.whl"))
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
                str(WHEELS),
                f"acryl-datahub=={release}",
            ],
            check=True,
        )
        found = sorted(WHEELS.glob(f"acryl_datahub-{release}-*.whl"))
    return found[0]


def _leaf(path: str, own: str | None) -> str | None:
    steps = [s for s in path.split("/") if s and s not in ("*", "$key")]
    return steps[-1] if steps else own


def _names(node: Any, field: str | None, out: set[str], hidden: frozenset[str] = frozenset()) -> None:
    """Every doc field name a `Searchable` annotation under `node` gives. A field's path-keyed
    annotation overrides those the record it holds puts on the same leaves (Pegasus): `hidden`."""
    if isinstance(node, list):
        for item in node:
            _names(item, field, out, hidden)
        return
    if not isinstance(node, dict):
        return
    own = node.get("name") if isinstance(node.get("name"), str) and "type" in node else field
    searchable = node.get("Searchable")
    inner = hidden
    if isinstance(searchable, dict):
        paths = [(k, v) for k, v in searchable.items() if k.startswith("/") and isinstance(v, dict)]
        for path, annotation in paths or [("", searchable)]:
            if _leaf(path, own) in hidden:
                continue
            out.add(annotation.get("fieldName") or _leaf(path, own) or "")
            for extra in ("hasValuesFieldName", "numValuesFieldName"):
                if annotation.get(extra):
                    out.add(annotation[extra])
        inner = hidden | {leaf for p, _ in paths if (leaf := _leaf(p, None))}
    for key, value in node.items():
        if key != "Searchable":
            _names(value, own, out, inner)


@functools.lru_cache(maxsize=16)
def annotated(release: str) -> dict[str, frozenset[str]]:
    """Aspect -> the doc fields its annotations name, in that release's wheel."""
    out: dict[str, frozenset[str]] = {}
    with zipfile.ZipFile(wheel(release)) as zf:
        for name in zf.namelist():
            if not (name.startswith("datahub/metadata/schemas/") and name.endswith(".avsc")):
                continue
            schema = json.loads(zf.read(name))
            aspect = schema.get("Aspect") if isinstance(schema, dict) else None
            if not isinstance(aspect, dict) or "name" not in aspect:
                continue
            found: set[str] = set()
            _names(schema.get("fields", []), None, found)
            out[aspect["name"]] = frozenset(found - {""})
    return out


@functools.lru_cache(maxsize=16)
def withheld(release: str | None) -> dict[str, frozenset[str]]:
    """Aspect -> the fields of the sandbox's projection that `release` does not index (None: the
    newest release, nothing withheld)."""
    if release is None:
        return {}
    names = annotated(release)
    out = {}
    for aspect, specs in SEARCH_FIELDS.items():
        mine = {n for s in specs for n in (s.name, s.has, s.num) if n}
        missing = mine - names.get(aspect, frozenset())
        if missing:
            out[aspect] = frozenset(missing)
    return out


def deployment_rows(release: str, *, zdu: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """(urn, aspect, value) rows a deployment of `release` holds besides its catalog: its upgrade
    steps (the zero-downtime reindex step naming the release when `zdu`), a telemetry client id,
    the global settings."""
    rows: list[tuple[str, str, dict[str, Any]]] = []
    steps = [step for first, step in _STEPS if _key(first) <= _key(release)]
    if zdu:
        steps.append(f"BuildIndicesIncremental_v{release}-0")
    for step in steps:
        urn = f"urn:li:dataHubUpgrade:{step}"
        rows.append((urn, "dataHubUpgradeRequest", {"timestampMs": 0, "version": f"v{release}-0"}))
        rows.append((urn, "dataHubUpgradeResult", {"state": "SUCCEEDED", "timestampMs": 0, "result": {}}))
    rows.append(("urn:li:telemetry:clientId", "telemetryClientId", {"clientId": "sandbox-client-id"}))
    rows.append(("urn:li:globalSettings:0", "globalSettingsInfo", {"views": {}}))
    return rows


def write_deployment(writer: Any, release: str, *, zdu: bool | None = None) -> None:
    """Write what a deployment of `release` holds besides its catalog (before the catalog: a
    system update runs before GMS serves). Zero-downtime reindex rows from 1.6.0 on by default."""
    if zdu is None:
        zdu = _key(release) >= (1, 6, 0)
    for urn, aspect, value in deployment_rows(release, zdu=zdu):
        writer.write(urn, aspect, value, wait=False)
    writer.flush()
