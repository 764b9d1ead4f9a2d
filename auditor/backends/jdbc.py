"""JDBC URLs as the platforms' Java servers are given them (DataHub's EBEAN_DATASOURCE_URL,
OpenMetadata's `jdbc:${DB_SCHEME}://${DB_HOST}:${DB_PORT}/${OM_DATABASE}?${DB_PARAMS}`) turned
into SQLAlchemy URLs, with the TLS parameters carried over in the meaning the JDBC driver gives
them. No password is carried: it stays in the environment."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from auditor.errors import ConfigError

DIALECTS = {"mysql": "mysql+pymysql", "mariadb": "mysql+pymysql", "postgresql": "postgresql+psycopg"}
SECRETISH = re.compile(r"password|secret|token|credential", re.IGNORECASE)


@dataclass(frozen=True)
class JdbcNames:
    """Whose JDBC URL it is: the variables that give it and the user, and the server's default user."""

    url_var: str
    user_var: str
    default_user: str
    whose: str


@dataclass(frozen=True)
class StoreTarget:
    """A JDBC URL read as a SQLAlchemy URL (never with a password) and what was made of it."""

    url: str
    family: str  # mysql | mariadb | postgresql: whose parameter meanings were applied
    notes: tuple[str, ...] = ()
    password_in_jdbc: bool = False  # the JDBC URL carried a password (not written)


def env_bool(value: str | None) -> bool | None:
    if value is None:
        return None
    low = value.strip().lower()
    if low in ("true", "yes", "1", "on", ""):
        return True
    if low in ("false", "no", "0", "off"):
        return False
    return None


def _family_of_driver(driver: str | None) -> str | None:
    low = (driver or "").lower()
    for family in ("mariadb", "mysql", "postgresql"):
        if family in low:
            return family
    return None


def _split_host(spec: str, names: JdbcNames) -> tuple[str, int | None]:
    if spec.startswith("["):  # [v6]:port
        host, _, after = spec[1:].partition("]")
        port = after[1:] if after.startswith(":") else ""
    elif spec.count(":") == 1:
        host, _, port = spec.partition(":")
    else:
        host, port = spec, ""
    if not host or "(" in host or "=" in host or (port and not port.isdigit()):
        raise ConfigError(
            f"{names.url_var}: cannot read the host {spec!r}",
            hint="write [store] url by hand (mysql+pymysql://USER@HOST:PORT/DB) or set AUDITOR_STORE_URL",
        )
    return host, int(port) if port else None


def _params(query: str) -> dict[str, tuple[str, str]]:
    """`a=1&B=2` -> {"a": ("a", "1"), "b": ("B", "2")}: JDBC property names are case-insensitive."""
    out: dict[str, tuple[str, str]] = {}
    for part in re.split(r"[&;]", query):
        if part:
            key, _, value = part.partition("=")
            out[key.strip().lower()] = (key.strip(), unquote(value))
    return out


