"""`auditor config init`: JDBC URLs read as SQLAlchemy URLs (TLS meaning kept), no secret ever
written or printed, the file loads with the auditor's own loader, an existing file is kept; and
the database password apart from the URL (settings.store_password)."""

from __future__ import annotations

import os
import re
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import ConfigError
from auditor.platforms.datahub.config.init import plan, render
from auditor.platforms.datahub.jdbc import jdbc_to_sqlalchemy
from auditor.settings import load_settings

# every variable `config init` or the settings read, cleared so the machine's own cannot leak in
PREFIXES = ("EBEAN_", "ELASTICSEARCH_", "KAFKA_", "SPRING_KAFKA_", "INDEX_PREFIX", "METADATA_CHANGE_LOG_")
PREFIXES += ("UPDATE_INDICES_", "SCHEMA_REGISTRY_", "AUDITOR_")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith(PREFIXES):
            monkeypatch.delenv(name)
    return monkeypatch


# ------------------------------------------------------------------------------ JDBC URLs


@pytest.mark.parametrize(
    ("jdbc", "driver", "expected"),
    [
        # MySQL, DataHub's docker-compose URL: useSSL=true + verifyServerCertificate=false is
        # Connector/J 8's PREFERRED, which is PyMySQL's default: no option
        (
            "jdbc:mysql://mysql:3306/datahub?verifyServerCertificate=false&useSSL=true"
            "&useUnicode=yes&characterEncoding=UTF-8",
            "com.mysql.cj.jdbc.Driver",
            "mysql+pymysql://datahub@mysql:3306/datahub",
        ),
        ("jdbc:mysql://mysql/datahub", None, "mysql+pymysql://datahub@mysql/datahub"),
        (
            "jdbc:mysql://mysql:3306/datahub?useSSL=false",
            None,
            "mysql+pymysql://datahub@mysql:3306/datahub?ssl_disabled=true",
        ),
        ("jdbc:mysql://m/dh?sslMode=REQUIRED", None, "mysql+pymysql://datahub@m/dh?ssl_verify_cert=false"),
        (
            "jdbc:mysql://m/dh?useSSL=true&requireSSL=true",
            None,
            "mysql+pymysql://datahub@m/dh?ssl_verify_cert=false",
        ),
        (
            "jdbc:mysql://m/dh?useSSL=true&verifyServerCertificate=true",
            None,
            "mysql+pymysql://datahub@m/dh?ssl_verify_cert=true",
        ),
        (
            "jdbc:mysql://m/dh?sslMode=VERIFY_IDENTITY",
            None,
            "mysql+pymysql://datahub@m/dh?ssl_verify_cert=true&ssl_verify_identity=true",
        ),
        # MariaDB Connector/J: no TLS unless asked; useSsl verifies fully; serverSslCert is a CA file
        (
            "jdbc:mariadb://mariadb:3306/datahub",
            "org.mariadb.jdbc.Driver",
            "mysql+pymysql://datahub@mariadb:3306/datahub",
        ),
        ("jdbc:mariadb://mdb/dh?sslMode=trust", None, "mysql+pymysql://datahub@mdb/dh?ssl_verify_cert=false"),
        (
            "jdbc:mariadb://mdb/dh?useSsl=true&trustServerCertificate=true",
            None,
            "mysql+pymysql://datahub@mdb/dh?ssl_verify_cert=false",
        ),
        (
            "jdbc:mariadb://mdb/dh?sslMode=verify-ca",
            None,
            "mysql+pymysql://datahub@mdb/dh?ssl_verify_cert=true",
        ),
        (
            "jdbc:mariadb://mdb/dh?useSsl=true&serverSslCert=/etc/ca.pem",
            None,
            "mysql+pymysql://datahub@mdb/dh?ssl_ca=%2Fetc%2Fca.pem",
        ),
        ("jdbc:mariadb://mdb/dh?useSsl=false", None, "mysql+pymysql://datahub@mdb/dh?ssl_disabled=true"),
        # a jdbc:mysql URL read by the MariaDB driver takes the MariaDB meaning (useSsl = verify-full)
        (
            "jdbc:mysql://mdb/dh?useSsl=true",
            "org.mariadb.jdbc.Driver",
            "mysql+pymysql://datahub@mdb/dh?ssl_verify_cert=true&ssl_verify_identity=true",
        ),
        # PostgreSQL: sslmode as libpq has it, ssl=true is pgjdbc's verify-full
        (
            "jdbc:postgresql://pg:5432/datahub",
            "org.postgresql.Driver",
            "postgresql+psycopg://datahub@pg:5432/datahub",
        ),
        ("jdbc:postgresql://pg/datahub", None, "postgresql+psycopg://datahub@pg/datahub"),
        (
            "jdbc:postgresql://pg/dh?sslmode=require",
            None,
            "postgresql+psycopg://datahub@pg/dh?sslmode=require",
        ),
        ("jdbc:postgresql://pg/dh?ssl=true", None, "postgresql+psycopg://datahub@pg/dh?sslmode=verify-full"),
        (
            "jdbc:postgresql://pg/dh?ssl=true&sslfactory=org.postgresql.ssl.NonValidatingFactory",
            None,
            "postgresql+psycopg://datahub@pg/dh?sslmode=require",
        ),
        (
            "jdbc:postgresql://pg/dh?sslmode=verify-ca&sslrootcert=/etc/ca.pem&ApplicationName=gms",
            None,
            "postgresql+psycopg://datahub@pg/dh?sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem",
        ),
        (
            "jdbc:postgresql://pg/dh?currentSchema=dh",
            None,
            "postgresql+psycopg://datahub@pg/dh?options=-csearch_path%3Ddh",
        ),
        ("jdbc:postgresql:datahub", None, "postgresql+psycopg://datahub@localhost/datahub"),
        ("jdbc:postgresql://[::1]:5432/datahub", None, "postgresql+psycopg://datahub@[::1]:5432/datahub"),
    ],
)
def test_jdbc_urls_become_sqlalchemy_urls(jdbc: str, driver: str | None, expected: str) -> None:
    target = jdbc_to_sqlalchemy(jdbc, None, driver)
    assert target.url == expected, target.notes
    make_url(target.url)  # SQLAlchemy reads it back


