"""A private Kafka 4.1.1 KRaft broker for one test module, secured the way production brokers are:
SASL/SCRAM, SASL/PLAIN (Confluent Cloud's API keys) and SASL/OAUTHBEARER over TLS (a CA and a
certificate made with `openssl`), an mTLS
listener that requires a client certificate the same CA signed, the StandardAuthorizer, ACLs.
OAUTHBEARER is checked by Kafka's own unsecured validator (an unsigned JWS with `sub` and `exp`:
the client's token-provider wiring and expiry handling are real, the token's signature is not).

Next to the SASL_SSL listener, a PLAINTEXT listener whose ANONYMOUS principal is a super user
serves the sandbox's own writer and MAE consumer (which know no SASL) and the test's set-up
(users, ACLs, topics). It never touches the shared broker of sandbox/stack."""

from __future__ import annotations

import base64
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from sandbox.endpoints import stack_home
from sandbox.naming import TOPIC_PARTITIONS
from sandbox.topics import CLIENT_LOG, ensure_topics

ROOT = Path(__file__).resolve().parents[2]
KAFKA_LIB = stack_home() / "dist" / "kafka-4.1.1" / "lib"
LOG4J = ROOT / "sandbox" / "stack.d" / "kafka-log4j2.properties"
MECHANISM = "SCRAM-SHA-512"
PLAIN_USER = "cloud-api-key"
# a small broker on a 2-core machine: C1 only (starts faster), serial GC, small heap
JVM = ["-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
       "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile=file:{LOG4J}"]  # fmt: skip

# An ACL as (resource type, name, pattern type, operation); the principal is given apart.
Acl = tuple[ResourceType, str, ResourcePatternType, AclOperation]


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_certificates(tmp: Path, password: str) -> tuple[Path, Path]:
    """A test CA, and a PKCS12 keystore with a certificate for 127.0.0.1 it signed: (ca, keystore)."""
    ca_key, ca, key, csr, cert, ext = (
        tmp / n for n in ("ca.key", "ca.pem", "broker.key", "broker.csr", "broker.pem", "broker.ext")
    )
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", str(ca_key),
             "-out", str(ca), "-subj", "/CN=auditor test CA")  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
             "-subj", "/CN=127.0.0.1")  # fmt: skip
    ext.write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
             "-days", "1", "-out", str(cert), "-extfile", str(ext))  # fmt: skip
    keystore = tmp / "broker.p12"
    _openssl("pkcs12", "-export", "-in", str(cert), "-inkey", str(key), "-name", "broker",
             "-out", str(keystore), "-passout", f"pass:{password}")  # fmt: skip
    return ca, keystore


class PortTaken(RuntimeError):
    """The broker could not bind one of the ports picked for it."""


