"""`auditor config init` for a DataHub in the cloud: what its environment (or its Helm chart's
`global.*.iam.enabled`, which set the same variables) says about IAM and managed services.

* Search: `OPENSEARCH_USE_AWS_IAM_AUTH=true` (Helm `global.elasticsearch.iam.enabled`; the old
  setup job's `USE_AWS_ELASTICSEARCH`) and `AWS_REGION`: SigV4, credentials from the chain.
* Kafka: `SPRING_KAFKA_PROPERTIES_SASL_MECHANISM=AWS_MSK_IAM` (Java services) or the Python
  services' `KAFKA_PROPERTIES_SASL_MECHANISM=OAUTHBEARER` with DataHub's `kafka_msk_iam` callback:
  MSK IAM. Confluent Cloud: SASL_SSL + PLAIN, the API key in the JAAS config (its user only kept).
* Schema registry: `SCHEMA_REGISTRY_TYPE=AWS_GLUE` with `AWS_GLUE_SCHEMA_REGISTRY_NAME` and
  `_REGION`; a Confluent registry's `basic.auth.user.info` is a secret left in the environment.
* Database: `EBEAN_USE_IAM_AUTH` with `EBEAN_CLOUD_PROVIDER` aws/auto, or the older
  `EBEAN_POSTGRES_USE_AWS_IAM_AUTH`: RDS IAM tokens (no password to ask for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.platforms.datahub.jdbc import env_bool

if TYPE_CHECKING:
    from auditor.platforms.datahub.config.init import _Planning

CHAIN = "the standard AWS credential chain at run time (IRSA, instance role, profile, environment)"


def cloud(b: _Planning) -> None:
    from auditor.platforms.datahub.config.init import Entry

    region_var = next((n for n in ("AWS_REGION", "AWS_DEFAULT_REGION") if b.get(n)), None)
    needs_region = False

    search_iam = next(
        (n for n in ("OPENSEARCH_USE_AWS_IAM_AUTH", "USE_AWS_ELASTICSEARCH") if env_bool(b.get(n))), None
    )
    if search_iam:
        needs_region = True
        b.sections["search"].append(
            Entry("aws_iam", True, search_iam, [f"SigV4 signing; credentials from {CHAIN}"])
        )
        b.sections["search"].append(
            Entry("aws_service", "es", "Amazon OpenSearch Service", ["`aoss` for OpenSearch Serverless"])
        )
        for e in b.sections["search"]:
            if e.key == "username" and e.value is None:
                e.source = "AWS IAM: no user"

    mechanisms = [
        b.get(n) or "" for n in ("SPRING_KAFKA_PROPERTIES_SASL_MECHANISM", "KAFKA_PROPERTIES_SASL_MECHANISM")
    ]
    msk_callback = any("msk_iam" in (b.get(n) or "") for n in b.env if "OAUTH" in n and "KAFKA" in n)
    if "AWS_MSK_IAM" in [m.upper() for m in mechanisms] or msk_callback:
        needs_region = True
        for e in b.sections["kafka"]:
            if e.key == "sasl_mechanism":
                e.value, e.source = (
                    "AWS_MSK_IAM",
                    "MSK IAM (" + ("AWS_MSK_IAM" if not msk_callback else "kafka_msk_iam") + ")",
                )
                e.notes.append(f"an OAUTHBEARER token from AWS's MSK signer; credentials from {CHAIN}")
            if e.key == "security_protocol" and e.value is None:
                e.value, e.source = "SASL_SSL", "MSK IAM needs SASL_SSL"
        b.secrets[:] = [s for s in b.secrets if s.var != "AUDITOR_KAFKA_SASL_PASSWORD"]

    registry_type = (b.get("SCHEMA_REGISTRY_TYPE") or "KAFKA").upper()
    if registry_type == "AWS_GLUE":
        b.sections["schema_registry"][:] = [Entry("type", "aws_glue", "SCHEMA_REGISTRY_TYPE=AWS_GLUE")]
        name, glue_region = b.get("AWS_GLUE_SCHEMA_REGISTRY_NAME"), b.get("AWS_GLUE_SCHEMA_REGISTRY_REGION")
        b.sections["glue"].append(
            Entry(
                "registry_name",
                name,
                "AWS_GLUE_SCHEMA_REGISTRY_NAME" if name else "unset: Glue's default registry",
                example="datahub",
            )  # fmt: skip
        )
        b.sections["glue"].append(
            Entry(
                "region",
                glue_region,
                "AWS_GLUE_SCHEMA_REGISTRY_REGION" if glue_region else "unset: aws_region, else us-east-1",
                example="us-east-1",
            )  # fmt: skip
        )
    user_info_vars = (
        "KAFKA_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO",
        "SPRING_KAFKA_PROPERTIES_BASIC_AUTH_USER_INFO",
        "KAFKA_PROPERTIES_BASIC_AUTH_USER_INFO",
    )
    for var in user_info_vars:
        if b.get(var):
            also = f"AUDITOR_SCHEMA_REGISTRY_USER_INFO_FILE=path, [schema_registry] user_info_file; not {var}"
            b.secret("schema registry key:secret", "AUDITOR_SCHEMA_REGISTRY_USER_INFO", also)
            break

    provider = (b.get("EBEAN_CLOUD_PROVIDER") or "auto").lower()
    store_iam = next(
        (n for n in ("EBEAN_USE_IAM_AUTH", "EBEAN_POSTGRES_USE_AWS_IAM_AUTH") if env_bool(b.get(n))), None
    )
    if store_iam == "EBEAN_USE_IAM_AUTH" and provider not in ("aws", "auto"):
        b.warnings.append(
            f"EBEAN_USE_IAM_AUTH with EBEAN_CLOUD_PROVIDER={provider}: the auditor speaks RDS IAM only"
        )
    elif store_iam:
        needs_region = True
        b.sections["store"].append(
            Entry("aws_iam", True, store_iam, [f"an RDS IAM token per connection; {CHAIN}"])
        )
        b.secrets[:] = [s for s in b.secrets if s.var != "EBEAN_DATASOURCE_PASSWORD"]

    unset = "AWS_REGION unset: set it (one region for every AWS service)"
    if b.region(("AWS_REGION", "AWS_DEFAULT_REGION"), needed=needs_region, unset=unset) is not None:
        if needs_region and not region_var:
            b.warnings.append("AWS IAM is on but AWS_REGION is not set: [aws] region is commented out")