def jdbc_to_sqlalchemy(jdbc: str, username: str | None, driver: str | None, names: JdbcNames) -> StoreTarget:
    """`jdbc:mysql://h:3306/db?useSSL=true` -> `mysql+pymysql://USER@h:3306/db?...`.

    MySQL, MariaDB and PostgreSQL URLs; the TLS parameters are carried with the meaning the JDBC
    driver gives them (the driver class decides whose meaning when it names one), everything else
    is dropped and listed. The user is `username` (`names.user_var`), else the URL's own, else the
    server's default; a password in the URL is noted and never carried.
    """
    from sqlalchemy.engine import URL

    text = jdbc.strip()
    if not text.lower().startswith("jdbc:"):
        raise ConfigError(
            f"{names.url_var} is not a JDBC URL (jdbc:mysql://..., jdbc:mariadb://..., jdbc:postgresql://...)"
        )
    sub, _, rest = text[5:].partition(":")
    sub = sub.lower()
    if sub not in DIALECTS:
        raise ConfigError(
            f"{names.url_var}: the auditor reads MySQL, MariaDB or PostgreSQL, not jdbc:{sub}",
            hint="set AUDITOR_STORE_URL to a SQLAlchemy URL instead",
        )
    notes: list[str] = []
    mode, sep, after = rest.partition(":")
    if not rest.startswith("//") and sep and after.startswith("//") and re.fullmatch(r"[a-z+]+", mode):
        notes.append(f"jdbc:{sub}:{mode}: the auditor connects to the first host only")
        rest = after
    main, _, query = rest.partition("?")
    if main.startswith("//"):
        authority, _, path = main[2:].partition("/")
    else:  # jdbc:postgresql:database, jdbc:postgresql:/
        authority, path = "", main.lstrip("/")
    url_user = url_password = None
    if "@" in authority:
        creds, _, authority = authority.rpartition("@")
        url_user, colon, secret = creds.partition(":")
        url_password = secret if colon else None
    hosts = [h for h in authority.split(",") if h]
    if len(hosts) > 1:
        notes.append(
            f"{len(hosts)} hosts listed: using the first, {hosts[0]} (point it at a replica if you like)"
        )
    if hosts:
        host, port = _split_host(hosts[0], names)
    else:
        host, port = "localhost", None
        notes.append("no host in the URL: localhost, as the JDBC driver does")
    params = _params(query)
    family = _family_of_driver(driver) or sub
    if _family_of_driver(driver) and family != sub and {family, sub} != {"mysql", "mariadb"}:
        notes.append(f"driver {driver} does not match jdbc:{sub}: following the URL")
        family = sub
    if "user" in params:
        url_user = params.pop("user")[1]
    password_in_jdbc = url_password is not None or "password" in params
    params.pop("password", None)
    if username:
        user = username
    elif url_user:
        user = url_user
        notes.append(f"user from the JDBC URL ({names.user_var} unset)")
    else:
        user = names.default_user
        notes.append(f"{names.user_var} unset: {names.whose}'s default user {user!r}")
    tls = _pg_tls if sub == "postgresql" else (_mariadb_tls if family == "mariadb" else _mysql_tls)
    carried, tls_notes = tls(params)
    notes.extend(tls_notes)
    if password_in_jdbc:
        notes.append("the JDBC URL carries a password: not written (it is read at run time, see above)")
    dropped = [orig if SECRETISH.search(orig) else f"{orig}={value}" for orig, value in params.values()]
    if dropped:
        notes.append("dropped (no meaning for the Python driver): " + ", ".join(dropped))
    url = URL.create(
        DIALECTS[sub], username=user, host=host, port=port, database=unquote(path) or None, query=carried
    ).render_as_string(hide_password=False)
    return StoreTarget(url, family if sub != "postgresql" else sub, tuple(notes), password_in_jdbc)


def _take(params: dict[str, tuple[str, str]], *keys: str) -> dict[str, str]:
    return {k: params.pop(k)[1] for k in keys if k in params}


def _said(params: dict[str, tuple[str, str]], *keys: str) -> str:
    """`useSSL=true, verifyServerCertificate=false` as the URL spells them (before `_take`)."""
    return ", ".join(f"{params[k][0]}={params[k][1]}" for k in keys if k in params)


MYSQL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
MARIADB_MODES = {
    "disable": "DISABLED",
    "trust": "REQUIRED",
    "verify-ca": "VERIFY_CA",
    "verify-full": "VERIFY_IDENTITY",
}


def _pymysql_tls(mode: str, ca: str | None) -> tuple[dict[str, str], list[str]]:
    """PyMySQL's URL options (SQLAlchemy passes them on) for a MySQL sslMode."""
    if mode == "DISABLED":
        return {"ssl_disabled": "true"}, []
    if mode == "PREFERRED":
        return {}, []
    if mode == "REQUIRED":
        return {"ssl_verify_cert": "false"}, []
    if mode == "VERIFY_CA":
        if ca:
            return {"ssl_ca": ca, "ssl_check_hostname": "false"}, []
        return {"ssl_verify_cert": "true"}, []
    if ca:
        return {"ssl_ca": ca}, []
    return {"ssl_verify_cert": "true", "ssl_verify_identity": "true"}, [
        "PyMySQL checks the server's host name only with a CA file: add ssl_ca=/path/ca.pem to the URL"
    ]


