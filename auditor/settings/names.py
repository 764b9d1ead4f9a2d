"""Where each setting may be given: its environment variables, the AWS SDKs' own names, and the
settings that may hold a secret (and so may be read from a file instead). The auditor's own
names are here; each platform's own names are its environment module's (`NAMES`), merged in by
`env_names` in the order the registry gives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# the auditor's own environment variable for each setting; after it, each platform's own names
# for the same setting are honoured (platforms/<name>/environment.py, in the registry's order)
ENV_NAMES: dict[str, tuple[str, ...]] = {
    "store_url": ("AUDITOR_STORE_URL",),
    "store_password": ("AUDITOR_STORE_PASSWORD",),
    "store_table": ("AUDITOR_STORE_TABLE",),
    "search_url": ("AUDITOR_SEARCH_URL",),
    "search_kind": ("AUDITOR_SEARCH_KIND",),
    "search_username": ("AUDITOR_SEARCH_USERNAME",),
    "search_password": ("AUDITOR_SEARCH_PASSWORD",),
    "search_verify_certs": ("AUDITOR_SEARCH_VERIFY_CERTS",),
    "search_ca_certs": ("AUDITOR_SEARCH_CA_CERTS",),
    "search_timeout_seconds": ("AUDITOR_SEARCH_TIMEOUT",),
    "search_api_key": ("AUDITOR_SEARCH_API_KEY",),
    "search_bearer_token": ("AUDITOR_SEARCH_BEARER_TOKEN",),
    "search_cloud_id": ("AUDITOR_SEARCH_CLOUD_ID",),
    "search_client_cert": ("AUDITOR_SEARCH_CLIENT_CERT",),
    "search_client_key": ("AUDITOR_SEARCH_CLIENT_KEY",),
    "search_aws_iam": ("AUDITOR_SEARCH_AWS_IAM",),
    "search_aws_service": ("AUDITOR_SEARCH_AWS_SERVICE",),
    "aws_region": ("AUDITOR_AWS_REGION",),
    "search_retries": ("AUDITOR_SEARCH_RETRIES",),
    "index_prefix": ("AUDITOR_INDEX_PREFIX",),
    "kafka_bootstrap": ("AUDITOR_KAFKA_BOOTSTRAP",),
    "kafka_security_protocol": ("AUDITOR_KAFKA_SECURITY_PROTOCOL",),
    "kafka_sasl_mechanism": ("AUDITOR_KAFKA_SASL_MECHANISM",),
    "kafka_sasl_username": ("AUDITOR_KAFKA_SASL_USERNAME",),
    "kafka_sasl_password": ("AUDITOR_KAFKA_SASL_PASSWORD",),
    "kafka_ssl_ca_location": ("AUDITOR_KAFKA_SSL_CA_LOCATION",),
    "kafka_ssl_certificate_location": ("AUDITOR_KAFKA_SSL_CERTIFICATE_LOCATION",),
    "kafka_ssl_key_location": ("AUDITOR_KAFKA_SSL_KEY_LOCATION",),
    "kafka_ssl_key_password": ("AUDITOR_KAFKA_SSL_KEY_PASSWORD",),
    "kafka_ssl_endpoint_identification": ("AUDITOR_KAFKA_SSL_ENDPOINT_IDENTIFICATION",),
    "kafka_oauthbearer_token_file": ("AUDITOR_KAFKA_OAUTHBEARER_TOKEN_FILE",),
    "kafka_aws_role_arn": ("AUDITOR_KAFKA_AWS_ROLE_ARN",),
    "schema_registry_url": ("AUDITOR_SCHEMA_REGISTRY_URL",),
    "schema_registry_type": ("AUDITOR_SCHEMA_REGISTRY_TYPE",),
    "schema_registry_user_info": ("AUDITOR_SCHEMA_REGISTRY_USER_INFO",),
    "schema_registry_ca": ("AUDITOR_SCHEMA_REGISTRY_CA",),
    "glue_registry_name": ("AUDITOR_GLUE_REGISTRY_NAME",),
    "glue_region": ("AUDITOR_GLUE_REGION",),
    "store_aws_iam": ("AUDITOR_STORE_AWS_IAM",),
    "transport": ("AUDITOR_TRANSPORT",),  # kafka | pgqueue (docs/pgqueue.md)
    "pgqueue_url": ("AUDITOR_PGQUEUE_URL",),
    "pgqueue_schema": ("AUDITOR_PGQUEUE_SCHEMA",),
    "pgqueue_table_prefix": ("AUDITOR_PGQUEUE_TABLE_PREFIX",),
    "mcl_versioned_topic": ("AUDITOR_MCL_VERSIONED_TOPIC",),
    "mcl_timeseries_topic": ("AUDITOR_MCL_TIMESERIES_TOPIC",),
    "mae_consumer_group": ("AUDITOR_MAE_CONSUMER_GROUP",),
    "platform": ("AUDITOR_PLATFORM",),  # datahub | openmetadata (docs/openmetadata.md)
    "cluster_alias": ("AUDITOR_CLUSTER_ALIAS",),
    "platform_version": ("AUDITOR_PLATFORM_VERSION",),
    "gms_url": ("AUDITOR_GMS_URL",),
    "grace_seconds": ("AUDITOR_GRACE_SECONDS",),
    "sample_window_seconds": ("AUDITOR_SAMPLE_WINDOW_SECONDS",),
    "index_visibility_seconds": ("AUDITOR_INDEX_VISIBILITY_SECONDS",),
    "scan_prefetch": ("AUDITOR_SCAN_PREFETCH",),
    "scan_readers": ("AUDITOR_SCAN_READERS",),
    "state_file": ("AUDITOR_STATE_FILE",),
    "stores": ("AUDITOR_STORES",),  # a federation: "NAME=URL NAME=URL" (see docs/federation.md)
}

# after the auditor's own and before any platform's: the names every AWS SDK reads (one region
# for every AWS service the auditor signs for)
STANDARD_NAMES: dict[str, tuple[str, ...]] = {"aws_region": ("AWS_REGION", "AWS_DEFAULT_REGION")}


# settings that may hold a secret: each can also be read from a file (`<VAR>_FILE` in the
# environment, `<key>_file` in the TOML file), as container secrets are mounted
SECRETS = (
    "store_url",
    "store_password",
    "search_password",
    "search_api_key",
    "search_bearer_token",
    "kafka_sasl_password",
    "kafka_ssl_key_password",
    "schema_registry_user_info",
    "schema_registry_url",
    "pgqueue_url",
)


def env_names(environments: Sequence[Any]) -> dict[str, tuple[str, ...]]:
    """Per setting, the environment variables read for it, most specific first: the auditor's
    own, then each platform's own (`NAMES` of its environment module)."""
    out = {name: list(names) for name, names in ENV_NAMES.items()}
    for name, names in STANDARD_NAMES.items():
        out.setdefault(name, []).extend(names)
    for environment in environments:
        for name, names in environment.NAMES.items():
            out.setdefault(name, []).extend(n for n in names if n not in out[name])
    return {name: tuple(names) for name, names in out.items()}
