"""SASL/OAUTHBEARER tokens for Kafka clients: Amazon MSK's IAM token (a SigV4-presigned URL made
by AWS's own aws-msk-iam-sasl-signer from the standard credential chain), or a token a sidecar
keeps fresh in a file (an OIDC workload token, for example).

librdkafka calls the provider whenever it needs a token (at connect, then at 80% of the token's
lifetime): `oauth_cb(config) -> (token, expiry as absolute epoch seconds, principal)`. MSK's
signer gives the expiry in milliseconds; returning those (or a relative time) makes
confluent-kafka 2.13+ wait for a valid token, so it is converted here. Every client the auditor
opens (the consumer-group reads, the change-log reader, the watch, replay's producer) gets it
from `auditor.backends.connect.kafka_config`.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from auditor.errors import AccessRefused, ConfigError

log = logging.getLogger(__name__)

MSK_IAM = "AWS_MSK_IAM"  # what DataHub's Java services are given; librdkafka speaks OAUTHBEARER
FILE_TOKEN_LIFETIME = 300.0  # a token without `exp` is read again this often

TokenProvider = Callable[[str], tuple[str, float, str]]


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT/JWS (not verified: the broker does that)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return {}
    return claims if isinstance(claims, dict) else {}


def file_token(path: str) -> TokenProvider:
    """A token read from `path` at every refresh; its expiry and principal from its claims."""

    def provide(_config: str) -> tuple[str, float, str]:
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise AccessRefused(
                f"Kafka: cannot read the OAUTHBEARER token file {path}: {exc.strerror}",
                hint="check kafka.oauthbearer_token_file and that the sidecar writing it runs",
            ) from None
        claims = jwt_claims(token)
        expiry = float(claims.get("exp") or time.time() + FILE_TOKEN_LIFETIME)
        return token, expiry, str(claims.get("sub") or "")

    return provide


def msk_iam_token(region: str, role_arn: str | None = None) -> TokenProvider:
    """MSK's IAM token from the standard AWS credential chain (or by assuming `role_arn`)."""
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    except ImportError:
        raise ConfigError(
            "Kafka AWS_MSK_IAM needs aws-msk-iam-sasl-signer-python",
            hint="pip install 'datahub-auditor[aws]'",
        ) from None

    def provide(_config: str) -> tuple[str, float, str]:
        if role_arn:
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token_from_role_arn(region, role_arn)
        else:
            token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
        return token, expiry_ms / 1000.0, ""

    return provide


def checked(provider: TokenProvider, what: str, hint: str) -> TokenProvider:
    """The provider, called once now: a missing credential is one clear error before any client
    starts (librdkafka would only retry it in the background), never the token in a message."""
    try:
        _token, expiry, _principal = provider("")
    except AccessRefused:
        raise
    except Exception as exc:
        raise AccessRefused(f"Kafka: {what}: {type(exc).__name__}: {str(exc)[:200]}", hint=hint) from None
    if expiry <= time.time():  # librdkafka would wait 10 s for a valid one, then fail obscurely
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expiry))
        raise AccessRefused(f"Kafka: {what}: the token expired at {when}", hint=hint)

    def logged(config: str) -> tuple[str, float, str]:
        try:
            return provider(config)
        except Exception:
            log.warning("Kafka: %s failed at a refresh", what, exc_info=True)
            raise

    return logged


def oauth_settings(settings: Any) -> dict[str, Any]:
    """librdkafka settings for OAUTHBEARER, from ours ({} when not asked for)."""
    mechanism = (settings.kafka_sasl_mechanism or "").upper()
    if mechanism == MSK_IAM:
        if not settings.aws_region:
            raise ConfigError(
                "Kafka AWS_MSK_IAM needs the cluster's AWS region",
                hint="set aws_region (AUDITOR_AWS_REGION, AWS_REGION or AWS_DEFAULT_REGION)",
            )
        provider = checked(
            msk_iam_token(settings.aws_region, settings.kafka_aws_role_arn),
            "making the MSK IAM token",
            "the token is signed with the standard AWS credential chain: set AWS credentials, "
            "AWS_PROFILE, a web identity (IRSA) or an instance role; its identity needs "
            "kafka-cluster:Connect, DescribeTopic, ReadData and DescribeGroup",
        )
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "oauth_cb": provider}
    if settings.kafka_oauthbearer_token_file:
        provider = checked(
            file_token(settings.kafka_oauthbearer_token_file),
            "reading the OAUTHBEARER token",
            "check kafka.oauthbearer_token_file",
        )
        return {"sasl.mechanism": "OAUTHBEARER", "oauth_cb": provider}
    return {}
