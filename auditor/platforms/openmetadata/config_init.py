"""The plan of `auditor config init --platform openmetadata`: a commented TOML configuration from
OpenMetadata's own environment variables, as its server is given them.

Where OpenMetadata reads each (open-metadata/OpenMetadata `conf/openmetadata.yaml` and the
docker-compose / Helm environment that fills it):

* `database.url: jdbc:${DB_SCHEME:-mysql}://${DB_HOST:-localhost}:${DB_PORT:-3306}/
  ${OM_DATABASE:-openmetadata_db}?${DB_PARAMS:-allowPublicKeyRetrieval=true&useSSL=false&
  serverTimezone=UTC}` (releases before DB_PARAMS: `useSSL=${DB_USE_SSL:-false}`),
  `user: ${DB_USER:-openmetadata_user}`, `password: ${DB_USER_PASSWORD}`, `driverClass:
  ${DB_DRIVER_CLASS}`. RDS IAM (`AwsRdsDatabaseAuthenticationProvider`) is on when DB_PARAMS
  holds `awsRegion` (with `allowPublicKeyRetrieval`; `assumeRoleArn` optional); the password is
  then a placeholder.
* `elasticsearch: searchType ${SEARCH_TYPE}, host ${ELASTICSEARCH_HOST:-localhost}, port
  ${ELASTICSEARCH_PORT:-9200}, scheme ${ELASTICSEARCH_SCHEME:-http}, username
  ${ELASTICSEARCH_USER}, password ${ELASTICSEARCH_PASSWORD}, clusterAlias
  ${ELASTICSEARCH_CLUSTER_ALIAS}, truststorePath ${ELASTICSEARCH_TRUST_STORE_PATH}` and, for
  Amazon OpenSearch with IAM, `aws: enabled ${SEARCH_AWS_IAM_AUTH_ENABLED}, region
  ${AWS_DEFAULT_REGION}, serviceName ${SEARCH_AWS_SERVICE_NAME:-es}`.

OpenMetadata has no Kafka in its write path: the file has no [kafka]. No secret is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from urllib.parse import unquote

from auditor.backends.jdbc import JdbcNames, env_bool, jdbc_to_sqlalchemy
from auditor.core.config_plan import Entry, Plan, Planning
from auditor.core.config_plan import render as render_plan
from auditor.errors import ConfigError

NAMES = JdbcNames(
    "DB_SCHEME/DB_HOST/DB_PORT/OM_DATABASE/DB_PARAMS", "DB_USER", "openmetadata_user", "OpenMetadata"
)
DEFAULT_PARAMS = "allowPublicKeyRetrieval=true&useSSL={ssl}&serverTimezone=UTC"
DEFAULT_PORTS = {"mysql": "3306", "postgresql": "5432"}
REGION_VARS = ("AWS_DEFAULT_REGION", "AWS_REGION")  # the order OpenMetadata's AWS clients read them
IAM_PARAMS = ("awsregion", "assumerolearn")  # OpenMetadata's own: not JDBC driver properties
CHAIN = "the standard AWS credential chain at run time (IRSA, instance role, profile, environment)"
SECTIONS = ("", "aws", "store", "search")


def plan(env: Mapping[str, str]) -> Plan:
    """What `config init` writes for this environment (nothing secret in it), section by section."""
    b = Planning(env, {k: [] for k in SECTIONS})
    b.sections[""].append(Entry("platform", "openmetadata", "config init --platform openmetadata"))
    alias = b.get("ELASTICSEARCH_CLUSTER_ALIAS")
    b.sections[""].append(
        Entry(
            "cluster_alias",
            alias or "",
            "ELASTICSEARCH_CLUSTER_ALIAS" if alias else "ELASTICSEARCH_CLUSTER_ALIAS unset: none",
        )
    )
    state = b.get("AUDITOR_STATE_FILE")
    b.sections[""].append(
        Entry(
            "state_file",
            state,
            "AUDITOR_STATE_FILE" if state else "AUDITOR_STATE_FILE unset: the auditor's default",
            example="/var/lib/auditor/state-openmetadata.sqlite",
        )
    )
    region = _store(b)
    _search(b, region)
    return b.plan()


def _params(text: str) -> list[tuple[str, str]]:
    return [(k, v) for k, _, v in (p.partition("=") for p in text.split("&") if p)]


def _store(b: Planning) -> str | None:
    """[store] from the JDBC URL's parts; RDS IAM when DB_PARAMS holds awsRegion. Returns its region."""
    scheme = (b.get("DB_SCHEME") or "mysql").lower()
    host, port, database = b.get("DB_HOST"), b.get("DB_PORT"), b.get("OM_DATABASE")
    params = b.get("DB_PARAMS")
    if params is None:
        ssl = "true" if env_bool(b.get("DB_USE_SSL")) else "false"
        params = DEFAULT_PARAMS.format(ssl=ssl)
    pairs = _params(params)
    iam = {k.lower(): unquote(v) for k, v in pairs if k.lower() in IAM_PARAMS}
    kept = "&".join(f"{k}={v}" for k, v in pairs if k.lower() not in IAM_PARAMS)
    if port and not port.isdigit():
        raise ConfigError(f"DB_PORT is not a port number: {port!r}")
    jdbc = (
        f"jdbc:{scheme}://{host or 'localhost'}:{port or DEFAULT_PORTS.get(scheme, '3306')}/"
        f"{database or 'openmetadata_db'}" + (f"?{kept}" if kept else "")
    )
    target = jdbc_to_sqlalchemy(jdbc, b.get("DB_USER"), b.get("DB_DRIVER_CLASS"), NAMES)
    used = [n for n in ("DB_SCHEME", "DB_HOST", "DB_PORT", "OM_DATABASE", "DB_PARAMS", "DB_USER") if b.get(n)]
    unset = [n for n in ("DB_SCHEME", "DB_HOST", "DB_PORT", "OM_DATABASE") if not b.get(n)]
    source = ", ".join(used) + (f" ({', '.join(unset)} unset: OpenMetadata's defaults)" if unset else "")
    b.sections["store"].append(
        Entry("url", target.url, source or "OpenMetadata's defaults", list(target.notes))
    )
    if not host:
        b.warnings.append("DB_HOST is not set: [store] url names localhost, OpenMetadata's default")
    region = iam.get("awsregion")
    if region:
        b.sections["store"].append(
            Entry("aws_iam", True, "DB_PARAMS awsRegion", [f"an RDS IAM token per connection; {CHAIN}"])
        )
        if iam.get("assumerolearn"):
            b.warnings.append(
                "DB_PARAMS assumeRoleArn: the auditor does not assume a role for the database; give "
                "its identity rds-db:connect, or run it as that role (AWS_ROLE_ARN with a web identity, "
                "or a profile with role_arn)"
            )
    else:
        b.secret(
            "database password", "DB_USER_PASSWORD", "AUDITOR_STORE_PASSWORD, DB_USER_PASSWORD_FILE=path"
        )
    return region


