"""The reader processes' own search client: the few requests a reader makes, over urllib3 + orjson.

A reader process (search_readers.py) used to open opensearch-py or the elasticsearch client, whose
imports (requests, elastic_transport and every namespace of the client) took a child's start from
0.13-0.16 s of CPU to 0.20-0.25 s (bench/reader_start_bench.py). What a reader's jobs send is a
handful of requests: a search (with a point in time, or opening a scroll), the next page of a
scroll, opening and closing a point in time (OpenSearch's `_search/point_in_time`,
Elasticsearch's `_pit`) and clearing a scroll. `LeanClient` speaks exactly those, with the same
methods and call styles as the client it stands for, and answers the same parsed bodies:

- the same request for each: method, path, query, JSON body, the kind's media types
  (Elasticsearch's compatibility request for a server as new as the client, plain JSON below it:
  search_engine.transport_class's rule), the same authentication (basic auth encoded as each
  client encodes it, an API key, a bearer token) and TLS (verified against the CA file, or
  certifi's bundle as the clients default to; a client certificate, sent when verifying as they
  send it; the kind's timeout: opensearch-py's connect and read, Elasticsearch's total);
- the same errors: each is an exception named as the client names it (`NotFoundError`,
  `AuthenticationException`, `ConnectionError`, `ConnectionTimeout`, `SSLError` / `TlsError`...),
  with the attributes (`status_code`, `info`, `body`) and the text the client gives it, so that
  search_retry's rules, the refusal messages and the not-found paths take it exactly as they take
  the client's: retried on 429/502/503/504, a timeout or a dropped connection, the same words.

The rule: a reader process reads through `LeanClient` unless the requests are signed (AWS SigV4,
`SearchAuth.aws`), which only opensearch-py's signer does; then it opens the full client, as the
scan's own process always does. Decided in the reader process, from the client's description it
is given (`SearchIndex(lean=True)`). A request this client does not speak (a job that asks for
more) is sent by the full client, opened then. The credentials stay in the headers it sends: no
message and no error of it carries them.
"""

from __future__ import annotations

import os
import re
import ssl
from importlib.util import find_spec
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import orjson
import urllib3
from urllib3.exceptions import NewConnectionError, ReadTimeoutError, TimeoutError

from auditor.backends.search_auth import SearchAuth
from auditor.backends.search_engine import Engine

# the full clients' packages (and what they bring): what a reader process should never import
CLIENT_PACKAGES = ("opensearchpy", "elasticsearch", "elastic_transport", "requests", "aiohttp")
_HTTP_NAMES = {  # the exception each client raises for a status: (opensearch-py's, elasticsearch's)
    400: ("RequestError", "BadRequestError"),
    401: ("AuthenticationException", "AuthenticationException"),
    403: ("AuthorizationException", "AuthorizationException"),
    404: ("NotFoundError", "NotFoundError"),
    409: ("ConflictError", "ConflictError"),
}
_NOT_ELASTICSEARCH = (
    "The client noticed that the server is not Elasticsearch and we do not support this unknown product"
)


class HttpError(Exception):
    """An error answer, as the client for this kind raises it (`status_code`, `error`, `info`, and
    Elasticsearch's `body`; its text the client's)."""

    def __init__(self, status: int, error: Any, info: Any, elastic: bool) -> None:
        super().__init__(status, error, info)
        self.status_code, self.error, self.info, self._elastic = status, error, info, elastic
        self.body = info if elastic else None  # opensearch-py's error has no body

    def __str__(self) -> str:
        cause = ""
        try:
            if isinstance(self.info, dict) and "error" in self.info:
                error = self.info["error"]
                if isinstance(error, dict):
                    root, extra = error["root_cause"][0], error.get("caused_by", {}) if self._elastic else {}
                    parts = [repr(root["reason"]), root.get("resource.id"), root.get("resource.type")]
                    cause = ", ".join(filter(None, [*parts, extra.get("reason")]))
                else:
                    cause = repr(error)
        except LookupError:
            pass
        said = ", ".join(filter(None, [str(self.status_code), repr(self.error), cause]))
        return f"{type(self).__name__}({said})"


