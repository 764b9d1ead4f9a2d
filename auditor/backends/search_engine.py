"""Which search engine answers, and the media types the elasticsearch client speaks to it.

The `elasticsearch` 9 client asks every request for 9.x behaviour
(`application/vnd.elasticsearch+json; compatible-with=9`, `+x-ndjson` for a bulk). Elasticsearch
8.x refuses that with 400 `media_type_header_exception` ("Accept version must be either version 8
or 7"). An Elasticsearch older than the client is sent plain `application/json` and
`application/x-ndjson` instead: its own current API, which 7.17, 8.x and 9.x all accept, and which
the requests the auditor makes (point in time + search_after, mget, bulk, aliases) fit on each.
A server as new as the client, or newer, keeps the client's compatibility request. When the
version cannot be read (a role without the cluster's `monitor` privilege is refused `GET /`) the
plain media types are the ones every supported version accepts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auditor.errors import AccessRefused, BackendUnavailable, ConfigError
from auditor.redact import redact_url

if TYPE_CHECKING:
    from auditor.backends.search_auth import SearchAuth

# `application/vnd.elasticsearch+json; compatible-with=9` -> `application/json`
_COMPAT = re.compile(r"application/vnd\.elasticsearch\+([\w.-]+)\s*;\s*compatible-with=\d+")


@dataclass(frozen=True)
class Engine:
    """What `GET /` says about the cluster: its kind and (when given) its version."""

    kind: str  # opensearch | elasticsearch
    number: str | None = None  # 8.19.0

    @property
    def major(self) -> int | None:
        head = (self.number or "").split(".", 1)[0]
        return int(head) if head.isdigit() else None


def engine_of(info: Mapping[str, Any]) -> Engine:
    """The engine behind a `GET /` answer: OpenSearch names itself in `version.distribution`
    (and in its tagline); Elasticsearch has no distribution field."""
    version = info.get("version") or {}
    number = version.get("number")
    number = str(number) if number is not None else None
    tagline = str(info.get("tagline") or "")
    if version.get("distribution") == "opensearch" or "opensearch" in tagline.lower():
        return Engine("opensearch", number)
    return Engine("elasticsearch", number)


def client_major() -> int:
    """The major version of the installed `elasticsearch` client."""
    from elasticsearch import __versionstr__

    return int(__versionstr__.split(".", 1)[0])


def plain_media_types(headers: Any) -> Any:
    """A copy of `headers` whose Accept and Content-Type ask for no compatibility mode."""
    out = headers.copy()
    for name in ("accept", "content-type"):
        value = out.get(name)
        if value and "compatible-with" in value:
            out[name] = _COMPAT.sub(r"application/\1", value)
    return out


def transport_class(major: int | None) -> Any:
    """The transport the elasticsearch client should use for a server of this major version:
    None (the client's own) for one as new as the client or newer, otherwise one that sends plain
    media types (an unknown version included)."""
    if major is not None and major >= client_major():
        return None
    from elastic_transport import Transport

    class PlainMediaTypes(Transport):  # type: ignore[misc]
        def perform_request(self, method: str, target: str, **kwargs: Any) -> Any:
            if isinstance(kwargs.get("headers"), Mapping):
                kwargs["headers"] = plain_media_types(kwargs["headers"])
            return super().perform_request(method, target, **kwargs)

    return PlainMediaTypes


def probe(url: str, auth: SearchAuth, verify: bool, ca: str | None) -> Engine:
    """The engine by `GET /`: its kind and version (Elasticsearch without a version when
    the role may not read `GET /`)."""
    import json
    import ssl
    import urllib.error
    import urllib.request

    from auditor.backends.search_auth import reason_of

    target = url.rstrip("/") + "/"
    request = urllib.request.Request(target, headers=auth.headers("GET", target))
    context = None
    if url.startswith("https"):
        context = ssl.create_default_context(cafile=ca)
        if not verify:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        if auth.client_cert:  # a PKI realm authenticates by it: `GET /` as much as the clients' requests
            try:
                context.load_cert_chain(auth.client_cert, auth.client_key)
            except OSError as exc:  # ssl.SSLError too
                raise ConfigError(
                    f"search client certificate {auth.client_cert} cannot be loaded: {exc}",
                    hint="search.client_cert and search.client_key: PEM files, the key unencrypted",
                ) from None
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            info = json.load(response)
    except urllib.error.HTTPError as exc:
        # `GET /` needs the cluster's `monitor` privilege (`cluster:monitor/main`), which a
        # least-privilege role lacks. Elasticsearch's refusal says so in its own words (and,
        # unlike its other answers, carries no X-elastic-product header); any other refusal is
        # not guessed at.
        body = exc.read(65536).decode("utf-8", "replace")
        if exc.code == 401 or (exc.code == 403 and auth.aws):
            raise auth.refused(redact_url(url), "`GET /`", exc.code, reason_of(body)) from None
        if exc.code == 403:
            # "action [cluster:monitor/main] is unauthorized for user [..]", "... for API key id
            # [..] of user [..]", "... for service account [..]"
            if "is unauthorized for " in body:
                return Engine("elasticsearch")
            raise ConfigError(
                f"search cluster {redact_url(url)} refused `GET /` (403): cannot tell OpenSearch "
                "from Elasticsearch",
                hint="set search.kind (AUDITOR_SEARCH_KIND) to opensearch or elasticsearch",
            ) from None
        raise BackendUnavailable(f"search cluster {redact_url(url)} unreachable: {exc}") from None
    except Exception as exc:
        refused = _certificate_refused(url, auth, exc)
        if refused is not None:
            raise refused from None
        raise BackendUnavailable(f"search cluster {redact_url(url)} unreachable: {exc}") from None
    return engine_of(info)


# TLS alerts a server sends when it does not accept the client's certificate
_CERTIFICATE_ALERTS = ("CERTIFICATE", "UNKNOWN_CA", "ACCESS_DENIED")


def _certificate_refused(url: str, auth: SearchAuth, exc: Exception) -> AccessRefused | None:
    """The cluster's TLS alert against the client certificate (untrusted CA, expired...) as a
    refusal naming the certificate, not as an unreachable cluster."""
    import ssl

    wrapped = getattr(exc, "reason", None)  # urllib wraps the ssl error in a URLError
    error = wrapped if isinstance(wrapped, ssl.SSLError) else exc
    if not isinstance(error, ssl.SSLError):
        return None
    return certificate_refusal(redact_url(url), auth, f"{getattr(error, 'reason', '')} {error}")


def certificate_refusal(where: str, auth: SearchAuth, said: str) -> AccessRefused | None:
    """A TLS alert in `said` (an error's text) against the client certificate, as the refusal
    naming it; None when there is no client certificate or no such alert."""
    if not (auth.client_cert and "_ALERT_" in said and any(word in said for word in _CERTIFICATE_ALERTS)):
        return None
    alert = next((w for w in said.replace(":", " ").replace("]", " ").split() if "_ALERT_" in w), said)
    return AccessRefused(
        f"search cluster {where}: the TLS handshake refused {auth.identity()}: {alert}",
        hint="check the client certificate is signed by a CA the cluster trusts for clients "
        "(Elasticsearch: xpack.security.http.ssl.certificate_authorities) and has not expired",
    )
