"""Configuration precedence and secrecy."""

from __future__ import annotations

import pytest

from auditor.errors import ConfigError
from auditor.settings import load_settings, redact_url


def test_precedence_file_env_flags(tmp_path) -> None:
    config = tmp_path / "auditor.toml"
    config.write_text(
        'grace_seconds = 5\n[store]\nurl = "mysql+pymysql://a:filepw@h/db"\n'
        '[search]\nurl = "http://file:9200"\n'
    )
    env = {"AUDITOR_SEARCH_URL": "http://env:9200", "METADATA_CHANGE_LOG_VERSIONED_TOPIC_NAME": "MCL_v"}
    s = load_settings(config, env=env, grace_seconds=7)
    assert s.store_url is not None and s.store_url.get_secret_value().endswith("@h/db")
    assert s.search_url == "http://env:9200"
    assert s.mcl_versioned_topic == "MCL_v"
    assert s.grace_seconds == 7


def test_secrets_never_print() -> None:
    s = load_settings(
        env={
            "AUDITOR_STORE_URL": "postgresql+psycopg://u:hunter2@h/db",
            "AUDITOR_SEARCH_URL": "https://elastic:s3cret@es:9200",
            "AUDITOR_KAFKA_SASL_PASSWORD": "kafkapw",
        }
    )
    text = repr(s) + str(s.describe())
    for secret in ("hunter2", "s3cret", "kafkapw"):
        assert secret not in text
    assert redact_url("http://h:9200") == "http://h:9200"


def test_credentials_in_the_search_url_are_basic_auth() -> None:
    from auditor.backends.search_auth import split_userinfo as _split_userinfo

    assert _split_userinfo("https://elastic:p%40ss%3Aw@es:9200/", None, None) == (
        "https://es:9200/",
        "elastic",
        "p@ss:w",
    )
    assert _split_userinfo("https://a:b@es:9200", "given", "pw") == ("https://es:9200", "given", "pw")
    assert _split_userinfo("http://es:9200", None, None) == ("http://es:9200", None, None)
    assert _split_userinfo("https://token@es", None, None) == ("https://es", "token", "")


def test_bad_config_is_a_config_error(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[store\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(bad, env={})
    with pytest.raises(ConfigError, match="grace_seconds"):
        load_settings(env={"AUDITOR_GRACE_SECONDS": "soon"})


def test_the_documented_example_config_loads() -> None:
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "docs" / "auditor.example.toml"
    s = load_settings(example, env={})
    assert s.store_table == "metadata_aspect_v2"
    assert s.search_kind == "auto" and s.search_ca_certs
    assert s.kafka_bootstrap == "broker:9092" and s.kafka_security_protocol == "SASL_SSL"
    assert s.schema_registry_url == "http://schema-registry:8081"
    assert s.mae_consumer_group == "generic-mae-consumer-job-client"
    assert s.mcl_versioned_topic == "MetadataChangeLog_Versioned_v1"
    assert s.scan_prefetch is False
    assert load_settings(env={"AUDITOR_SCAN_PREFETCH": "true"}).scan_prefetch is True


def test_a_misspelt_key_is_named_with_the_nearest_valid_one(tmp_path) -> None:
    config = tmp_path / "typo.toml"
    config.write_text('grace_secnds = 4\n[store]\nulr = "x"\n[search]\npasword_file = "/run/x"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(config, env={})
    said = str(caught.value)
    assert "'store.ulr' (did you mean 'store.url'?)" in said
    assert "'grace_secnds' (did you mean 'grace_seconds'?)" in said
    assert "'search.pasword_file' (did you mean 'search.password_file'?)" in said
    assert caught.value.hint and "auditor.example.toml" in caught.value.hint


def test_secrets_are_read_from_files_never_echoed(tmp_path) -> None:
    db = tmp_path / "db"
    db.write_text("postgresql+psycopg://u:filepw@h/db\n")
    es = tmp_path / "es"
    es.write_text("espw")
    config = tmp_path / "auditor.toml"
    config.write_text(f'[search]\nurl = "http://h:9200"\npassword_file = "{es}"\n')
    s = load_settings(
        config, env={"AUDITOR_STORE_URL_FILE": str(db), "KAFKA_SCHEMAREGISTRY_URL_FILE": str(db)}
    )
    assert s.store_url is not None and s.store_url.get_secret_value() == "postgresql+psycopg://u:filepw@h/db"
    assert s.search_password is not None and s.search_password.get_secret_value() == "espw"
    assert "filepw" not in repr(s) + str(s.describe()) and "espw" not in repr(s)
    # DataHub's own variable names take a _FILE too; a missing file is a clear error
    s = load_settings(env={"ELASTICSEARCH_PASSWORD_FILE": str(es)})
    assert s.search_password is not None and s.search_password.get_secret_value() == "espw"
    with pytest.raises(ConfigError, match="AUDITOR_STORE_URL_FILE: cannot read the secret file"):
        load_settings(env={"AUDITOR_STORE_URL_FILE": str(tmp_path / "absent")})


def test_each_platform_s_own_variables_come_from_its_home_after_the_auditor_s_own() -> None:
    from auditor import platforms
    from auditor.settings import ENV_NAMES, env_names

    # settings.py names only the auditor's own variables; DataHub's and OpenMetadata's are theirs
    assert all(n.startswith("AUDITOR_") for names in ENV_NAMES.values() for n in names)
    homes = [m.__name__ for m in platforms.environments()]
    assert homes == ["auditor.platforms.datahub.environment", "auditor.platforms.openmetadata.environment"]
    names = env_names(platforms.environments())
    assert names["index_prefix"] == ("AUDITOR_INDEX_PREFIX", "INDEX_PREFIX", "ELASTICSEARCH_INDEX_PREFIX")
    assert names["cluster_alias"] == ("AUDITOR_CLUSTER_ALIAS", "ELASTICSEARCH_CLUSTER_ALIAS")
    env = {"INDEX_PREFIX": "dh", "AUDITOR_INDEX_PREFIX": "mine", "ELASTICSEARCH_CLUSTER_ALIAS": "om"}
    s = load_settings(env=env)
    assert (s.index_prefix, s.cluster_alias) == ("mine", "om")
    assert load_settings(env={"KAFKA_PROPERTIES_SASL_MECHANISM": "PLAIN"}).kafka_sasl_mechanism == "PLAIN"


def test_a_platform_version_that_is_no_release_is_refused_before_anything_connects() -> None:
    assert load_settings(env={"AUDITOR_PLATFORM_VERSION": "v1.7.0.1"}).platform_version == "v1.7.0.1"
    assert load_settings(env={}, platform_version="1.12.1-collate").platform_version == "1.12.1-collate"
    assert load_settings(env={}).platform_version is None
    with pytest.raises(ConfigError, match="platform_version"):
        load_settings(env={}, platform_version="latest")