class ConnectionError(Exception):  # noqa: A001 (the clients' own name: search_retry retries by it)
    """No answer (refused, dropped, TLS): opensearch-py's `ConnectionError` and `SSLError`,
    elastic_transport's `ConnectionError` and `TlsError`, with their texts."""

    def __init__(self, error: str, cause: Exception, elastic: bool, text: str = "Connection error") -> None:
        super().__init__(error)
        # opensearch-py keeps the cause as `info`; elastic_transport only as the `__cause__`
        self.error, self.info, self._elastic, self._text = error, None if elastic else cause, elastic, text
        # opensearch-py's `status_code` is "N/A" ("TIMEOUT" for a timeout); elastic_transport's
        # errors have none (and lose their causes' texts: the transport empties `errors`)
        self.status_code = None if elastic else "TIMEOUT" if isinstance(self, ConnectionTimeout) else "N/A"
        self.errors: tuple[Exception, ...] = ()

    def __str__(self) -> str:
        if self._elastic:
            return self._text
        return f"ConnectionError({self.error}) caused by: {type(self.info).__name__}({self.info})"


class SSLError(ConnectionError):
    """opensearch-py's TLS failure."""


class TlsError(ConnectionError):
    """elastic_transport's TLS failure."""


class ConnectionTimeout(ConnectionError):
    """A timeout (a ConnectionError in opensearch-py; its own kind in elastic_transport, whose
    retry rule is the same here)."""

    def __str__(self) -> str:
        if self._elastic:
            return "Connection timed out"
        return f"ConnectionTimeout caused by - {type(self.info).__name__}({self.info})"


class SerializationError(Exception):
    """elastic_transport's: a body that is not what its media type says."""


class UnsupportedProductError(HttpError):
    """The elasticsearch client's refusal of a server that does not say it is Elasticsearch."""

    def __str__(self) -> str:
        return str(self.error)


_ERRORS = {  # the rest of the clients' error answers, by name
    name: type(name, (HttpError,), {"__module__": __name__, "__doc__": f"The client's {name}."})
    for pair in [*_HTTP_NAMES.values(), ("TransportError", "ApiError")]
    for name in pair
}


def lean_client(kind: str, url: str, auth: SearchAuth, *rest: Any) -> LeanClient | None:
    """The lean client for search_client.open_client's arguments, or None where only the full
    client will do: signed requests (AWS SigV4), or a kind it does not know."""
    if auth.aws or kind not in ("opensearch", "elasticsearch"):
        return None
    return LeanClient(kind, url, auth, *rest)


def client_major() -> int | None:
    """The installed elasticsearch client's major version, read from its `_version.py` without
    importing it (search_engine.client_major imports the whole client); None when not found."""
    spec = find_spec("elasticsearch")
    if spec is None or not spec.origin:
        return None
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "_version.py")) as text:
            found = re.search(r"__versionstr__\s*=\s*[\"'](\d+)\.", text.read())
    except OSError:
        return None
    return int(found.group(1)) if found else None


def _elastic_media(engine: Engine | None) -> str:
    """What the elasticsearch client asks of this server (search_engine.py): its compatibility
    mode for a server as new as the client or newer, plain JSON otherwise."""
    major, mine = (engine.major if engine else None), client_major()
    if mine is None:  # not readable: the client's own answer
        from auditor.backends.search_engine import client_major as imported

        mine = imported()
    if major is not None and major >= mine:
        return f"application/vnd.elasticsearch+json; compatible-with={mine}"
    return "application/json"


