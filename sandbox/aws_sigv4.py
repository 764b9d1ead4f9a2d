"""AWS Signature Version 4, checked the way an AWS endpoint checks it: a stand-in for the parts of
AWS the tests cannot reach (Amazon OpenSearch Service in front of the stack's OpenSearch node, the
Glue registry's API, MSK's and RDS's presigned tokens).

The signature is recomputed with botocore's own signer (`SigV4Auth`, `SigV4QueryAuth`) from what
arrived: the signed headers only, the request's own `X-Amz-Date`, a body hashed here (the
`X-Amz-Content-SHA256` a client sends is compared, never trusted), and the secret this stand-in
holds for the access key. A wrong key, a wrong region or service, a stale date, a missing or
expired session token, or an action the key's identity is denied is refused with AWS's own
words, which is what the auditor's error messages are tested against.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, urlsplit

SKEW = dt.timedelta(minutes=5)
HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
}


@dataclass
class Key:
    """One identity the stand-in knows: its secret, its session token (temporary credentials),
    its ARN and the actions denied to it."""

    access_key: str
    secret_key: str
    arn: str = "arn:aws:iam::123456789012:user/auditor"
    token: str | None = None
    expired: bool = False
    denied: frozenset[str] = frozenset()


class Refused(Exception):
    def __init__(self, status: int, message: str, code: str = "AccessDenied") -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


@dataclass
class Verifier:
    region: str
    service: str
    keys: dict[str, Key] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)  # access keys of the requests let through

    def add(self, key: Key) -> Key:
        self.keys[key.access_key] = key
        return key

    def check_header(self, method: str, target: str, headers: Mapping[str, str], body: bytes) -> Key:
        """The identity of a header-signed request, or Refused."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        lower = {k.lower(): v for k, v in headers.items()}
        auth = lower.get("authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            raise Refused(403, "Authorization header requires 'Credential' parameter.", "IncompleteSignature")
        parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
        access_key, date, region, service, _ = parts["Credential"].split("/")
        key = self._key(access_key, region, service, lower.get("x-amz-security-token"))
        amz_date = lower.get("x-amz-date", "")
        self._fresh(amz_date)
        if not amz_date.startswith(date):
            raise Refused(
                403,
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP",
            )
        digest = hashlib.sha256(body).hexdigest()
        claimed = lower.get("x-amz-content-sha256")
        if claimed is not None and claimed != digest:
            raise Refused(400, "The provided 'x-amz-content-sha256' header does not match what was computed.")
        if self.service == "aoss" and claimed is None:
            raise Refused(403, "Missing required header: x-amz-content-sha256")
        signed = parts["SignedHeaders"].split(";")
        if "host" not in signed:
            raise Refused(403, "'Host' must be a 'SignedHeader' in the AWS Authorization.")
        request = AWSRequest(
            method=method, url=f"https://{lower['host']}{_aws_target(target)}", data=body,
            headers={h: lower[h] for h in signed if h in lower},
        )  # fmt: skip
        request.context["timestamp"] = amz_date
        signer = SigV4Auth(Credentials(key.access_key, key.secret_key, key.token), service, region)
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if not hmac.compare_digest(expected, parts["Signature"]):
            raise Refused(
                403,
                "The request signature we calculated does not match the signature you provided. Check your "
                "AWS Secret Access Key and signing method. Consult the service documentation for details.",
                "SignatureDoesNotMatch",
            )
        return key

    def check_presigned(self, url: str, *, action: str | None = None) -> Key:
        """The identity of a query-signed URL (MSK's IAM token, an RDS token), or Refused."""
        from botocore.auth import SigV4QueryAuth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        split = urlsplit(url)
        params = dict(parse_qsl(split.query, keep_blank_values=True))
        access_key, date, region, service, _ = params["X-Amz-Credential"].split("/")
        key = self._key(access_key, region, service, params.get("X-Amz-Security-Token"))
        amz_date = params["X-Amz-Date"]
        issued = dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        if dt.datetime.now(dt.UTC) > issued + dt.timedelta(seconds=int(params["X-Amz-Expires"])):
            raise Refused(403, "Signature expired", "ExpiredToken")
        # MSK's signer appends `User-Agent` after signing: not part of what was signed
        unsigned = "&".join(
            f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
            for k, v in sorted(params.items())
            if k not in ("X-Amz-Signature", "User-Agent")
        )
        request = AWSRequest(method="GET", url=f"https://{split.netloc}{split.path or '/'}?{unsigned}",
                             headers={"host": split.netloc})  # fmt: skip
        request.context["timestamp"] = amz_date
        signer = SigV4QueryAuth(
            Credentials(key.access_key, key.secret_key, key.token), service, region, expires=0
        )
        expected = signer.signature(
            signer.string_to_sign(request, signer.canonical_request(request)), request
        )
        if not hmac.compare_digest(expected, params.get("X-Amz-Signature", "")):
            raise Refused(
                403, "The request signature we calculated does not match the signature you provided.",
                "SignatureDoesNotMatch",
            )  # fmt: skip
        if action is not None and params.get("Action") != action:
            raise Refused(403, f"the token is for {params.get('Action')!r}, not {action!r}")
        return key

    def allow(self, key: Key, action: str) -> None:
        if action in key.denied:
            raise Refused(
                403,
                f"User: {key.arn} is not authorized to perform: {action} because no identity-based policy "
                f"allows the {action} action",
            )
        self.seen.append(key.access_key)

    def _key(self, access_key: str, region: str, service: str, token: str | None) -> Key:
        key = self.keys.get(access_key)
        if key is None:
            raise Refused(
                403, "The security token included in the request is invalid.", "UnrecognizedClientException"
            )
        if region != self.region:
            raise Refused(403, f"Credential should be scoped to a valid region, not '{region}'.",
                          "InvalidSignatureException")  # fmt: skip
        if service != self.service:
            raise Refused(403, f"Credential should be scoped to correct service: '{self.service}'.",
                          "InvalidSignatureException")  # fmt: skip
        if key.token is not None and token != key.token:
            raise Refused(
                403, "The security token included in the request is invalid.", "UnrecognizedClientException"
            )
        if key.expired:
            raise Refused(
                403, "The security token included in the request is expired", "ExpiredTokenException"
            )
        return key

    def _fresh(self, amz_date: str) -> None:
        try:
            when = dt.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        except ValueError:
            raise Refused(
                403, "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
            ) from None
        now = dt.datetime.now(dt.UTC)
        if abs(now - when) > SKEW:
            raise Refused(
                403, f"Signature expired: {amz_date} is now earlier than {(now - SKEW):%Y%m%dT%H%M%SZ}"
            )


def _aws_target(target: str) -> str:
    """The request target as AWS canonicalises it: the path as sent, the query decoded and each
    name and value encoded again (RFC 3986 unreserved characters kept)."""
    path, _, query = target.partition("?")
    if not query:
        return path
    pairs = parse_qsl(query, keep_blank_values=True)
    return path + "?" + "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in pairs)


def action_of(method: str) -> str:
    """The IAM action an OpenSearch Service data-plane request needs (`es:ESHttpGet`, ...)."""
    return f"es:ESHttp{method.capitalize()}"


class SearchProxy:
    """`with SearchProxy(upstream_port, verifier) as proxy:` Amazon OpenSearch Service's front:
    every request's SigV4 signature checked, then forwarded (unsigned) to the plain node."""

    def __init__(self, upstream: str, verifier: Verifier, tls: tuple[str, str] | None = None) -> None:
        self.upstream = urlsplit(upstream)
        self.verifier = verifier
        self.refused: list[str] = []
        self.paths: list[str] = []  # every request's method and target, in order
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                proxy.requests += 1
                proxy.paths.append(f"{self.command} {self.path}")
                try:
                    key = proxy.verifier.check_header(
                        self.command, self.path, dict(self.headers.items()), body
                    )
                    proxy.verifier.allow(key, action_of(self.command))
                except Refused as refused:
                    proxy.refused.append(refused.message)
                    payload = json.dumps({"message": refused.message}).encode()
                    self.send_response(refused.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("x-amzn-ErrorType", refused.code)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                forwarded = {k: v for k, v in self.headers.items()
                             if k.lower() not in HOP_BY_HOP and not k.lower().startswith("x-amz")
                             and k.lower() not in ("authorization", "host")}  # fmt: skip
                conn = HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=120)
                try:
                    conn.request(self.command, self.path, body=body or None, headers=forwarded)
                    answer = conn.getresponse()
                    data = answer.read()
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:  # as AWS serves it: HTTPS (a certificate the test made)
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> SearchProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
