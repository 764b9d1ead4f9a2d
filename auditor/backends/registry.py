"""Where the change log's Avro schemas come from: a Confluent-compatible registry (DataHub's
`KAFKA` and `INTERNAL` types; basic auth and TLS as Confluent Cloud asks), or the AWS Glue
schema registry (`AWS_GLUE`), whose messages carry a schema version UUID instead of an id.

Glue's framing (awslabs/aws-glue-schema-registry, AWSSchemaRegistryConstants): byte 0 = 3, byte 1
= compression (0 none, 5 zlib), 16 bytes of the schema version's UUID, then Avro binary. A schema
version is fetched once from Glue (`GetSchemaVersion`, SigV4 with the standard AWS credential
chain; the endpoint may be overridden with boto3's own `AWS_ENDPOINT_URL_GLUE`). When Glue
cannot be reached, MCLs are decoded with the MetadataChangeLog schema of the acryl-datahub
wheel, and the scan says so: the values may be read with a schema other than the writer's.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any

from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.redact import redact_url

log = logging.getLogger(__name__)

GLUE_MAGIC = 3
GLUE_HEADER = 18  # magic, compression, 16-byte UUID
GLUE_ZLIB = 5
DEFAULT_GLUE_REGION = "us-east-1"  # DataHub's default (AWS_GLUE_SCHEMA_REGISTRY_REGION)


@dataclass(frozen=True)
class Registry:
    """How to reach the schemas (secrets kept out of repr)."""

    url: str | None = None
    kind: str = "kafka"  # kafka | internal | aws_glue
    user_info: str | None = field(default=None, repr=False)  # key:secret (basic auth)
    ca: str | None = None
    glue_name: str | None = None
    glue_region: str | None = None

    @property
    def glue(self) -> bool:
        return self.kind == "aws_glue"

    def describe(self) -> str:
        if self.glue:
            name, region = self.glue_name or "(default)", self.glue_region or DEFAULT_GLUE_REGION
            return f"AWS Glue registry {name} in {region}"
        return redact_url(self.url or "")

    def authorization(self) -> str | None:
        """`Authorization` for the REST API: user_info, else the URL's user info."""
        from urllib.parse import unquote, urlsplit

        pair = self.user_info
        if pair is None and self.url:
            parts = urlsplit(self.url)
            if parts.username is not None:
                pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        return "Basic " + base64.b64encode(pair.encode()).decode() if pair else None

    def base(self) -> str:
        """The REST API's base URL without user info."""
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(self.url or "")
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit(parts._replace(netloc=netloc)).rstrip("/")

    def get_json(self, path: str, timeout: float) -> Any:
        request = urllib.request.Request(f"{self.base()}{path}")
        auth = self.authorization()
        if auth:
            request.add_header("Authorization", auth)
        context = ssl.create_default_context(cafile=self.ca) if self.base().startswith("https") else None
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:  # noqa: S310
            return json.loads(response.read())


def as_registry(value: Registry | str | None) -> Registry | None:
    """A registry from a URL (a Confluent-compatible one) or as given."""
    if value is None or isinstance(value, Registry):
        return value
    return Registry(url=value) if value else None


def registry_of(settings: Any) -> Registry | None:
    """The registry the settings name (None: none configured, MCLs matched by time)."""
    kind = settings.schema_registry_type
    if kind == "aws_glue":
        return Registry(
            kind=kind,
            glue_name=settings.glue_registry_name,
            glue_region=settings.glue_region or settings.aws_region or DEFAULT_GLUE_REGION,
        )
    if not settings.schema_registry_url:
        return None
    return Registry(
        url=settings.schema_registry_url,
        kind=kind,
        user_info=settings.schema_registry_user_info.get_secret_value()
        if settings.schema_registry_user_info
        else None,
        ca=settings.schema_registry_ca,
    )


def wheel_mcl_schema() -> str:
    """The MetadataChangeLog schema the acryl-datahub wheel ships."""
    from importlib import resources

    return resources.files("datahub.metadata.schemas").joinpath("MetadataChangeLog.avsc").read_text("utf-8")


class GlueSchemas:
    """Schema versions from the Glue registry (boto3, fetched once each)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            try:
                import boto3
            except ImportError:
                raise ConfigError(
                    "the AWS Glue registry needs boto3", hint="pip install 'datahub-auditor[aws]'"
                ) from None
            self._client = boto3.client("glue", region_name=self.registry.glue_region or DEFAULT_GLUE_REGION)
        return self._client

    def identity(self) -> str:
        """Whose credentials sign the requests, safe to print."""
        try:
            credentials = self.client()._request_signer._credentials.get_frozen_credentials()
        except Exception:
            return "the AWS credential chain"
        return f"AWS access key ...{(credentials.access_key or '')[-4:]}"

    def definition(self, version: uuid.UUID) -> str:
        answer = self._call("GetSchemaVersion", SchemaVersionId=str(version))
        return str(answer["SchemaDefinition"])

    def latest(self, schema_name: str) -> tuple[uuid.UUID, str]:
        """The newest version of `schema_name` (DataHub names a topic's schema after the topic)."""
        schema_id = {"SchemaName": schema_name}
        if self.registry.glue_name:
            schema_id["RegistryName"] = self.registry.glue_name
        answer = self._call(
            "GetSchemaVersion", SchemaId=schema_id, SchemaVersionNumber={"LatestVersion": True}
        )
        return uuid.UUID(str(answer["SchemaVersionId"])), str(answer["SchemaDefinition"])

    def _call(self, operation: str, **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return self.client().get_schema_version(**kwargs)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code, message = error.get("Code", "?"), error.get("Message", "")
            where = self.registry.describe()
            if code in ("AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException",
                        "InvalidSignatureException", "SignatureDoesNotMatch"):  # fmt: skip
                raise AccessRefused(
                    f"{where}: {operation} refused ({code}) for {self.identity()}: {message}",
                    hint="the identity needs glue:GetSchemaVersion (and glue:GetSchema) on the registry; "
                    "check the AWS credentials and glue_region",
                ) from None
            raise BackendUnavailable(f"{where}: {operation} failed ({code}): {message}") from None
        except BotoCoreError as exc:
            raise BackendUnavailable(f"{self.registry.describe()}: {operation} failed: {exc}") from None


def glue_frame(version: uuid.UUID, compression: int = 0) -> bytes:
    return bytes([GLUE_MAGIC, compression]) + version.bytes