def _pymysql_tls(url: str) -> tuple[bool, bool, int | None, bool | None]:
    """What PyMySQL would do with a URL's options: (tls on, tls required, verify mode, host check)."""
    import pymysql
    from sqlalchemy.dialects.mysql.pymysql import MySQLDialect_pymysql

    _, kw = MySQLDialect_pymysql().create_connect_args(make_url(url))
    conn = pymysql.connections.Connection(defer_connect=True, **kw)
    ctx = getattr(conn, "ctx", None)
    return conn.ssl, conn._ssl_required, ctx.verify_mode if ctx else None, ctx.check_hostname if ctx else None


@pytest.mark.parametrize(
    ("params", "tls"),
    [
        ("useSSL=false", (False, False, None, None)),
        ("useSSL=true&verifyServerCertificate=false", (True, False, ssl.CERT_NONE, False)),  # PREFERRED
        ("sslMode=REQUIRED", (True, True, ssl.CERT_NONE, False)),
        ("sslMode=VERIFY_CA", (True, True, ssl.CERT_REQUIRED, False)),
    ],
)
def test_the_tls_meaning_reaches_the_driver(params: str, tls: tuple) -> None:
    """Not only the spelling: PyMySQL, given the URL, encrypts and verifies as Connector/J would."""
    assert _pymysql_tls(jdbc_to_sqlalchemy(f"jdbc:mysql://m:3306/dh?{params}").url) == tls


def test_the_user_and_the_hosts() -> None:
    # EBEAN_DATASOURCE_USERNAME wins over the URL's user; DataHub's default when neither
    assert jdbc_to_sqlalchemy("jdbc:mysql://m/dh?user=u1", "gms").url == "mysql+pymysql://gms@m/dh"
    assert jdbc_to_sqlalchemy("jdbc:mysql://m/dh?user=u1").url == "mysql+pymysql://u1@m/dh"
    assert jdbc_to_sqlalchemy("jdbc:postgresql://p/dh").url.startswith("postgresql+psycopg://datahub@")
    several = jdbc_to_sqlalchemy("jdbc:mysql:replication://m1:3306,m2:3306/datahub")
    assert several.url == "mysql+pymysql://datahub@m1:3306/datahub"
    assert any("first host" in n for n in several.notes)
    dropped = jdbc_to_sqlalchemy("jdbc:mysql://m/dh?useUnicode=yes&characterEncoding=UTF-8")
    assert any("useUnicode=yes" in n and "characterEncoding=UTF-8" in n for n in dropped.notes)


