"""A private Elasticsearch 9.2.0 node that authenticates the ways Elastic Cloud and self-managed
clusters do besides basic auth: API keys, bearer tokens of its token service, client certificates
(a PKI realm), on HTTPS with the certificate `sandbox/stack` made for the databases (its CA is
`Endpoints.tls_ca`), client certificates optional on it. A trial license (the PKI realm is not a
basic feature), a PKI realm first (trusting a CA of its own, made here with openssl; subjects
mapped to roles in role_mapping.yml), then the file realm with a super user and the users the
test asks for, roles in roles.yml.

API keys live in the security index, whose `email` analyzer needs three analysis components of
the analysis-common module the stack's integ-test distribution lacks (and Maven Central does not
have for 9.x): es_security_analysis/ has them, compiled once into a copy of the distribution
(`<stack home>/dist/elasticsearch-9.2.0-security`, under a lock: test workers share it).

Each node runs from its own config folder, data, logs and ports; the launcher and the server
run as the stack's service user, on a 384 MB heap. No ML or geoip setting: the zip has neither
module, and an unknown setting stops the node."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from secure_search import ES_HOME as PLAIN_HOME
from secure_search import ES_JAVA, STACK_HOME, SecureElasticsearch

HOME = STACK_HOME / "dist" / "elasticsearch-9.2.0-security"
ANALYSIS_SOURCE = Path(__file__).resolve().parent / "es_security_analysis" / "SecurityAnalysisPlugin.java"

# role name -> (index name patterns, index privileges, cluster privileges)
Roles = dict[str, tuple[list[str], list[str], list[str]]]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def security_home() -> Path:
    """The stack's Elasticsearch home with a module of the analysis components the security index
    needs (es_security_analysis/: the integ-test zip has no analysis-common, and without the
    security index there are no API keys). Made once, under a lock: test workers share it."""
    module = HOME / "modules" / "auditor-security-analysis"
    rest_root = PLAIN_HOME / "modules" / "auditor-rest-root" / ".src-sha1"
    stamp = hashlib.sha1(ANALYSIS_SOURCE.read_bytes()).hexdigest()
    stamp += "+" + (rest_root.read_text().strip() if rest_root.exists() else "-")
    HOME.parent.mkdir(parents=True, exist_ok=True)
    with open(HOME.parent / ".elasticsearch-security.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = HOME / ".auditor-security-complete"
        if done.exists() and done.read_text() == stamp:
            return HOME
        building = HOME.with_name(HOME.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        shutil.copytree(PLAIN_HOME, building, symlinks=True)
        classes = building / "auditor-security-analysis-classes"
        java_bin, lib = ES_JAVA / "bin", building / "lib"
        javac = [str(java_bin / "javac"), "--release", "21", "-nowarn", "-cp", f"{lib}/*", "-d", str(classes),
                 str(ANALYSIS_SOURCE)]  # fmt: skip
        subprocess.run(javac, check=True, capture_output=True, timeout=300)
        target = building / "modules" / module.name
        target.mkdir()
        jar = [str(java_bin / "jar"), "cf", str(target / f"{module.name}.jar"), "-C", str(classes), "."]
        subprocess.run(jar, check=True, capture_output=True, timeout=120)
        shutil.rmtree(classes)
        (target / "plugin-descriptor.properties").write_text(
            "description=uax_url_email, pattern_capture and unique (the security index's analyzer); "
            "built by tests/scenarios/secure_elasticsearch.py\n"
            "version=9.2.0\nname=auditor-security-analysis\n"
            "classname=auditor.tests.securityanalysis.SecurityAnalysisPlugin\n"
            "java.version=21\nelasticsearch.version=9.2.0\n"
        )
        shutil.rmtree(HOME, ignore_errors=True)
        building.rename(HOME)
        done.write_text(stamp)
        return HOME


class CertificateAuthority:
    """A throw-away CA made with openssl in `folder`; it signs client certificates."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder, self.name = folder, name
        folder.mkdir(parents=True, exist_ok=True)
        self.key, self.cert = folder / f"{name}.key", folder / f"{name}.pem"
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", str(self.key),
                 "-out", str(self.cert), "-subj", f"/O=auditor tests/CN={name}")  # fmt: skip

    def client_certificate(self, cn: str) -> tuple[Path, Path]:
        """A TLS client certificate for `CN=<cn>, OU=auditor, O=auditor tests`: (cert, key), PEM."""
        key, csr, cert, ext = (self.folder / f"{cn}.{e}" for e in ("key", "csr", "pem", "ext"))
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                 "-subj", f"/O=auditor tests/OU=auditor/CN={cn}")  # fmt: skip
        ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                       "extendedKeyUsage=clientAuth\n")  # fmt: skip
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.cert), "-CAkey", str(self.key),
                 "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(ext))  # fmt: skip
        return cert, key