def _search(b: Planning, store_region: str | None) -> None:
    """[search]: the URL from scheme, host and port; user, CA, SigV4."""
    scheme = (b.get("ELASTICSEARCH_SCHEME") or "http").lower()
    host, port = b.get("ELASTICSEARCH_HOST"), b.get("ELASTICSEARCH_PORT")
    if port and not port.isdigit():
        raise ConfigError(f"ELASTICSEARCH_PORT is not a port number: {port!r}")
    url = f"{scheme}://{host or 'localhost'}:{port or '9200'}"
    source = [
        "ELASTICSEARCH_SCHEME" if b.get("ELASTICSEARCH_SCHEME") else "ELASTICSEARCH_SCHEME unset: http",
        "ELASTICSEARCH_HOST" if host else "ELASTICSEARCH_HOST unset: localhost",
        "ELASTICSEARCH_PORT" if port else "ELASTICSEARCH_PORT unset: 9200",
    ]
    b.sections["search"].append(Entry("url", url, ", ".join(source)))
    if not host:
        b.warnings.append(
            "ELASTICSEARCH_HOST is not set: [search] url names localhost, OpenMetadata's default"
        )
    kind = b.get("SEARCH_TYPE")
    notes = (
        [f"SEARCH_TYPE={kind.strip(chr(34))}: the server's own kind is detected, not taken from it"]
        if kind
        else []
    )
    b.sections["search"].append(Entry("kind", "auto", "detected at run time", notes))
    iam = env_bool(b.get("SEARCH_AWS_IAM_AUTH_ENABLED"))
    user = b.get("ELASTICSEARCH_USER")
    if user and not iam:
        b.sections["search"].append(Entry("username", user, "ELASTICSEARCH_USER"))
        b.secret(
            "search password",
            "ELASTICSEARCH_PASSWORD",
            "AUDITOR_SEARCH_PASSWORD, ELASTICSEARCH_PASSWORD_FILE=path",
        )
    if scheme == "https":
        b.search_tls("ELASTICSEARCH_TRUST_STORE_PATH")
    if iam:
        service = b.get("SEARCH_AWS_SERVICE_NAME") or "es"
        b.sections["search"].append(
            Entry(
                "aws_iam", True, "SEARCH_AWS_IAM_AUTH_ENABLED", [f"SigV4 signing; credentials from {CHAIN}"]
            )
        )
        b.sections["search"].append(
            Entry(
                "aws_service",
                service,
                "SEARCH_AWS_SERVICE_NAME"
                if b.get("SEARCH_AWS_SERVICE_NAME")
                else "unset: es (aoss for Serverless)",
            )
        )
    unset = "AWS_DEFAULT_REGION unset: set it"
    said = b.region(
        REGION_VARS, needed=bool(iam), unset=unset, fallback=store_region, fallback_from="DB_PARAMS awsRegion"
    )
    if said and store_region and b.get(said) != store_region:
        b.warnings.append(
            f"DB_PARAMS awsRegion={store_region} and {said}={b.get(said)}: one [aws] region "
            "serves both; the database's is in the URL's host when it is an RDS name"
        )
    if iam and not said and not store_region:
        b.warnings.append("SEARCH_AWS_IAM_AUTH_ENABLED is on but AWS_DEFAULT_REGION is not set")


def render(p: Plan, now: datetime | None = None) -> str:
    return render_plan(p, "OpenMetadata's environment variables (as set for its server)", now)