def test_a_password_in_the_jdbc_url_is_never_carried() -> None:
    for jdbc in (
        "jdbc:mysql://gms:hunter2@m:3306/dh?useSSL=true",
        "jdbc:postgresql://p/dh?user=gms&password=hunter2",
        "jdbc:mariadb://m/dh?password=hunter2&trustCertificateKeyStorePassword=hunter2",
    ):
        target = jdbc_to_sqlalchemy(jdbc)
        assert target.password_in_jdbc or "trustCertificateKeyStorePassword" in str(target.notes)
        assert "hunter2" not in target.url + str(target.notes), jdbc
        assert make_url(target.url).password is None


@pytest.mark.parametrize(
    ("jdbc", "said"),
    [
        ("mysql://m:3306/dh", "not a JDBC URL"),
        ("jdbc:sqlserver://m:1433;databaseName=dh", "not jdbc:sqlserver"),
        ("jdbc:mysql://m:port/dh", "cannot read the host"),
        ("jdbc:mysql://address=(host=m)(port=3306)/dh", "cannot read the host"),
    ],
)
def test_unreadable_jdbc_urls_are_config_errors(jdbc: str, said: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(said)):
        jdbc_to_sqlalchemy(jdbc)


# ------------------------------------------------------------------------------- the file

SECRETS = {
    "EBEAN_DATASOURCE_PASSWORD": "db-Secret-1",
    "ELASTICSEARCH_PASSWORD": "es-Secret-2",
    "AUDITOR_KAFKA_SASL_PASSWORD": "kafka-Secret-3",
}
DATAHUB_ENV = {
    "EBEAN_DATASOURCE_URL": "jdbc:mysql://gms:jdbc-Secret-4@mysql:3306/datahub?useSSL=true&password=jdbc-Secret-5",
    "EBEAN_DATASOURCE_USERNAME": "gms",
    "EBEAN_DATASOURCE_DRIVER": "com.mysql.cj.jdbc.Driver",
    "ELASTICSEARCH_HOST": "es.internal",
    "ELASTICSEARCH_PORT": "9243",
    "ELASTICSEARCH_USE_SSL": "true",
    "ELASTICSEARCH_USERNAME": "elastic",
    "ELASTICSEARCH_PATH_PREFIX": "/search",
    "KAFKA_BOOTSTRAP_SERVER": "PLAINTEXT://b1:9092,b2:9092",
    "KAFKA_SCHEMAREGISTRY_URL": "https://sr:reg-Secret-6@registry:8081",
    "SPRING_KAFKA_PROPERTIES_SECURITY_PROTOCOL": "SASL_SSL",
    "SPRING_KAFKA_PROPERTIES_SASL_MECHANISM": "PLAIN",
    "SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG": 'PlainLoginModule required username="dh" '
    'password="jaas-Secret-7";',
    "INDEX_PREFIX": "prod",
    "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME": "MCL_V",
    "METADATA_CHANGE_LOG_TIMESERIES_TOPIC_NAME": "MCL_T",
    "METADATA_CHANGE_LOG_KAFKA_CONSUMER_GROUP_ID": "dh-mae",
    "UPDATE_INDICES_CONSUMER_GROUP_SUFFIX": "ui",
    **SECRETS,
}
EVERY_SECRET = [*SECRETS.values(), "jdbc-Secret-4", "jdbc-Secret-5", "reg-Secret-6", "jaas-Secret-7"]


