"""Settings and knobs that would do nothing are refused (exit 2) before anything connects: another
platform's setting, a setting its companions make idle, a scan or repair knob the platform does
not honour. What a platform's own server variables set is left alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from auditor import api
from auditor.core.model import Selection
from auditor.errors import ConfigError
from auditor.rebuild.request import RebuildRequest
from auditor.scan.options import ScanOptions
from auditor.settings import load_settings

# nothing listens here: a refusal that came after connecting would be a connection error instead
NOWHERE = {"store_url": "postgresql+psycopg://u@127.0.0.1:9/om", "search_url": "http://127.0.0.1:9"}
OM = {"AUDITOR_PLATFORM": "openmetadata"}


def om(env: dict[str, str] | None = None, config: Path | None = None, **flags: object):  # type: ignore[no-untyped-def]
    return load_settings(config, env={**OM, **(env or {})}, **NOWHERE, **flags)


@pytest.mark.parametrize(
    ("env", "flags", "named"),
    [
        ({"AUDITOR_KAFKA_BOOTSTRAP": "broker:9092"}, {}, "kafka_bootstrap (AUDITOR_KAFKA_BOOTSTRAP)"),
        ({}, {"mcl_versioned_topic": "MCL"}, "mcl_versioned_topic (the command line)"),
        ({"AUDITOR_TRANSPORT": "pgqueue"}, {}, "transport (AUDITOR_TRANSPORT)"),
        ({"AUDITOR_GMS_URL": "http://gms:8080"}, {}, "gms_url (AUDITOR_GMS_URL)"),
    ],
)
def test_a_datahub_setting_given_to_openmetadata_is_refused(
    env: dict[str, str], flags: dict[str, object], named: str
) -> None:
    settings = om(env, **flags)
    with pytest.raises(ConfigError) as refused:
        api.scan(settings, Selection(), ScanOptions())
    assert named in str(refused.value) and "does not use it" in str(refused.value)
    assert "--platform datahub" in (refused.value.hint or "")


def test_the_file_is_named_with_its_key(tmp_path: Path) -> None:
    config = tmp_path / "om.toml"
    config.write_text('platform = "openmetadata"\n[kafka]\nbootstrap = "broker:9092"\n')
    with pytest.raises(ConfigError, match=r"om\.toml: kafka\.bootstrap\) is a setting of datahub"):
        api.scan(load_settings(config, env={}, **NOWHERE), Selection(), ScanOptions())


def test_a_servers_own_variables_are_left_alone() -> None:
    # GMS's environment where an OpenMetadata scan runs: read for DataHub, not held against OM
    settings = om({"KAFKA_BOOTSTRAP_SERVER": "broker:9092", "INDEX_PREFIX": "dh"})
    assert settings.kafka_bootstrap == "broker:9092"
    with pytest.raises(Exception) as failed:  # it goes on to connect, and finds nothing listening
        api.scan(settings, Selection(), ScanOptions(grace=0.0, use_state=False))
    assert not isinstance(failed.value, ConfigError) or "does not use it" not in str(failed.value)


def test_an_openmetadata_setting_given_to_datahub_is_refused() -> None:
    settings = load_settings(env={}, **NOWHERE, cluster_alias="prod")
    with pytest.raises(ConfigError, match=r"cluster_alias \(the command line\) is a setting of openmetadata"):
        api.triage(settings, "urn:li:corpuser:x")


@pytest.mark.parametrize(
    ("env", "named", "says"),
    [
        ({"AUDITOR_SEARCH_CLIENT_KEY": "/k.pem"}, "search_client_key", "without a client certificate"),
        (
            {"AUDITOR_SEARCH_KIND": "elasticsearch", "AUDITOR_SEARCH_AWS_IAM": "true"},
            "search_kind",
            "OpenSearch client is used",
        ),
        ({"AUDITOR_SEARCH_AWS_SERVICE": "aoss"}, "search_aws_service", "aws_iam is off"),
        (
            {"AUDITOR_KAFKA_AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "AUDITOR_KAFKA_SASL_MECHANISM": "PLAIN"},
            "kafka_aws_role_arn",
            "MSK IAM",
        ),
        ({"AUDITOR_KAFKA_OAUTHBEARER_TOKEN_FILE": "/t"}, "kafka_oauthbearer_token_file", "OAUTHBEARER only"),
        ({"AUDITOR_GLUE_REGION": "eu-west-1"}, "glue_region", "aws_glue"),
        (
            {"AUDITOR_SCHEMA_REGISTRY_TYPE": "aws_glue", "AUDITOR_SCHEMA_REGISTRY_USER_INFO": "k:s"},
            "schema_registry_user_info",
            "AWS credentials",
        ),
    ],
)
def test_a_setting_its_companions_make_idle_is_refused(env: dict[str, str], named: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(env=env)
    assert str(refused.value).startswith(named) and says in str(refused.value), str(refused.value)
    assert "would do nothing" in str(refused.value)
    assert "k:s" not in str(refused.value)  # a secret's value is never in the message


def test_a_platforms_own_variable_is_not_held_against_a_combination() -> None:
    # DataHub's Helm chart may set the Glue region with the Confluent registry in use
    settings = load_settings(env={"AWS_GLUE_SCHEMA_REGISTRY_REGION": "eu-west-1"})
    assert settings.glue_region == "eu-west-1" and settings.schema_registry_type == "kafka"


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (ScanOptions(settle=2.0), "--settle"),
        (ScanOptions(sample_window=1.0), "--sample-window"),
        (ScanOptions(confirm=30.0), "--confirm"),
    ],  # fmt: skip
)
def test_scan_knobs_openmetadata_does_not_honour_are_refused(options: ScanOptions, flag: str) -> None:
    with pytest.raises(ConfigError) as refused:
        api.scan(om(), Selection(), options)
    assert str(refused.value) == f"{flag} is not supported on OpenMetadata" and refused.value.hint


def test_every_platform_honours_the_repair_knobs_its_guard_gives() -> None:
    """Lock, checkpoint, --resume and --break-stale-lock are the shared guard's (rebuild/guard.py),
    OpenMetadata's repair included (tests/integration/test_om_repair_guard.py)."""
    from auditor import platforms
    from auditor.platforms.base import REPAIR_KNOBS

    for name in ("datahub", "openmetadata"):
        assert platforms.get(name).repair_knobs == frozenset(REPAIR_KNOBS), name


def test_the_command_line_refuses_before_connecting() -> None:
    command = [sys.executable, "-m", "auditor.cli", "scan", "--platform", "openmetadata",
               "--kafka", "broker:9092", "--store-url", NOWHERE["store_url"],
               "--search-url", NOWHERE["search_url"]]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: kafka_bootstrap (the command line) is a setting of datahub")


@pytest.mark.parametrize("platform", ["datahub", "openmetadata"])
def test_resume_with_full_is_refused_rather_than_ignored(platform: str) -> None:
    """--full builds a fresh index each run and keeps no checkpoint: --resume would do nothing."""
    settings = load_settings(env={}, platform=platform, **NOWHERE)
    request = RebuildRequest("reindex", selection=Selection(entity_types=("dataset",)), apply=True, full=True,
                             resume=True)  # fmt: skip
    with pytest.raises(ConfigError, match="^--resume continues a targeted repair"):
        api.rebuild(settings, request)
