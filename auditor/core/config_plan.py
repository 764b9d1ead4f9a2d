"""`auditor config init`'s shape, for every platform: a plan of TOML entries read from a server's
own environment variables (each with where it came from), the secrets left out of the file (the
variable the auditor reads each from at run time), warnings; rendered as a commented TOML file
and explained line by line. A platform's `config_from_environment` fills a `Planning`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime


@dataclass
class Entry:
    """One `key = value` line (commented out when value is None) and where it came from."""

    key: str
    value: str | bool | float | None
    source: str
    notes: list[str] = field(default_factory=list)
    example: str | bool | float | None = None  # shown for a commented-out entry


@dataclass(frozen=True)
class Secret:
    """A secret the file leaves out: the variable the auditor reads it from at run time."""

    what: str
    var: str
    also: str  # the other ways to give it
    is_set: bool  # set in the environment `config init` ran in


@dataclass
class Plan:
    sections: dict[str, list[Entry]]  # "" is the top level
    secrets: list[Secret]
    warnings: list[str]


def env_get(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


@dataclass
class Planning:
    """What a plan builds while it reads the environment: the sections (in the file's order), the
    secrets and the warnings."""

    env: Mapping[str, str]
    sections: dict[str, list[Entry]]
    secrets: list[Secret] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> str | None:
        return env_get(self.env, name)

    def secret(self, what: str, var: str, also: str) -> None:
        """A secret left out of the file: where the auditor reads it at run time, and whether it is set."""
        self.secrets.append(Secret(what, var, also, bool(self.get(var) or self.get(f"{var}_FILE"))))

    def plan(self) -> Plan:
        return Plan(self.sections, self.secrets, self.warnings)

    def region(
        self,
        names: tuple[str, ...],
        *,
        needed: bool,
        unset: str,
        fallback: str | None = None,
        fallback_from: str = "",
    ) -> str | None:
        """[aws] region, when something needs one or one is set: from the first of `names` set
        (the platform's own order), else `fallback` (said to come from `fallback_from`), else
        commented out with `unset` as what to do. Returns the variable read ("" for the
        fallback or none; None when no entry was written)."""
        var = next((n for n in names if self.get(n)), None)
        if not (needed or var or fallback):
            return None
        value = self.get(var) if var else fallback
        said = var or (fallback_from if fallback else unset)
        self.sections["aws"].append(Entry("region", value, said, example="us-east-1"))
        return var or ""

    def search_tls(self, truststore_var: str) -> None:
        """[search] over https: certificates verified, the CA file to give (a Java truststore the
        server is given is named: its CA must be exported as PEM)."""
        truststore = self.get(truststore_var)
        self.sections["search"].append(Entry("verify_certs", True, "https: certificates are verified"))
        notes = [f"{truststore_var} is a Java truststore: export its CA as PEM here"] if truststore else []
        self.sections["search"].append(
            Entry(
                "ca_certs",
                None,
                "the system's CAs unless set",
                notes,
                example="/etc/ssl/certs/ca-certificates.crt",
            )
        )


def toml_value(value: str | bool | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def render(p: Plan, whose: str, now: datetime | None = None) -> str:
    """The commented TOML file; `whose` says whose environment variables it was read from."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        f"# auditor configuration, written by `auditor config init` on {stamp} from",
        f"# {whose}.",
        "# Each line says where its value came from; every key is described in",
        "# docs/auditor.example.toml and docs/configuration.md.",
        "# Precedence at run time: flags > environment > this file > defaults.",
        "#",
        "# No secret is in this file. At run time the auditor reads them from the environment:",
        *(f"#   {s.what}: {s.var} (or {s.also})" for s in p.secrets),
        "",
    ]
    for section, entries in p.sections.items():
        if not entries:
            continue
        if section:
            out.append(f"[{section}]")
        for e in entries:
            out.extend(f"# {n}" for n in e.notes)
            if e.value is None:
                shown = f" = {toml_value(e.example)}" if e.example is not None else ""
                out.append(f"# {e.key}{shown}   # {e.source}")
            else:
                out.append(f"{e.key} = {toml_value(e.value)}   # {e.source}")
        out.append("")
    return "\n".join(out)


def explain(p: Plan) -> list[str]:
    """What `config init` prints beside the file: where each value came from, the secrets, warnings."""
    lines = ["where each value came from:"]
    for section, entries in p.sections.items():
        for e in entries:
            if e.value is not None:
                key = f"{section}.{e.key}" if section else e.key
                lines.append(f"  {key:<28} {toml_value(e.value):<50} <- {e.source}")
    lines.append("not written (read from the environment at run time):")
    for s in p.secrets:
        now = "set now" if s.is_set else "NOT set now: set it where the scan runs"
        lines.append(f"  {s.what}: {s.var} ({now}; or {s.also})")
    lines += [f"warning: {w}" for w in p.warnings]
    return lines