def test_no_secret_is_written_or_printed_and_the_file_loads(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "auditor.toml"
    result = CliRunner().invoke(app, ["config", "init", "-o", str(out)], env=DATAHUB_ENV)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    for secret in EVERY_SECRET:
        assert secret not in text and secret not in result.output, secret
    assert str(out.resolve()) in result.output  # says where it wrote
    assert "EBEAN_DATASOURCE_PASSWORD (set now" in result.output  # and where the secrets come from

    s = load_settings(out, env={})  # the project's own loader: every key known, every value valid
    assert (
        s.store_url is not None and s.store_url.get_secret_value() == "mysql+pymysql://gms@mysql:3306/datahub"
    )
    assert s.search_url == "https://es.internal:9243/search" and s.search_verify_certs
    assert s.search_username == "elastic" and s.search_password is None
    assert s.kafka_bootstrap == "b1:9092,b2:9092"
    assert (s.kafka_security_protocol, s.kafka_sasl_mechanism, s.kafka_sasl_username) == (
        "SASL_SSL",
        "PLAIN",
        "dh",
    )
    assert s.schema_registry_url == "https://registry:8081"
    assert s.index_prefix == "prod"
    assert (s.mcl_versioned_topic, s.mcl_timeseries_topic) == ("MCL_V", "MCL_T")
    assert s.mae_consumer_group == "dh-mae-ui"  # DataHub's UpdateIndicesHook group: base-suffix

    # at run time the password comes from the environment, apart from the file's URL
    run_time = load_settings(out, env={"EBEAN_DATASOURCE_PASSWORD": "db-Secret-1"})
    assert run_time.store_url is not None
    assert make_url(run_time.store_url.get_secret_value()).password == "db-Secret-1"
    assert "db-Secret-1" not in repr(run_time) + str(run_time.describe())


def test_every_commented_out_key_is_a_valid_key_too(tmp_path: Path) -> None:
    """Uncommenting any suggested line must not make the file unloadable."""
    text = render(plan({"ELASTICSEARCH_HOST": "es", "ELASTICSEARCH_USE_SSL": "true"}))
    keys = re.compile(r"^# ([a-z_]+ = .*?)(\s+# .*)?$")
    opened = "\n".join(keys.sub(r"\1", line) for line in text.splitlines())
    assert opened != text and "# ca_certs" not in opened and "# grace_seconds" not in opened
    path = tmp_path / "open.toml"
    path.write_text(opened)
    s = load_settings(path, env={})
    assert s.search_ca_certs and s.grace_seconds == 300 and s.state_file == "/var/lib/auditor/state.sqlite"


def test_unset_variables_fall_back_to_the_example_and_say_so(tmp_path: Path) -> None:
    p = plan({})
    text = render(p)
    assert (
        'url = "mysql+pymysql://datahub@mysql:3306/datahub"   # EBEAN_DATASOURCE_URL unset: example default'
        in text
    )
    assert 'bootstrap = "broker:9092"   # KAFKA_BOOTSTRAP_SERVER unset: example default' in text
    assert "ELASTICSEARCH_HOST unset: example default" in text
    assert 'consumer_group = "generic-mae-consumer-job-client"' in text
    assert any("EBEAN_DATASOURCE_URL is not set" in w for w in p.warnings)
    path = tmp_path / "defaults.toml"
    path.write_text(text)
    s = load_settings(path, env={})
    assert s.search_url == "http://opensearch:9200" and s.schema_registry_url is not None


def test_an_existing_file_is_kept_without_force(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    out = tmp_path / "auditor.toml"
    out.write_text("# mine\n")
    runner = CliRunner()
    refused = runner.invoke(app, ["config", "init", "-o", str(out)], env={"INDEX_PREFIX": "p"})
    assert refused.exit_code == 2
    assert "exists" in refused.output and "--force" in refused.output
    assert out.read_text() == "# mine\n"
    forced = runner.invoke(app, ["config", "init", "-o", str(out), "--force"], env={"INDEX_PREFIX": "p"})
    assert forced.exit_code == 0, forced.output
    assert 'index_prefix = "p"' in out.read_text()
    assert not list(tmp_path.glob("*.tmp"))
    missing = runner.invoke(app, ["config", "init", "-o", str(tmp_path / "no" / "such.toml")])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_stdout_gets_the_file_only(clean_env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["config", "init", "-o", "-"], env={"INDEX_PREFIX": "p"})
    assert result.exit_code == 0
    assert result.stdout.startswith("# auditor configuration") and "wrote" not in result.stdout
    assert "wrote stdout" in result.stderr


@pytest.mark.skipif(not shutil.which("bash"), reason="no bash")
def test_bash_completion_completes_the_new_command(tmp_path: Path) -> None:
    """`auditor --show-completion` (bash) sourced in bash completes `config` and `init`."""
    # typer detects the shell it runs in (shellingham); with detection off the option takes a name
    script = subprocess.run(
        [Path(sys.executable).with_name("auditor"), "--show-completion", "bash"],
        capture_output=True,
        text=True,
        env={**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
    )
    assert script.returncode == 0 and "complete -o default -F _auditor_completion auditor" in script.stdout
    (tmp_path / "c.sh").write_text(script.stdout)
    probe = (
        f"source {tmp_path / 'c.sh'}; "
        'COMP_WORDS=(auditor con); COMP_CWORD=1; _auditor_completion auditor; echo "${COMPREPLY[@]}"; '
        'COMP_WORDS=(auditor config i); COMP_CWORD=2; _auditor_completion auditor; echo "${COMPREPLY[@]}"'
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split("\n")[:2] == ["config", "init"], done.stdout + done.stderr


# ------------------------------------------------------- settings: the password apart from the URL


def test_the_store_password_joins_a_url_without_one(tmp_path: Path) -> None:
    url = "mysql+pymysql://gms@h:3306/dh?ssl_verify_cert=false"
    s = load_settings(env={"AUDITOR_STORE_URL": url, "EBEAN_DATASOURCE_PASSWORD": "p@ss:w/rd%"})
    assert s.store_url is not None
    parsed = make_url(s.store_url.get_secret_value())
    assert (parsed.username, parsed.password, parsed.host, parsed.port) == ("gms", "p@ss:w/rd%", "h", 3306)
    assert parsed.query == {"ssl_verify_cert": "false"}
    assert "p@ss" not in repr(s) + str(s.describe())
    assert s.describe()["store"] == "mysql+pymysql://gms:***@h:3306/dh?ssl_verify_cert=false"
    # AUDITOR_STORE_PASSWORD first; a password written in the URL itself wins over both
    s = load_settings(
        env={"AUDITOR_STORE_URL": url, "AUDITOR_STORE_PASSWORD": "a", "EBEAN_DATASOURCE_PASSWORD": "b"}
    )
    assert s.store_url is not None and make_url(s.store_url.get_secret_value()).password == "a"
    s = load_settings(
        env={"AUDITOR_STORE_URL": "mysql+pymysql://gms:own@h/dh", "EBEAN_DATASOURCE_PASSWORD": "b"}
    )
    assert s.store_url is not None and make_url(s.store_url.get_secret_value()).password == "own"
    # no URL: the password alone changes nothing; no password: the URL is as it was
    assert load_settings(env={"EBEAN_DATASOURCE_PASSWORD": "b"}).store_url is None
    s = load_settings(env={"AUDITOR_STORE_URL": url})
    assert s.store_url is not None and s.store_url.get_secret_value() == url


def test_the_store_password_from_files(tmp_path: Path) -> None:
    secret = tmp_path / "db-password"
    secret.write_text("from-a-file\n")
    config = tmp_path / "auditor.toml"
    config.write_text(f'[store]\nurl = "postgresql+psycopg://gms@pg/dh"\npassword_file = "{secret}"\n')
    s = load_settings(config, env={})
    assert s.store_url is not None and make_url(s.store_url.get_secret_value()).password == "from-a-file"
    config.write_text('[store]\nurl = "postgresql+psycopg://gms@pg/dh"\n')
    s = load_settings(config, env={"EBEAN_DATASOURCE_PASSWORD_FILE": str(secret)})
    assert s.store_url is not None and make_url(s.store_url.get_secret_value()).password == "from-a-file"
    config.write_text('[store]\npasword_file = "/run/x"\n')
    with pytest.raises(ConfigError, match=re.escape("did you mean 'store.password_file'?")):
        load_settings(config, env={})


AWS_ENV = {  # a DataHub on AWS as its Helm chart sets it up with global.*.iam.enabled
    "EBEAN_DATASOURCE_URL": "jdbc:postgresql://dh.abc1.eu-west-1.rds.amazonaws.com:5432/datahub?sslmode=require",
    "EBEAN_DATASOURCE_USERNAME": "datahub_iam",
    "EBEAN_DATASOURCE_PASSWORD": "placeholder-Secret-8",
    "EBEAN_USE_IAM_AUTH": "true",
    "EBEAN_CLOUD_PROVIDER": "aws",
    "ELASTICSEARCH_HOST": "vpc-dh.eu-west-1.es.amazonaws.com",
    "ELASTICSEARCH_PORT": "443",
    "ELASTICSEARCH_USE_SSL": "true",
    "OPENSEARCH_USE_AWS_IAM_AUTH": "true",
    "AWS_REGION": "eu-west-1",
    "KAFKA_BOOTSTRAP_SERVER": "b-1.dh.kafka.eu-west-1.amazonaws.com:9098",
    "SPRING_KAFKA_PROPERTIES_SECURITY_PROTOCOL": "SASL_SSL",
    "SPRING_KAFKA_PROPERTIES_SASL_MECHANISM": "AWS_MSK_IAM",
    "SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG": "software.amazon.msk.auth.iam.IAMLoginModule required;",
    "SCHEMA_REGISTRY_TYPE": "AWS_GLUE",
    "AWS_GLUE_SCHEMA_REGISTRY_NAME": "datahub",
    "AWS_GLUE_SCHEMA_REGISTRY_REGION": "eu-west-1",
}
CONFLUENT_ENV = {  # DataHub's docs/deploy/confluent-cloud.md
    "KAFKA_BOOTSTRAP_SERVER": "pkc-abc.eu-west-1.aws.confluent.cloud:9092",
    "SPRING_KAFKA_PROPERTIES_SECURITY_PROTOCOL": "SASL_SSL",
    "SPRING_KAFKA_PROPERTIES_SASL_MECHANISM": "PLAIN",
    "SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG": "org.apache.kafka.common.security.plain.PlainLoginModule "
    'required username="CCKEY" password="cc-Secret-9";',
    "KAFKA_SCHEMAREGISTRY_URL": "https://psrc-abc.eu-west-1.aws.confluent.cloud",
    "SPRING_KAFKA_PROPERTIES_BASIC_AUTH_USER_INFO": "SRKEY:sr-Secret-10",
}


def test_config_init_on_aws_writes_iam_everywhere_and_no_secret(tmp_path: Path) -> None:
    p = plan(AWS_ENV)
    text = render(p)
    assert "placeholder-Secret-8" not in text and not p.warnings
    assert not p.secrets  # IAM everywhere: no password to ask for (the placeholder is not one)
    path = tmp_path / "aws.toml"
    path.write_text(text)
    s = load_settings(path, env={})
    assert s.store_aws_iam and s.search_aws_iam and s.search_aws_service == "es"
    assert s.aws_region == "eu-west-1"
    assert (s.kafka_security_protocol, s.kafka_sasl_mechanism) == ("SASL_SSL", "AWS_MSK_IAM")
    assert s.kafka_sasl_username is None and s.search_username is None
    glue = (s.schema_registry_type, s.glue_registry_name, s.glue_region)
    assert glue == ("aws_glue", "datahub", "eu-west-1")
    assert s.search_url == "https://vpc-dh.eu-west-1.es.amazonaws.com:443"
    # DataHub's own variables alone (no file) mean the same
    direct = load_settings(env=AWS_ENV)
    assert direct.store_aws_iam and direct.search_aws_iam and direct.schema_registry_type == "aws_glue"
    gcp = load_settings(env={**AWS_ENV, "EBEAN_CLOUD_PROVIDER": "gcp"})
    assert not gcp.store_aws_iam


def test_config_init_on_confluent_cloud_keeps_the_keys_out(tmp_path: Path) -> None:
    p = plan(CONFLUENT_ENV)
    text = render(p)
    assert "cc-Secret-9" not in text and "sr-Secret-10" not in text
    assert {s.var for s in p.secrets} >= {"AUDITOR_KAFKA_SASL_PASSWORD", "AUDITOR_SCHEMA_REGISTRY_USER_INFO"}
    path = tmp_path / "cc.toml"
    path.write_text(text)
    run_time = {"AUDITOR_KAFKA_SASL_PASSWORD": "cc-Secret-9", "AUDITOR_SCHEMA_REGISTRY_USER_INFO": "SRKEY:x"}
    s = load_settings(path, env=run_time)
    assert (s.kafka_sasl_mechanism, s.kafka_sasl_username) == ("PLAIN", "CCKEY")
    assert s.schema_registry_user_info is not None and "SRKEY" not in repr(s)
