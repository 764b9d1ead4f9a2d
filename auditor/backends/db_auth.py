"""RDS/Aurora IAM database authentication: each new connection's password is a fresh token.

`boto3.client("rds").generate_db_auth_token` signs locally (SigV4, service `rds-db`, no network
call) with the standard AWS credential chain; a token opens connections for 15 minutes and an
open connection outlives it, so the token is made in SQLAlchemy's `do_connect` hook: every
connection the pool opens (at start, after a drop, after `pool_recycle`) gets its own. DataHub
switches this on with `EBEAN_USE_IAM_AUTH` (or the older `EBEAN_POSTGRES_USE_AWS_IAM_AUTH`);
the auditor's setting is `store.aws_iam`. The token never goes in clear: PostgreSQL is asked for
TLS (`sslmode=require`) and MySQL/Aurora MySQL too (TLS required, as PyMySQL would otherwise only
prefer it and send the token in clear to a server offering none), unless the URL says otherwise
(`sslmode=...`; `ssl_ca=/path/rds-ca.pem` to verify the server, `ssl_disabled=true` to turn it off).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from auditor.errors import AccessRefused, ConfigError

if TYPE_CHECKING:  # SQLAlchemy is imported when an IAM engine is made, not by every start
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

# <instance>.<account hash>.<region>.rds.amazonaws.com (Aurora: <cluster>.cluster-<hash>...)
RDS_HOST = re.compile(r"\.([a-z]{2}(?:-gov)?-[a-z]+-\d)\.rds\.amazonaws\.com(?:\.cn)?$")
DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "mariadb": 3306}
# tokens open connections for 15 minutes; a pooled connection older than this is replaced
RECYCLE_SECONDS = 600
REFUSALS = ("authentication failed", "access denied", "pam authentication")


def region_of(host: str, configured: str | None) -> str:
    """The region to sign for: the one configured, else the one in an RDS host name."""
    if configured:
        return configured
    found = RDS_HOST.search(host or "")
    if found:
        return found.group(1)
    raise ConfigError(
        f"store.aws_iam: no AWS region for {host}",
        hint="set aws_region (AUDITOR_AWS_REGION, AWS_REGION or AWS_DEFAULT_REGION)",
    )


def iam_engine(url: str, region: str | None, **engine_options: Any) -> Engine:
    """An engine whose connections authenticate with RDS IAM tokens."""
    try:
        import boto3
    except ImportError:
        raise ConfigError("store.aws_iam needs boto3", hint="pip install 'datahub-auditor[aws]'") from None
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url

    from auditor.backends.aws_chain import resolve

    parsed = make_url(url)
    if parsed.password:  # a placeholder (OpenMetadata insists on one): the token replaces it
        log.debug("store.aws_iam: the store URL's password is not used (an IAM token is)")
        parsed = parsed.set(password=None)
    if not parsed.username or not parsed.host:
        raise ConfigError("store.aws_iam: the store URL must name the database user and host")
    backend = parsed.get_backend_name()
    host, user = parsed.host, parsed.username
    port = parsed.port or DEFAULT_PORTS.get(backend, 5432)
    signing_region = region_of(host, region)
    session = boto3.Session(region_name=signing_region)
    _credentials, frozen = resolve(session, f"store {host}: an RDS IAM token")
    client = session.client("rds")
    engine = create_engine(parsed, pool_pre_ping=True, pool_recycle=RECYCLE_SECONDS, **engine_options)

    @event.listens_for(engine, "do_connect")
    def _token(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["password"] = client.generate_db_auth_token(
            DBHostname=host, Port=port, DBUsername=user, Region=signing_region
        )
        if backend == "postgresql":
            cparams.setdefault("sslmode", "require")
        elif not any(k.startswith("ssl") for k in cparams):  # RDS takes a token over TLS only:
            cparams["ssl"] = {"check_hostname": False, "verify_mode": "none"}  # never in clear

    key = frozen.access_key or ""
    identity = f"an RDS IAM token for {user} (AWS access key ...{key[-4:]}, {signing_region})"

    @event.listens_for(engine, "handle_error")
    def _refused(context: Any) -> None:
        said = str(context.original_exception).strip().splitlines()
        first = said[0] if said else type(context.original_exception).__name__
        if any(m in first.lower() for m in REFUSALS):
            raise AccessRefused(
                f"store {host}:{port}: {identity} was refused: {first}",
                hint=f"the identity needs rds-db:connect on the database user {user}; the user needs "
                "the rds_iam role (PostgreSQL) or the AWSAuthenticationPlugin (MySQL); check aws_region",
            )

    return engine


def store_engine(url: str, settings: Any) -> Engine | None:
    """The engine the settings ask for: an IAM one, or None (the caller makes a plain one)."""
    if not getattr(settings, "store_aws_iam", False):
        return None
    return iam_engine(url, settings.aws_region)
