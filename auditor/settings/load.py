"""Loading the settings: defaults < TOML file < environment (AUDITOR_* and each platform's own
names) < flags, secrets read from files, misspelt keys named, a federation's stores parsed.

This is where the settings meet the platforms: each known platform's own environment (its
variables and its rule between them) comes from the registry (`auditor.platforms.environments`),
and the platform the settings name is checked against the registry's names.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from auditor import platforms
from auditor.errors import ConfigError
from auditor.redact import redact_url
from auditor.settings.model import Settings, StoreEntry, with_password
from auditor.settings.names import SECRETS, env_names
from auditor.settings.rules import refuse_idle_combinations

# a federation store's name: it labels findings, report columns and Prometheus series
STORE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")


def _flatten(data: dict[str, Any], prefix: str = "", spelled: dict[str, str] | None = None) -> dict[str, Any]:
    """`[store] url = ...` -> `store_url`; `spelled` keeps each flat key's own spelling for errors."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}".replace("-", "_")
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}_", spelled))
            if spelled is not None:
                for inner in list(spelled):
                    if inner.startswith(f"{name}_") and spelled[inner].count(".") == 0:
                        spelled[inner] = f"{key}.{spelled[inner]}"
        else:
            out[name] = value
            if spelled is not None:
                spelled[name] = str(key)
    return out


def _read_secret(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read the secret file {path}: {exc.strerror}") from None


def _nearest(name: str) -> str | None:
    """The valid key closest to a misspelt one (`<secret>_file` keys included)."""
    from difflib import get_close_matches

    keys = [*Settings.model_fields, *(f"{k}_file" for k in SECRETS)]
    found = get_close_matches(name, keys, n=1, cutoff=0.6)
    return found[0] if found else None


def load_settings(
    config_file: str | Path | None = None,
    env: dict[str, str] | None = None,
    **flags: Any,
) -> Settings:
    """Merge defaults < file (`[store] url = ...` or flat keys) < environment < flags.

    A secret may come from a file instead: `AUDITOR_STORE_URL_FILE=/run/secrets/db` (any of a
    secret's variables with `_FILE`), or `url_file = "..."` in the TOML file. The database
    password may be kept apart from the URL: EBEAN_DATASOURCE_PASSWORD (or AUDITOR_STORE_PASSWORD,
    either with `_FILE`) or `[store] password_file`, for a URL that names only the user.
    """
    merged: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    environ = os.environ if env is None else env
    path = config_file or environ.get("AUDITOR_CONFIG")
    if path:
        try:
            with open(path, "rb") as handle:
                merged.update(_flatten(tomllib.load(handle), spelled=spelled))
        except FileNotFoundError:
            raise ConfigError(f"configuration file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
        for name in SECRETS:
            file_key = f"{name}_file"
            if file_key in merged:
                merged[name] = _read_secret(
                    str(merged.pop(file_key)), f"{path}: {spelled.get(file_key, file_key)}"
                )
        unknown = sorted(k for k in merged if k not in Settings.model_fields)
        if unknown:
            hints = []
            for key in unknown:
                near = _nearest(key)
                shown = spelled.get(key, key)
                hints.append(
                    f"{shown!r}" + (f" (did you mean {_spell_like(near, shown)!r}?)" if near else "")
                )
            raise ConfigError(
                f"configuration file {path}: unknown key {', '.join(hints)}",
                hint="every key is listed in docs/auditor.example.toml",
            )
    from_file = set(merged)
    sources = {k: f"{path}: {spelled.get(k, k)}" for k in merged}
    environments = platforms.environments()
    for name, names in env_names(environments).items():
        for var in names:
            if environ.get(var):
                merged[name], sources[name] = environ[var], var
                break
            if name in SECRETS and environ.get(f"{var}_FILE"):
                merged[name] = _read_secret(environ[f"{var}_FILE"], f"{var}_FILE")
                sources[name] = f"{var}_FILE"
                break
    for environment in environments:  # a platform's own rules (DataHub's per-hook group)
        adjust = getattr(environment, "adjust", None)
        if adjust is not None:
            adjust(merged, environ, from_file)
    given = {k: v for k, v in flags.items() if v is not None}
    merged.update(given)
    sources.update(dict.fromkeys(given, "the command line"))
    if merged.get("stores"):
        merged["stores"] = store_entries(merged["stores"], environ)
        if merged.get("store_url"):
            raise ConfigError(
                "both a store URL and a federation of stores are configured",
                hint="give either --store-url / [store] url or --store NAME=URL / [[stores]], not both",
            )
    try:
        settings = Settings.model_validate(merged, context={"platforms": platforms.names()})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid configuration: {problems}") from None
    settings._sources.update({k: v for k, v in sources.items() if k in settings.model_fields_set})
    refuse_idle_combinations(settings)
    return settings


def _spell_like(field: str, shown: str) -> str:
    """`store_url` shown as `store.url` when the user wrote a section."""
    if "." in shown:
        section = shown.split(".", 1)[0]
        if field.startswith(f"{section}_"):
            return f"{section}.{field[len(section) + 1 :]}"
    return field


def store_entries(value: Any, environ: Any) -> list[StoreEntry]:
    """A federation's stores from `[[stores]]` tables or `NAME=URL` texts (a flag, AUDITOR_STORES):
    names checked (a simple identifier, unique), each `password_env` read from the environment."""
    items = value.split() if isinstance(value, str) else list(value)
    out: list[StoreEntry] = []
    for item in items:
        if isinstance(item, str):
            name, sep, url = item.partition("=")
            if not sep or not url:
                raise ConfigError(
                    f"a store must be given as NAME=URL, not {redact_url(item)!r}",
                    hint="e.g. --store teama=postgresql+psycopg://user@host/datahub",
                )
            item = {"name": name, "url": url}
        if not isinstance(item, dict):
            raise ConfigError("[[stores]]: each store is a table with name and url")
        name = str(item.get("name", ""))
        if not STORE_NAME.fullmatch(name):
            raise ConfigError(
                f"store name {name!r} is not a simple identifier",
                hint="a letter, then letters, digits, '_' or '-' (at most 63): it labels findings",
            )
        if any(e.name == name for e in out):
            raise ConfigError(f"store name {name!r} is given twice", hint="each store needs its own name")
        try:
            entry = StoreEntry(**item)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"store {name!r}: {problems}") from None
        if entry.password_env:
            password = environ.get(entry.password_env)
            if not password:
                raise ConfigError(
                    f"store {name!r}: the environment variable {entry.password_env} is not set",
                    hint="password_env names the variable that holds the store's password",
                )
            url = with_password(entry.url.get_secret_value(), password)
            entry = entry.model_copy(update={"url": SecretStr(url)})
        out.append(entry)
    return out