class SecureKafka:
    """Started by `with SecureKafka(tmp) as broker:` (its files under tmp); stopped, and waited
    for, on exit. `plaintext`: the super user's listener; `sasl_ssl`: the secured one; `ca`: the
    CA file the clients verify the broker's certificate with."""

    def __init__(self, root: Path, timeout: float = 180.0) -> None:  # a JVM beside five others
        self.root, self.timeout = root, timeout
        self.plain_password = f"plain-{uuid.uuid4().hex}"  # PLAIN_USER's (Confluent Cloud's API secret)
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds = 0.0
        self._place(1)

    def _place(self, attempt: int) -> None:
        """Fresh free ports and a fresh directory (a retry never reuses either)."""
        self.tmp = self.root / f"broker-{attempt}"
        self.tmp.mkdir(parents=True)
        self.plaintext_port, self.sasl_port, self.controller_port, self.mtls_port = free_ports(4)
        self.plaintext = f"127.0.0.1:{self.plaintext_port}"
        self.sasl_ssl = f"127.0.0.1:{self.sasl_port}"
        self.mtls = f"127.0.0.1:{self.mtls_port}"
        self.log = self.tmp / "kafka.log"
        self.ca = self.tmp / "ca.pem"

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> SecureKafka:
        for attempt in (1, 2):
            try:
                self.start()
                return self
            except PortTaken:  # another process took a port between our probe and the bind
                self.stop()
                if attempt == 2:
                    raise
                self._place(attempt + 1)
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _properties(self, keystore: Path, password: str) -> Path:
        data = self.tmp / "data"
        data.mkdir(exist_ok=True)
        props = self.tmp / "server.properties"
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    f"listeners=PLAINTEXT://{self.plaintext},SASL_SSL://{self.sasl_ssl},"
                    f"MTLS://{self.mtls},CONTROLLER://127.0.0.1:{self.controller_port}",
                    f"advertised.listeners=PLAINTEXT://{self.plaintext},SASL_SSL://{self.sasl_ssl},"
                    f"MTLS://{self.mtls}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,"
                    "MTLS:SSL,CONTROLLER:PLAINTEXT",
                    # mTLS: the principal is the client certificate's subject (User:CN=...)
                    "listener.name.mtls.ssl.client.auth=required",
                    "listener.name.mtls.ssl.truststore.type=PEM",
                    f"listener.name.mtls.ssl.truststore.location={self.ca}",
                    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    # the controller, the broker itself and the sandbox's clients (PLAINTEXT)
                    "super.users=User:ANONYMOUS",
                    f"sasl.enabled.mechanisms={MECHANISM},OAUTHBEARER,PLAIN",
                    # PLAIN: users in the JAAS config, as Confluent Cloud's API key and secret
                    "listener.name.sasl_ssl.plain.sasl.jaas.config="
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'user_{PLAIN_USER}="{self.plain_password}";',
                    f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config="
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                    # no server callback handler: Kafka's unsecured validator (principal = `sub`)
                    "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config="
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
                    "ssl.keystore.type=PKCS12",
                    f"ssl.keystore.location={keystore}",
                    f"ssl.keystore.password={password}",
                    f"log.dirs={data}",
                    "num.partitions=1",
                    "default.replication.factor=1",
                    "min.insync.replicas=1",
                    "auto.create.topics.enable=false",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "transaction.state.log.num.partitions=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "num.network.threads=1",
                    "num.io.threads=2",
                    "background.threads=2",
                    "num.recovery.threads.per.data.dir=1",
                    "log.cleaner.threads=1",
                    "",
                ]
            )
        )
        return props

    def _java(self, *args: str) -> list[str]:
        if not KAFKA_LIB.is_dir():
            raise RuntimeError(f"no Kafka distribution at {KAFKA_LIB} (run sandbox/stack up once)")
        return ["java", *JVM, "-cp", f"{KAFKA_LIB}/*", *args]

    def start(self) -> None:
        started = time.monotonic()
        password = uuid.uuid4().hex
        self.ca, keystore = make_certificates(self.tmp, password)
        props = self._properties(keystore, password)
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        # a leading '-' reads as an option to StorageTool (1 start in 64 failed; sandbox/stack too)
        cluster = "A" + cluster[1:] if cluster.startswith("-") else cluster
        with self.log.open("ab") as log:
            subprocess.run(
                self._java("kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(props)),
                stdout=log, stderr=subprocess.STDOUT, check=True, timeout=120,
            )  # fmt: skip
            self.process = subprocess.Popen(
                self._java("kafka.Kafka", str(props)),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        admin = self.admin()
        deadline = started + self.timeout
        while True:
            if self.process.poll() is not None:
                why = PortTaken if "Address already in use" in self.tail(10_000) else RuntimeError
                raise why(f"the private Kafka broker exited ({self.process.returncode}):\n{self.tail()}")
            try:
                admin.list_topics(timeout=2)
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the private Kafka broker did not answer within {self.timeout:.0f}s:\n{self.tail()}"
                    ) from None
                time.sleep(0.3)
        ensure_topics(self.plaintext, TOPIC_PARTITIONS)
        self.startup_seconds = time.monotonic() - started

    def stop(self, timeout: float = 30.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)  # a controlled shutdown
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def tail(self, n: int = 15) -> str:
        """The broker log's errors, then its last `n` lines."""
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        errors = [line for line in lines[:-n] if "ERROR" in line or "FATAL" in line][:10]
        return "\n".join([*errors, *lines[-n:]])

    # ------------------------------------------------------------------ users and ACLs
    def admin(self) -> AdminClient:
        """The super user's admin client (PLAINTEXT listener, principal ANONYMOUS)."""
        return AdminClient(
            {"bootstrap.servers": self.plaintext, "socket.timeout.ms": 5000, "logger": CLIENT_LOG}
        )

    def add_user(self, name: str, password: str) -> None:
        """A SCRAM user; waits until the broker authenticates it."""
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        upsert = UserScramCredentialUpsertion(name, info, password.encode(), salt=None)
        admin = self.admin()  # kept alive until its futures are done
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
        deadline = time.monotonic() + 30
        client = AdminClient({**self.client_config(name, password), "logger": CLIENT_LOG})
        while True:  # the credential reaches the broker through the metadata log
            try:
                client.list_topics(timeout=3)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"SCRAM user {name} not accepted by the broker within 30s") from None
                time.sleep(0.2)

    def grant(self, user: str, acls: Iterable[Acl]) -> None:
        bindings = [
            AclBinding(kind, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)
            for kind, name, pattern, operation in acls
        ]
        admin = self.admin()
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result()

    def client_certificate(self, name: str) -> tuple[Path, Path]:
        """A client certificate for `CN=name` the broker's CA signed: (certificate, key), PEM."""
        key, csr, cert = (self.tmp / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                 "-subj", f"/CN={name}")  # fmt: skip
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey", str(self.tmp / "ca.key"),
                 "-CAcreateserial", "-days", "1", "-out", str(cert))  # fmt: skip
        return cert, key

    def client_config(self, user: str, password: str) -> dict[str, str]:
        """librdkafka settings of a SASL_SSL client as `user`."""
        return {
            "bootstrap.servers": self.sasl_ssl,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": MECHANISM,
            "sasl.username": user,
            "sasl.password": password,
            "ssl.ca.location": str(self.ca),
        }
