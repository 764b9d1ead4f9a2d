"""How the auditor proves who it is to a search cluster: basic auth, an Elasticsearch API key, a
bearer token, a client certificate, or AWS Signature Version 4 (Amazon OpenSearch Service `es`,
OpenSearch Serverless `aoss`) with the standard AWS credential chain (environment, profile, web
identity / IRSA, container and instance roles).

One `SearchAuth` serves every request the auditor sends: the engine probe (`GET /`) and every
client call (point in time, scroll, mget, bulk writes, alias swaps) go through `headers()` or the
client arguments built here. Secrets live in it and never leave it: `describe()` and
`identity()` say which method and whose key without the secret.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from auditor.backends.aws_chain import resolve
from auditor.errors import AccessRefused, ConfigError

log = logging.getLogger(__name__)

AWS_SERVICES = ("es", "aoss")
AWS_EXTRA = "pip install 'datahub-auditor[aws]' (boto3)"


def split_userinfo(
    url: str, username: str | None, password: str | None
) -> tuple[str, str | None, str | None]:
    """`https://user:pass@host:9200` is basic auth: the URL without it, and the credentials
    (percent-decoded; a username given apart wins)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, username, password
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, secret = userinfo.partition(":")
    clean = urlunsplit(parts._replace(netloc=host))
    if username:
        return clean, username, password
    return clean, unquote(user), unquote(secret)


def cloud_url(cloud_id: str) -> str:
    """An Elastic Cloud id (`name:base64(host$es-uuid$kibana-uuid)`) -> the cluster's HTTPS URL."""
    from elastic_transport.client_utils import parse_cloud_id

    try:
        parsed = parse_cloud_id(cloud_id)
    except ValueError:
        raise ConfigError(
            "search.cloud_id is not an Elastic Cloud id",
            hint="copy it from the deployment's page in the Elastic Cloud console (name:base64...)",
        ) from None
    if parsed.es_address is None:
        raise ConfigError("search.cloud_id names no Elasticsearch cluster")
    host, port = parsed.es_address
    return f"https://{host}:{port}"


def api_key_header(api_key: str) -> str:
    """`Authorization` for an API key: the encoded key as Elastic shows it, or `id:key`."""
    key = api_key.strip()
    if ":" in key:
        key = base64.b64encode(key.encode()).decode()
    return f"ApiKey {key}"


@dataclass
class AwsSigner:
    """SigV4 request signing with botocore, credentials from the standard chain (refreshed ones
    frozen per request, as opensearch-py's own signer does)."""

    region: str
    service: Literal["es", "aoss"] = "es"
    session: Any = None
    _credentials: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.service not in AWS_SERVICES:
            raise ConfigError(
                f"search.aws_service must be one of {', '.join(AWS_SERVICES)}, not {self.service!r}"
            )
        try:
            import boto3
        except ImportError:
            raise ConfigError("AWS request signing needs boto3", hint=AWS_EXTRA) from None
        self.session = self.session or boto3.Session(region_name=self.region)
        self._credentials, _ = resolve(self.session, "search cluster request signing")

    def __reduce__(self) -> Any:
        # to a reader process: the region and service, the credentials resolved there again by
        # the same chain (a boto session does not cross a pipe)
        return (AwsSigner, (self.region, self.service))

    def frozen(self) -> Any:
        getter = getattr(self._credentials, "get_frozen_credentials", None)
        return getter() if callable(getter) else self._credentials

    def sign(self, method: str, url: str, body: Any, headers: dict[str, str] | None = None) -> dict[str, str]:
        from opensearchpy.helpers.signer import AWSV4Signer

        return AWSV4Signer(self.frozen(), self.region, self.service).sign(method, url, body, headers)

    def client_auth(self) -> Any:
        from opensearchpy import Urllib3AWSV4SignerAuth

        return Urllib3AWSV4SignerAuth(self._credentials, self.region, self.service)

    def identity(self) -> str:
        creds = self.frozen()
        key = creds.access_key or ""
        source = getattr(self._credentials, "method", None) or "the AWS credential chain"
        kind = "temporary" if creds.token else "long-term"
        where = f"region {self.region}, service {self.service}"
        return f"AWS access key ...{key[-4:]} ({kind}, from {source}), {where}"


