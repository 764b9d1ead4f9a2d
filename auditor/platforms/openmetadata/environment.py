"""OpenMetadata's own environment, as the auditor's configuration reads it: the variables its
server is given, honoured after each setting's own AUDITOR_* name (auditor.settings)."""

from __future__ import annotations

# setting -> OpenMetadata's own variables for it
NAMES: dict[str, tuple[str, ...]] = {
    "cluster_alias": ("ELASTICSEARCH_CLUSTER_ALIAS",),  # elasticsearch.clusterAlias
}