def _mysql_tls(params: dict[str, tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """MySQL Connector/J 8: sslMode, or the legacy useSSL / requireSSL / verifyServerCertificate."""
    legacy = _said(params, "usessl", "requiressl", "verifyservercertificate")
    got = _take(params, "sslmode", "usessl", "requiressl", "verifyservercertificate")
    notes = []
    if "sslmode" in got and got["sslmode"].upper() in MYSQL_MODES:
        mode = got["sslmode"].upper()
        notes.append(f"sslMode={mode}")
    else:
        if "sslmode" in got:
            notes.append(f"sslMode={got['sslmode']} unknown to Connector/J: ignored")
        use, verify, req = (env_bool(got.get(k)) for k in ("usessl", "verifyservercertificate", "requiressl"))
        mode = "DISABLED" if use is False else "VERIFY_CA" if verify else "REQUIRED" if req else "PREFERRED"
        notes.append(f"{legacy or 'no TLS parameters'}: Connector/J 8 reads this as sslMode={mode}")
    for key in ("trustcertificatekeystoreurl", "clientcertificatekeystoreurl"):
        if key in params:
            notes.append(f"{params[key][0]} is a Java keystore: give its CA as PEM with ssl_ca=/path/ca.pem")
    query, more = _pymysql_tls(mode, None)
    return query, notes + more + _tls_said(mode, query)


def _mariadb_tls(params: dict[str, tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """MariaDB Connector/J: sslMode (3.x), or useSsl with trustServerCertificate and
    disableSslHostnameVerification (2.x); serverSslCert is a CA file PyMySQL can use."""
    legacy = _said(params, "usessl", "trustservercertificate", "disablesslhostnameverification")
    got = _take(params, "sslmode", "usessl", "trustservercertificate", "disablesslhostnameverification")
    ca_param = _take(params, "serversslcert").get("serversslcert")
    notes = []
    ca = None
    if ca_param and not ca_param.startswith(("-----", "classpath:")):
        ca = ca_param.removeprefix("file:")
    elif ca_param:
        notes.append(
            "serverSslCert is inline or on the classpath: give it as a file with ssl_ca=/path/ca.pem"
        )
    if "sslmode" in got and got["sslmode"].lower() in MARIADB_MODES:
        mode = MARIADB_MODES[got["sslmode"].lower()]
        notes.append(f"sslMode={got['sslmode']}")
    elif env_bool(got.get("usessl")):
        trust, no_host = (
            env_bool(got.get(k)) for k in ("trustservercertificate", "disablesslhostnameverification")
        )
        mode = "REQUIRED" if trust else "VERIFY_CA" if no_host else "VERIFY_IDENTITY"
        notes.append(f"{legacy}: MariaDB Connector/J reads this as {mode}")
    elif got.get("usessl") is not None:
        mode = "DISABLED"
        notes.append(f"{legacy}: no TLS")
    else:
        mode = "PREFERRED"
        notes.append(
            "no TLS parameters (MariaDB Connector/J: no TLS); PyMySQL uses TLS when the server offers it"
        )
    query, more = _pymysql_tls(mode, ca)
    return query, notes + more + _tls_said(mode, query)


PG_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def _pg_tls(params: dict[str, tuple[str, str]]) -> tuple[dict[str, str], list[str]]:
    """pgjdbc: sslmode as libpq has it; `ssl=true` alone means verify-full (pgjdbc 42.2.5+); the
    NonValidatingFactory turns verification off; sslrootcert/sslcert/sslkey are files for libpq
    too; currentSchema becomes the search_path."""
    got = _take(params, "sslmode", "ssl", "sslfactory", "sslrootcert", "sslcert", "sslkey", "currentschema")
    query: dict[str, str] = {}
    notes = []
    mode = got.get("sslmode", "").lower() or None
    if mode and mode not in PG_MODES:
        notes.append(f"sslmode={mode} unknown: left out")
        mode = None
    if mode is None and "ssl" in got and env_bool(got["ssl"]):
        mode = "verify-full"
        notes.append("ssl=true: pgjdbc reads this as sslmode=verify-full")
    if mode in ("verify-ca", "verify-full") and got.get("sslfactory", "").endswith("NonValidatingFactory"):
        mode = "require"
        notes.append("sslfactory=...NonValidatingFactory verifies nothing: sslmode=require")
    if mode:
        query["sslmode"] = mode
    for key in ("sslrootcert", "sslcert", "sslkey"):
        if key in got:
            query[key] = got[key]
    if "sslkey" in got:
        notes.append("sslkey: libpq wants a PEM key (pgjdbc also takes PKCS-8 DER)")
    if "currentschema" in got:
        query["options"] = f"-csearch_path={got['currentschema']}"
        notes.append(f"currentSchema={got['currentschema']}: options=-csearch_path=...")
    return query, notes


def _tls_said(mode: str, query: dict[str, str]) -> list[str]:
    shown = (
        "&".join(f"{k}={v}" for k, v in query.items()) or "no option (PyMySQL's default: TLS when offered)"
    )
    return [f"TLS {mode}: {shown}"]
