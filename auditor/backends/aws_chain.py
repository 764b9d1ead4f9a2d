"""The standard AWS credential chain (environment, profile, web identity / IRSA, container and
instance roles) resolved once, up front, for every backend that signs with it: a chain that
fails (STS refusing IRSA's role, a profile that does not exist, an expired SSO session) is one
`AccessRefused` naming the source it tried and what to check, not a botocore traceback at the
first request."""

from __future__ import annotations

import os
from typing import Any

from auditor.errors import AccessRefused

NO_CREDENTIALS_HINT = (
    "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a web identity (IRSA: AWS_ROLE_ARN + "
    "AWS_WEB_IDENTITY_TOKEN_FILE) or run with an instance role"
)


def chain_source(environ: dict[str, str] | None = None) -> str:
    """Which source of the chain the environment points at (no secret in it)."""
    env = os.environ if environ is None else environ
    if env.get("AWS_ACCESS_KEY_ID"):
        return "the environment's access key"
    if env.get("AWS_ROLE_ARN") and env.get("AWS_WEB_IDENTITY_TOKEN_FILE"):
        return f"web identity (IRSA) for role {env['AWS_ROLE_ARN']}"
    if env.get("AWS_PROFILE"):
        return f"profile {env['AWS_PROFILE']}"
    return "the default chain"


def _hint(source: str) -> str:
    if source.startswith("web identity"):
        return (
            "the role's trust policy must allow sts:AssumeRoleWithWebIdentity for this cluster's OIDC "
            "provider and service account (IRSA); check AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE"
        )
    if source.startswith("profile"):
        return (
            "check the profile in ~/.aws/config and ~/.aws/credentials "
            "(AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE)"
        )
    return NO_CREDENTIALS_HINT


def resolve(session: Any, what: str) -> tuple[Any, Any]:
    """(credentials, frozen credentials) from the session's chain, resolved now; AccessRefused
    when there are none or the chain fails."""
    from botocore.exceptions import BotoCoreError, ClientError

    source = chain_source()
    try:
        credentials = session.get_credentials()
        frozen = credentials.get_frozen_credentials() if credentials is not None else None
    except ClientError as exc:
        error = exc.response.get("Error", {})
        said = f"{error.get('Code', 'error')}: {str(error.get('Message', ''))[:200]}"
        raise AccessRefused(
            f"{what}: AWS credentials from {source} were refused ({said})", hint=_hint(source)
        ) from None
    except BotoCoreError as exc:
        raise AccessRefused(
            f"{what}: AWS credentials from {source} failed: {str(exc)[:300]}", hint=_hint(source)
        ) from None
    if credentials is None:
        raise AccessRefused(f"{what}: no AWS credentials found", hint=NO_CREDENTIALS_HINT)
    return credentials, frozen
