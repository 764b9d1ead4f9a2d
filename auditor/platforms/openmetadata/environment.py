"""OpenMetadata's own environment, as the auditor's configuration reads it: the variables its
server is given, honoured after each setting's own AUDITOR_* name (auditor.settings)."""

from __future__ import annotations

# setting -> OpenMetadata's own variables for it
NAMES: dict[str, tuple[str, ...]] = {
    "cluster_alias": ("ELASTICSEARCH_CLUSTER_ALIAS",),  # elasticsearch.clusterAlias
    "store_password": ("DB_USER_PASSWORD",),  # database.password
    "search_username": ("ELASTICSEARCH_USER",),
    "search_password": ("ELASTICSEARCH_PASSWORD",),
    # elasticsearch.aws: OpenSearch with IAM (SigV4), `es` or `aoss`
    "search_aws_iam": ("SEARCH_AWS_IAM_AUTH_ENABLED",),
    "search_aws_service": ("SEARCH_AWS_SERVICE_NAME",),
}

# the settings only OpenMetadata uses: given to another platform, they are refused
SETTINGS = frozenset({"cluster_alias"})