class LeanClient:
    """The requests of a reader process's jobs, as opensearch-py (`kind="opensearch"`) or the
    elasticsearch client sends them (see the module's docstring). Opened with search_client.
    open_client's arguments: kind, url, auth, verify_certs, ca_certs, timeout, engine."""

    def __init__(self, *opened: Any) -> None:
        kind, url, auth, verify_certs, ca_certs, timeout, engine = self._args = opened
        self._full: Any = None
        self.elastic = kind == "elasticsearch"
        parts = urlsplit(url)
        https = parts.scheme == "https"
        self._prefix = "/" + parts.path.strip("/") if parts.path.strip("/") else ""
        media = _elastic_media(engine) if self.elastic else "application/json"
        self._headers = {"connection": "keep-alive", "content-type": media, "user-agent": "datahub-auditor"}
        if self.elastic:
            self._headers["accept"] = media
        if auth.basic and not self.elastic:  # urllib3's header (latin-1), as opensearch-py's
            self._headers.update(urllib3.make_headers(basic_auth=":".join(auth.basic)))
        else:  # the elasticsearch client's (UTF-8), an API key's or a bearer token's
            self._headers.update({k.lower(): v for k, v in auth.headers("GET", url).items()})
        self._verified = not self.elastic  # the elasticsearch client checks its first answer
        pool: dict[str, Any] = {
            "timeout": urllib3.Timeout(total=timeout)
            if self.elastic
            else urllib3.Timeout(connect=timeout, read=timeout),
            "maxsize": 1,
        }
        if https:
            pool.update(self._tls(verify_certs, ca_certs, auth))
        cls = urllib3.HTTPSConnectionPool if https else urllib3.HTTPConnectionPool
        self._pool = cls(parts.hostname, parts.port or (443 if https else 9200), **pool)

    def _tls(self, verify: bool, ca: str | None, auth: SearchAuth) -> dict[str, Any]:
        """The pool's TLS arguments as the client's connection builds them."""
        context = None
        if self.elastic:  # elastic_transport: the system's trust as well, TLS 1.2 at least
            context = ssl.create_default_context()
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            if not verify:
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        if not verify:
            urllib3.disable_warnings()  # the process says nothing anyway
            return {"cert_reqs": "CERT_NONE", **({"ssl_context": context} if context else {})}
        if ca is None:
            ca = None if self.elastic else os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")
            if not ca:
                import certifi

                ca = certifi.where()
        out = {
            "cert_reqs": "CERT_REQUIRED",
            "ca_certs": ca,
            "cert_file": auth.client_cert,
            "key_file": auth.client_key,
        }
        return {**out, **({"ssl_context": context} if context else {})}

    # -- the requests ---------------------------------------------------------------------
    def search(
        self,
        *,
        index: str | None = None,
        body: dict[str, Any] | None = None,
        scroll: str | None = None,
        ignore_unavailable: bool | None = None,
    ) -> Any:
        params = {"scroll": scroll, "ignore_unavailable": ignore_unavailable}
        return self._send("POST", _path(index, "_search"), body, params)

    def scroll(self, *, body: dict[str, Any]) -> Any:
        return self._send("POST", "/_search/scroll", body)

    def clear_scroll(self, *, body: dict[str, Any]) -> Any:
        return self._send("DELETE", "/_search/scroll", body)

    def create_pit(self, *, index: str, params: dict[str, Any]) -> Any:  # OpenSearch
        return self._send("POST", _path(index, "_search", "point_in_time"), None, params)

    def delete_pit(self, *, body: dict[str, Any]) -> Any:
        return self._send("DELETE", "/_search/point_in_time", body)

    def open_point_in_time(self, *, index: str, keep_alive: str) -> Any:  # Elasticsearch
        return self._send("POST", _path(index, "_pit"), None, {"keep_alive": keep_alive})

    def close_point_in_time(self, *, id: str) -> Any:  # noqa: A002 (the client's own keyword)
        return self._send("DELETE", "/_pit", {"id": id})

    def close(self) -> None:
        self._pool.close()
        if self._full is not None:
            self._full.close()

    def __getattr__(self, name: str) -> Any:
        """Any other request: the full client's (opened on first use)."""
        if name.startswith("_"):
            raise AttributeError(name)
        if self._full is None:
            from auditor.backends.search_client import open_client

            self._full = open_client(*self._args)
        return getattr(self._full, name)

    def _send(self, method: str, path: str, body: Any, params: dict[str, Any] | None = None) -> Any:
        query = {
            k: str(v).lower() if isinstance(v, bool) else v
            for k, v in (params or {}).items()
            if v is not None
        }
        target = self._prefix + path + ("?" + urlencode(query) if query else "")
        data = orjson.dumps(body) if body is not None else None
        try:
            response = self._pool.urlopen(method, target, body=data, headers=self._headers, retries=False)
        except Exception as exc:
            raise self._lost(exc) from exc
        status, kind = response.status, response.headers.get("content-type") or ""
        if 200 <= status < (299 if self.elastic else 300):
            if not self._verified:  # the product check of the elasticsearch client's first answer
                if response.headers.get("x-elastic-product") != "Elasticsearch":
                    body = _parsed(response.data, kind, True)
                    raise UnsupportedProductError(status, _NOT_ELASTICSEARCH, body, True)
                self._verified = True
            if not response.data and not self.elastic:
                return ""  # opensearch-py's answer to an empty body
            return _parsed(response.data, kind, self.elastic)
        raise self._refused(status, response.data, kind)

    def _refused(self, status: int, raw: bytes, kind: str) -> HttpError:
        """An error answer as the client raises it: the error's type as its `error` where the body
        is JSON (opensearch-py reads only `application/json` there), the text otherwise."""
        text = raw.decode("utf-8", "surrogatepass")
        if self.elastic:
            info = _parsed(raw, kind, True)
            error = info.get("error", str(info)) if isinstance(info, dict) else str(info)
        else:
            info = None
            if raw and kind.split(";")[0].strip() == "application/json":
                try:
                    info = orjson.loads(raw)
                except ValueError:  # opensearch-py keeps the text then
                    pass
            error = info.get("error", text) if isinstance(info, dict) else text
        if isinstance(error, dict) and "type" in error:
            error = error["type"]
        name = _HTTP_NAMES.get(status, ("TransportError", "ApiError"))[self.elastic]
        return _ERRORS[name](status, error, info, self.elastic)

    def _lost(self, exc: Exception) -> Exception:
        """No answer, as the client's connection says it."""
        if self.elastic:
            if isinstance(exc, NewConnectionError):
                return ConnectionError(str(exc), exc, True)
            if isinstance(exc, TimeoutError):  # a connect or a read timeout
                return ConnectionTimeout("Connection timed out during request", exc, True)
            if isinstance(exc, (ssl.SSLError, urllib3.exceptions.SSLError)):
                return TlsError(str(exc), exc, True, "TLS error")
            return ConnectionError(str(exc), exc, True)
        if isinstance(exc, urllib3.exceptions.SSLError):
            return SSLError(str(exc), exc, False)
        if isinstance(exc, ReadTimeoutError):
            return ConnectionTimeout(str(exc), exc, False)
        return ConnectionError(str(exc), exc, False)


def _path(*parts: str | None) -> str:
    """`/index/_search`, the names quoted as both clients quote them (`,` and `*` kept)."""
    return "/" + "/".join(quote(p, ",*") for p in parts if p)


def _parsed(data: bytes, kind: str, elastic: bool = False) -> Any:
    """A body as the client parses it: text for `text/*`, JSON otherwise (elastic_transport: a
    JSON media type, or none; None for no body; its own error for a body that is not JSON)."""
    mimetype = kind.partition(";")[0].strip()
    if mimetype.startswith("text/"):
        return data.decode("utf-8", "surrogatepass")
    if not elastic:
        return orjson.loads(data)
    if mimetype and "json" not in mimetype:
        raise SerializationError(f"Unknown mimetype, not able to serialize or deserialize: {mimetype}")
    if not data:
        return None
    try:
        return orjson.loads(data)
    except ValueError:
        raise SerializationError(f"Unable to deserialize as JSON: {data!r}") from None