@dataclass
class SearchAuth:
    """One way of proving who the auditor is; at most one of basic, api key, bearer and AWS."""

    basic: tuple[str, str] | None = None
    api_key: str | None = field(default=None, repr=False)
    bearer: str | None = field(default=None, repr=False)
    aws: AwsSigner | None = None
    client_cert: str | None = None
    client_key: str | None = None

    def __post_init__(self) -> None:
        ways = (("basic auth", self.basic), ("an API key", self.api_key), ("a bearer token", self.bearer),
                ("AWS signing", self.aws))  # fmt: skip
        chosen = [name for name, value in ways if value]
        if len(chosen) > 1:
            raise ConfigError(
                f"search cluster: {' and '.join(chosen)} are both set; choose one",
                hint="unset the search username/password, api_key, bearer_token or aws_iam you do not use",
            )

    @property
    def method(self) -> str:
        if self.aws:
            return f"aws-sigv4 ({self.aws.service})"
        if self.api_key:
            return "api-key"
        if self.bearer:
            return "bearer"
        if self.basic:
            return "basic"
        return "client-certificate" if self.client_cert else "none"

    def identity(self) -> str:
        """Who the cluster is told the auditor is, safe to print."""
        if self.aws:
            return self.aws.identity()
        if self.api_key:
            key = self.api_key.strip()
            key_id = key.split(":", 1)[0] if ":" in key else _api_key_id(key)
            return f"API key {key_id}" if key_id else "an API key"
        if self.bearer:
            return "a bearer token"
        if self.basic:
            return f"user {self.basic[0]}"
        if self.client_cert:
            return f"client certificate {self.client_cert}"
        return "no credentials (anonymous)"

    def headers(self, method: str, url: str, body: bytes | None = None) -> dict[str, str]:
        """The headers that authenticate one request sent outside the clients (the probe)."""
        if self.aws:
            return self.aws.sign(method, url, body)
        if self.api_key:
            return {"Authorization": api_key_header(self.api_key)}
        if self.bearer:
            return {"Authorization": f"Bearer {self.bearer}"}
        if self.basic:
            token = base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            return {"Authorization": f"Basic {token}"}
        return {}

    def opensearch_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.aws:
            out["http_auth"] = self.aws.client_auth()
        elif self.basic:
            out["http_auth"] = self.basic
        elif self.api_key or self.bearer:
            out["headers"] = self.headers("GET", "/")
        if self.client_cert:
            out["client_cert"] = self.client_cert
            if self.client_key:
                out["client_key"] = self.client_key
        return out

    def elasticsearch_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.basic:
            out["basic_auth"] = self.basic
        elif self.api_key:
            out["api_key"] = api_key_header(self.api_key).split(" ", 1)[1]
        elif self.bearer:
            out["bearer_auth"] = self.bearer
        if self.client_cert:
            out["client_cert"] = self.client_cert
            if self.client_key:
                out["client_key"] = self.client_key
        return out

    def refused(self, where: str, what: str, status: Any, reason: str) -> AccessRefused:
        """A 401/403 told in words one can act on: the backend, the identity used, what to check."""
        text = reason[:400]
        lowered = text.lower()
        if self.aws:
            if "expired" in lowered:
                hint = "the AWS credentials expired: renew the session (aws sso login, IRSA's token) or role"
            elif "signature" in lowered:
                hint = (
                    "the signature was refused: check the secret key, and that aws_region "
                    f"({self.aws.region}) and search.aws_service ({self.aws.service}) are the domain's"
                )
            elif "not authorized to perform" in lowered:
                action = _action_of(text)
                hint = (
                    f"grant {action or 'es:ESHttp*'} on the domain's indices to this identity "
                    "(domain access policy or IAM)"
                )
            elif "security token" in lowered or "credential" in lowered:
                hint = "check the AWS credentials and aws_region (AWS_REGION): the key is not valid there"
            else:
                hint = "check the domain's access policy and fine-grained access control role mapping"
        elif self.api_key:
            hint = (
                "check the API key is valid, not expired, and its role descriptors grant the refused "
                "action on the indices (a scan reads them; a repair writes and deletes too)"
            )
        elif self.bearer:
            hint = "check the bearer token is valid and not expired"
        elif self.basic:
            hint = "check the search username and password, and the user's roles on the indices"
        elif self.client_cert:
            hint = (
                "check the client certificate is one the cluster trusts and its subject is mapped "
                "to a role that reads the indices (Elasticsearch: the PKI realm's role mapping)"
            )
        else:
            hint = "the cluster wants credentials: search username/password, api_key, bearer_token or aws_iam"
        return AccessRefused(
            f"search cluster {where}: {what} refused ({status}) for {self.identity()}: {text}", hint=hint
        )


def _api_key_id(encoded: str) -> str | None:
    try:
        decoded = base64.b64decode(encoded, validate=True).decode()
    except Exception:
        return None
    return decoded.split(":", 1)[0] if ":" in decoded else None


def _action_of(text: str) -> str | None:
    """`... is not authorized to perform: es:ESHttpPost ...` -> `es:ESHttpPost`."""
    marker = "not authorized to perform:"
    if marker not in text:
        return None
    rest = text.split(marker, 1)[1].strip().split()
    return rest[0].rstrip(".,") if rest else None


def from_settings(settings: Any) -> SearchAuth:
    """The SearchAuth the settings ask for (the URL's user info is basic auth)."""
    username = settings.search_username
    password = settings.search_password.get_secret_value() if settings.search_password else None
    _, username, password = split_userinfo(settings.search_url or "", username, password)
    aws = None
    if settings.search_aws_iam:
        if not settings.aws_region:
            raise ConfigError(
                "search.aws_iam is on but no AWS region is set",
                hint="set aws_region (AUDITOR_AWS_REGION, AWS_REGION or AWS_DEFAULT_REGION)",
            )
        aws = AwsSigner(settings.aws_region, settings.search_aws_service)
    return SearchAuth(
        basic=(username, password or "") if username else None,
        api_key=settings.search_api_key.get_secret_value() if settings.search_api_key else None,
        bearer=settings.search_bearer_token.get_secret_value() if settings.search_bearer_token else None,
        aws=aws,
        client_cert=settings.search_client_cert,
        client_key=settings.search_client_key,
    )


def reason_of(refusal: Any) -> str:
    """The words of a refusal (an exception or a body): AWS's `{"message": ...}`,
    Elasticsearch's `error.reason`, or the text."""
    import json

    body = refusal
    if isinstance(refusal, Exception):
        body = getattr(refusal, "info", None) or getattr(refusal, "body", None) or str(refusal)
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            pass
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("reason"):
            return str(error["reason"])
        for key in ("message", "Message"):
            if body.get(key):
                return str(body[key])
    return str(body).strip()[:400]
