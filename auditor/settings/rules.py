"""Settings that would do nothing are refused, never ignored: a setting another platform owns
(`kafka.bootstrap` on an OpenMetadata scan), or one whose companion is missing or contradicts it
(`search.client_key` without `client_cert`, `kafka.aws_role_arn` without MSK IAM). Both are a
usage error (exit 2) before anything connects, naming the setting and where it was given.

Only what the user gave the auditor is refused: a flag, an `AUDITOR_*` variable, a key of the
configuration file. A platform's own variables (GMS's `KAFKA_BOOTSTRAP_SERVER`, OpenMetadata's
`DB_USER_PASSWORD`) describe that platform's server and are read where they apply, left alone
where they do not: the auditor often runs where a server's whole environment is set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from auditor import platforms
from auditor.errors import ConfigError
from auditor.settings.names import STANDARD_NAMES

if TYPE_CHECKING:
    from auditor.settings.model import Settings


def given_by_user(settings: Settings, name: str) -> str | None:
    """Where the user gave this setting (a flag, an AUDITOR_* variable, the file), else None."""
    source = settings.source(name)
    if source is None:
        return None
    if source == "the command line" or source.startswith("AUDITOR_") or ": " in source:
        return source
    if source in STANDARD_NAMES.get(name, ()):
        return source  # AWS_REGION and the like: the user's own environment
    return None


def _mechanism(settings: Settings) -> str:
    return (settings.kafka_sasl_mechanism or "").upper()


# (the setting that would do nothing, when it does nothing, why, what to do)
IDLE: tuple[tuple[str, Callable[[Settings], bool], str, str], ...] = (
    (
        "search_client_key",
        lambda s: not s.search_client_cert,
        "a client key without a client certificate is never sent",
        "set search.client_cert (AUDITOR_SEARCH_CLIENT_CERT) too, or remove the key",
    ),
    (
        "search_kind",
        lambda s: s.search_kind == "elasticsearch" and s.search_aws_iam,
        "AWS SigV4 signing is Amazon OpenSearch Service's: the OpenSearch client is used",
        "set search.kind to auto or opensearch",
    ),
    (
        "search_aws_service",
        lambda s: not s.search_aws_iam,
        "the AWS service is what SigV4 signs for, and search.aws_iam is off",
        "set search.aws_iam = true (AUDITOR_SEARCH_AWS_IAM), or remove it",
    ),
    (
        "kafka_aws_role_arn",
        lambda s: _mechanism(s) != "AWS_MSK_IAM",
        "the role is assumed for MSK IAM's token only",
        "set kafka.sasl_mechanism = AWS_MSK_IAM, or remove it",
    ),
    (
        "kafka_oauthbearer_token_file",
        lambda s: _mechanism(s) != "OAUTHBEARER",
        "the token file is read for SASL OAUTHBEARER only",
        "set kafka.sasl_mechanism = OAUTHBEARER (and security_protocol SASL_SSL), or remove it",
    ),
    (
        "glue_registry_name",
        lambda s: s.schema_registry_type != "aws_glue",
        "the Glue registry is read only when schema_registry.type is aws_glue",
        'set schema_registry.type = "aws_glue" (AUDITOR_SCHEMA_REGISTRY_TYPE), or remove [glue]',
    ),
    (
        "glue_region",
        lambda s: s.schema_registry_type != "aws_glue",
        "the Glue registry is read only when schema_registry.type is aws_glue",
        'set schema_registry.type = "aws_glue" (AUDITOR_SCHEMA_REGISTRY_TYPE), or remove [glue]',
    ),
    (
        "schema_registry_user_info",
        lambda s: s.schema_registry_type == "aws_glue",
        "the Glue registry is reached with AWS credentials, not a registry key",
        "remove it (Glue uses the AWS credential chain)",
    ),
    (
        "schema_registry_ca",
        lambda s: s.schema_registry_type == "aws_glue",
        "the Glue registry is AWS's own endpoint, not a Confluent-compatible one",
        "remove it",
    ),
)


def refuse_idle_combinations(settings: Settings) -> None:
    """A usage error for the first setting the user gave that the others make do nothing."""
    for name, idle, why, hint in IDLE:
        source = given_by_user(settings, name)
        if source is not None and idle(settings):
            raise ConfigError(f"{name} ({source}) would do nothing: {why}", hint=hint)


def refuse_foreign(settings: Settings, platform: str, title: str) -> None:
    """A usage error for a setting the user gave that belongs to another platform than this one
    (each platform's environment module lists its own in `SETTINGS`)."""
    owners = platforms.setting_owners()
    for name in sorted(settings.model_fields_set):
        owner = owners.get(name)
        if owner is None or platform in owner:
            continue
        source = given_by_user(settings, name)
        if source is not None:
            whose = " and ".join(sorted(owner))
            raise ConfigError(
                f"{name} ({source}) is a setting of {whose}: {title} does not use it",
                hint=f"remove it for {title} (or audit {whose} with --platform {sorted(owner)[0]})",
            )
