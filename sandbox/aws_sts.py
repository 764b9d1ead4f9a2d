"""A stand-in for AWS STS's `AssumeRoleWithWebIdentity`, the call behind EKS's IRSA: the pod has
`AWS_ROLE_ARN` and `AWS_WEB_IDENTITY_TOKEN_FILE` (a projected service-account token), botocore's
credential chain posts the token to STS (unsigned) and gets temporary credentials for the role.

Pointed at with `AWS_ENDPOINT_URL_STS`. It accepts only the token and role it was given, refuses
others as STS does (`InvalidIdentityToken`, `AccessDenied`), and adds each set of credentials it
issues to the verifiers of the stand-in services (sandbox/aws_sigv4.py), so requests signed with
them are let through there and nowhere else."""

from __future__ import annotations

import secrets
import threading
import uuid
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl
from xml.sax.saxutils import escape

from sandbox.aws_sigv4 import Key, Verifier

NS = "https://sts.amazonaws.com/doc/2011-06-15/"


class WebIdentitySts:
    """`with WebIdentitySts(role_arn, token, verifiers) as sts:` STS at `sts.url`; `sts.issued` the
    access keys handed out."""

    def __init__(self, role_arn: str, token: str, verifiers: list[Verifier]) -> None:
        self.role_arn, self.token, self.verifiers = role_arn, token, verifiers
        self.issued: list[str] = []
        self.refused: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                status, body = outer.answer(form)
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> WebIdentitySts:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, form: dict[str, str]) -> tuple[int, str]:
        if form.get("Action") != "AssumeRoleWithWebIdentity":
            return self._error(400, "InvalidAction", f"Could not find operation {form.get('Action')}")
        if form.get("WebIdentityToken") != self.token:
            return self._error(
                400, "InvalidIdentityToken", "Couldn't retrieve verification key from your identity provider"
            )
        if form.get("RoleArn") != self.role_arn:
            return self._error(403, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
        session = form.get("RoleSessionName") or "session"
        role = self.role_arn.rsplit("/", 1)[-1]
        arn = f"arn:aws:sts::123456789012:assumed-role/{role}/{session}"
        key = Key(
            "ASIA" + secrets.token_hex(8).upper(),
            secrets.token_urlsafe(30),
            arn=arn,
            token=secrets.token_urlsafe(60),
        )
        for verifier in self.verifiers:
            verifier.add(key)
        self.issued.append(key.access_key)
        expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return 200, (
            f'<AssumeRoleWithWebIdentityResponse xmlns="{NS}"><AssumeRoleWithWebIdentityResult>'
            "<SubjectFromWebIdentityToken>system:serviceaccount:datahub:auditor</SubjectFromWebIdentityToken>"
            f"<AssumedRoleUser><Arn>{escape(arn)}</Arn><AssumedRoleId>AROA{uuid.uuid4().hex[:12].upper()}:"
            f"{escape(session)}</AssumedRoleId></AssumedRoleUser>"
            f"<Credentials><AccessKeyId>{key.access_key}</AccessKeyId><SecretAccessKey>{key.secret_key}"
            f"</SecretAccessKey><SessionToken>{key.token}</SessionToken><Expiration>{expires}</Expiration>"
            "</Credentials><Audience>sts.amazonaws.com</Audience></AssumeRoleWithWebIdentityResult>"
            f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
            "</AssumeRoleWithWebIdentityResponse>"
        )

    def _error(self, status: int, code: str, message: str) -> tuple[int, str]:
        self.refused.append(code)
        return status, (
            f'<ErrorResponse xmlns="{NS}"><Error><Type>Sender</Type><Code>{code}</Code>'
            f"<Message>{escape(message)}</Message></Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
        )