def subject_dn(cn: str) -> str:
    """The subject of `CertificateAuthority.client_certificate(cn)` as the PKI realm reads it."""
    return f"CN={cn}, OU=auditor, O=auditor tests"


class SecuredElasticsearch(SecureElasticsearch):
    """`with SecuredElasticsearch(roles, users, pki) as es:` a node at `es.url` (https, CA `es.ca`).

    `roles`: role name -> (index patterns, index privileges, cluster privileges), in roles.yml;
    `users`: user name -> role, in the file realm (passwords in `es.passwords`), a super user
    `es.admin` beside them; `pki`: certificate common name -> role: the PKI realm maps the
    subject of `es.client_certificate(cn)` (signed by `es.client_ca`) to it. Unlike its base, it
    runs from the distribution with the security index's analysis module (API keys, tokens)."""

    name = "secure-es9"

    def __init__(self, roles: Roles, users: dict[str, str], pki: dict[str, str]) -> None:
        super().__init__(roles, users)
        self.pki = pki
        self.client_ca: CertificateAuthority | None = None

    def home(self) -> Path:
        return security_home()

    def prepare(self, conf: Path) -> None:
        self.client_ca = CertificateAuthority(self.dir / "client-ca", "auditor-client-ca")
        shutil.copy(self.client_ca.cert, conf / "client-ca.pem")
        mapping: dict[str, list[str]] = {}
        for cn, role in self.pki.items():
            mapping.setdefault(role, []).append(subject_dn(cn))
        (conf / "role_mapping.yml").write_text(
            "".join(
                f"{role}:\n" + "".join(f"  - {json.dumps(dn)}\n" for dn in dns)
                for role, dns in mapping.items()
            )
        )

    def security_settings(self) -> list[str]:
        return [
            "action.auto_create_index: true",
            "action.destructive_requires_name: false",
            "xpack.license.self_generated.type: trial",
            "xpack.security.enabled: true",
            "xpack.security.transport.ssl.enabled: false",
            "xpack.security.http.ssl.enabled: true",
            "xpack.security.http.ssl.certificate: server.pem",
            "xpack.security.http.ssl.key: server.key",
            # the server's CA and the one client certificates come from
            "xpack.security.http.ssl.certificate_authorities: [ca.pem, client-ca.pem]",
            "xpack.security.http.ssl.client_authentication: optional",
            "xpack.security.authc.token.enabled: true",
            "xpack.security.authc.api_key.enabled: true",
            "xpack.security.authc.realms.pki.pki1.order: 0",
            "xpack.security.authc.realms.pki.pki1.certificate_authorities: [client-ca.pem]",
            "xpack.security.authc.realms.pki.pki1.files.role_mapping: role_mapping.yml",
            "xpack.security.authc.realms.file.file1.order: 1",
        ]

    def api_key(self, name: str, patterns: list[str], privileges: list[str]) -> tuple[str, str]:
        """An API key the super user makes, its role descriptor limiting it to these index
        privileges on these patterns (and no cluster privilege): (id, encoded key)."""
        descriptor = {"cluster": [], "indices": [{"names": patterns, "privileges": privileges}]}
        body = {"name": name, "expiration": "1d", "role_descriptors": {f"{name}_role": descriptor}}
        status, answer = self.request("POST", "/_security/api_key", body)
        assert status == 200, (status, answer)
        return answer["id"], answer["encoded"]

    def bearer_token(self, user: str) -> str:
        """An access token of the token service for a file-realm user (the password grant)."""
        body = {"grant_type": "password", "username": user, "password": self.passwords[user]}
        status, answer = self.request("POST", "/_security/oauth2/token", body)
        assert status == 200, (status, answer)
        return str(answer["access_token"])

    def invalidate_token(self, token: str) -> None:
        status, answer = self.request("DELETE", "/_security/oauth2/token", {"token": token})
        assert status == 200 and answer["invalidated_tokens"] == 1, (status, answer)

    def client_certificate(self, cn: str) -> tuple[Path, Path]:
        """A client certificate for `cn` the PKI realm trusts (its subject mapped to a role when
        `cn` is one of `pki`): (certificate, key), PEM files."""
        assert self.client_ca is not None, "the node is not started"
        return self.client_ca.client_certificate(cn)

    def untrusted_certificate(self, cn: str) -> tuple[Path, Path]:
        """A client certificate for `cn` from a CA the node does not know."""
        return CertificateAuthority(self.dir / "other-ca", "auditor-other-ca").client_certificate(cn)
