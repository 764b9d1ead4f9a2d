"""`auditor config init --platform openmetadata`: OpenMetadata's server variables read as its
openmetadata.yaml reads them (defaults, DB_PARAMS, the older DB_USE_SSL, RDS IAM through
`awsRegion`, SigV4 search), the file loads with the auditor's own loader, no secret in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.errors import ConfigError
from auditor.platforms.openmetadata.config_init import plan, render
from auditor.settings import load_settings


def settings_of(env: dict[str, str], tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "om.toml"
    path.write_text(render(plan(env)))
    return load_settings(path, env={})


def test_nothing_set_is_openmetadata_own_defaults_with_warnings(tmp_path: Path) -> None:
    p = plan({})
    s = settings_of({}, tmp_path)
    assert s.platform == "openmetadata" and s.cluster_alias == ""
    url = s.store_url.get_secret_value() if s.store_url else ""
    assert url.startswith("mysql+pymysql://openmetadata_user@localhost:3306/openmetadata_db")
    assert s.search_url == "http://localhost:9200"
    assert [x.var for x in p.secrets] == ["DB_USER_PASSWORD"]
    assert any("DB_HOST" in w for w in p.warnings) and any("ELASTICSEARCH_HOST" in w for w in p.warnings)


def test_postgres_with_tls_params_user_and_alias(tmp_path: Path) -> None:
    env = {
        "DB_SCHEME": "postgresql",
        "DB_HOST": "pg.internal",
        "OM_DATABASE": "om",
        "DB_USER": "om_reader",
        "DB_USER_PASSWORD": "Hunter-2-Secret",
        "DB_PARAMS": "allowPublicKeyRetrieval=true&sslmode=verify-full",
        "ELASTICSEARCH_HOST": "es.internal",
        "ELASTICSEARCH_SCHEME": "https",
        "ELASTICSEARCH_PORT": "9243",
        "ELASTICSEARCH_USER": "om",
        "ELASTICSEARCH_PASSWORD": "Es-Secret-9",
        "ELASTICSEARCH_CLUSTER_ALIAS": "prod",
        "ELASTICSEARCH_TRUST_STORE_PATH": "/conf/truststore.jks",
    }
    text = render(plan(env))
    assert "Hunter-2-Secret" not in text and "Es-Secret-9" not in text
    assert "export its CA as PEM" in text
    s = settings_of(env, tmp_path)
    url = s.store_url.get_secret_value() if s.store_url else ""
    assert url == "postgresql+psycopg://om_reader@pg.internal:5432/om?sslmode=verify-full"
    assert (s.search_url, s.search_username, s.cluster_alias) == ("https://es.internal:9243", "om", "prod")
    assert {x.var for x in plan(env).secrets} == {"DB_USER_PASSWORD", "ELASTICSEARCH_PASSWORD"}


def test_older_release_db_use_ssl_as_connector_j_reads_it(tmp_path: Path) -> None:
    # useSSL=false (OpenMetadata's default) is TLS off; useSSL=true is Connector/J's PREFERRED
    plain = settings_of({"DB_HOST": "mysql"}, tmp_path).store_url
    assert plain is not None and plain.get_secret_value().endswith("?ssl_disabled=true")
    url = settings_of({"DB_HOST": "mysql", "DB_USE_SSL": "true"}, tmp_path).store_url
    assert url is not None and "ssl_disabled" not in url.get_secret_value()
    notes = plan({"DB_USE_SSL": "true"}).sections["store"][0].notes
    assert any("sslMode=PREFERRED" in n for n in notes)


def test_rds_iam_from_db_params_and_sigv4_search(tmp_path: Path) -> None:
    env = {
        "DB_SCHEME": "postgresql",
        "DB_HOST": "om.abc.eu-west-1.rds.amazonaws.com",
        "DB_USER": "om",
        "DB_USER_PASSWORD": "dummy",
        "DB_PARAMS": "allowPublicKeyRetrieval=true&sslmode=require&awsRegion=eu-west-1",
        "ELASTICSEARCH_HOST": "vpc-om.eu-west-1.es.amazonaws.com",
        "ELASTICSEARCH_PORT": "443",
        "ELASTICSEARCH_SCHEME": "https",
        "SEARCH_AWS_IAM_AUTH_ENABLED": "true",
        "SEARCH_AWS_SERVICE_NAME": "aoss",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    p = plan(env)
    assert p.secrets == [] and not p.warnings  # a token, not a password; SigV4, no user
    s = settings_of(env, tmp_path)
    assert s.store_aws_iam and s.search_aws_iam and s.search_aws_service == "aoss"
    assert s.aws_region == "eu-west-1" and "awsRegion" not in (
        s.store_url.get_secret_value() if s.store_url else ""
    )
    role = plan({**env, "DB_PARAMS": env["DB_PARAMS"] + "&assumeRoleArn=arn:aws:iam::1:role/om"})
    assert any("assumeRoleArn" in w for w in role.warnings)


@pytest.mark.parametrize(
    ("more", "region"),
    [
        ({"AWS_REGION": "us-west-2"}, "us-west-2"),
        ({"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "ca-central-1"}, "ca-central-1"),  # its first
        ({"AWS_DEFAULT_REGION": "eu-west-1"}, "eu-west-1"),
        ({}, "eu-west-1"),  # only the database's region: it serves both
    ],
)
def test_the_aws_region_is_read_in_openmetadata_s_order(
    tmp_path: Path, more: dict[str, str], region: str
) -> None:
    env = {"DB_SCHEME": "postgresql", "DB_HOST": "om.rds", "DB_USER": "om",
           "DB_PARAMS": "awsRegion=eu-west-1", **more}  # fmt: skip
    p = plan(env)
    assert settings_of(env, tmp_path).aws_region == region
    said = [w for w in p.warnings if "one [aws] region serves both" in w]
    if region == "eu-west-1":
        assert said == []
    else:  # the database's region and the environment's differ: said, naming both
        assert len(said) == 1 and region in said[0] and "awsRegion=eu-west-1" in said[0], p.warnings


def test_sigv4_search_without_any_region_is_said_and_the_entry_left_commented(tmp_path: Path) -> None:
    env = {
        "ELASTICSEARCH_SCHEME": "https",
        "ELASTICSEARCH_PORT": "443",
        "SEARCH_AWS_IAM_AUTH_ENABLED": "true",
    }
    p = plan(env)
    assert "SEARCH_AWS_IAM_AUTH_ENABLED is on but AWS_DEFAULT_REGION is not set" in p.warnings
    assert "# region = " in render(p) and "AWS_DEFAULT_REGION unset: set it" in render(p)


def test_a_port_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(ConfigError, match="DB_PORT"):
        plan({"DB_PORT": "33o6"})
    with pytest.raises(ConfigError, match="ELASTICSEARCH_PORT"):
        plan({"ELASTICSEARCH_PORT": "nine"})
