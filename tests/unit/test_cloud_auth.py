"""How the auditor authenticates to a search cluster and to MSK (auditor/backends/search_auth.py,
kafka_auth.py), and the SigV4 checker the integration tests put in front of OpenSearch
(sandbox/aws_sigv4.py): the checker must refuse what AWS refuses, or the tests through it prove
nothing."""

from __future__ import annotations

import base64

import pytest

from auditor.backends.search_auth import AwsSigner, SearchAuth, api_key_header, cloud_url, from_settings
from auditor.errors import AccessRefused, ConfigError
from auditor.settings import load_settings
from sandbox.aws_sigv4 import Key, Refused, Verifier

AKID, SECRET = "AKIAAUDITORTEST00001", "secret-key-for-tests-only-0000000000000"
ENV = {"AWS_ACCESS_KEY_ID": AKID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_CONFIG_FILE": "/nonexistent",
       "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent", "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)


def signed(signer: AwsSigner, method: str, target: str, body: bytes = b"") -> dict[str, str]:
    return {**signer.sign(method, f"http://127.0.0.1:9200{target}", body or None), "Host": "127.0.0.1:9200"}


def test_a_signature_made_by_the_auditor_is_accepted_and_every_tampering_refused(aws_env: None) -> None:
    verifier = Verifier("eu-west-1", "es")
    verifier.add(Key(AKID, SECRET))
    signer = AwsSigner("eu-west-1", "es")
    target = "/datasetindex_v2/_search?filter_path=hits.hits._id%2Chits.total&size=10"
    body = b'{"query":{"match_all":{}}}'
    headers = signed(signer, "POST", target, body)
    assert verifier.check_header("POST", target, headers, body).access_key == AKID
    with pytest.raises(Refused, match="does not match what was computed"):
        verifier.check_header("POST", target, headers, body + b" ")
    with pytest.raises(Refused, match="signature we calculated does not match"):
        verifier.check_header("POST", target.replace("size=10", "size=11"), headers, body)
    with pytest.raises(Refused, match="signature we calculated does not match"):
        verifier.check_header("GET", target, headers, body)


def test_a_wrong_secret_region_or_service_is_refused_in_aws_words(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = Verifier("eu-west-1", "es")
    verifier.add(Key(AKID, "another-secret"))
    with pytest.raises(Refused, match="signature we calculated does not match"):
        verifier.check_header("GET", "/", signed(AwsSigner("eu-west-1", "es"), "GET", "/"), b"")
    verifier.add(Key(AKID, SECRET))
    with pytest.raises(Refused, match="valid region"):
        verifier.check_header("GET", "/", signed(AwsSigner("us-east-1", "es"), "GET", "/"), b"")
    with pytest.raises(Refused, match="correct service"):
        verifier.check_header("GET", "/", signed(AwsSigner("eu-west-1", "aoss"), "GET", "/"), b"")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-1")
    verifier.add(Key(AKID, SECRET, token="session-1", expired=True))
    with pytest.raises(Refused, match="is expired"):
        verifier.check_header("GET", "/", signed(AwsSigner("eu-west-1", "es"), "GET", "/"), b"")


def test_serverless_requires_the_payload_hash_and_gets_it(aws_env: None) -> None:
    verifier = Verifier("eu-west-1", "aoss")
    verifier.add(Key(AKID, SECRET))
    headers = signed(AwsSigner("eu-west-1", "aoss"), "POST", "/x/_search", b"{}")
    assert "X-Amz-Content-SHA256" in headers
    verifier.check_header("POST", "/x/_search", headers, b"{}")
    del headers["X-Amz-Content-SHA256"]
    with pytest.raises(Refused):
        verifier.check_header("POST", "/x/_search", headers, b"{}")


def test_a_denied_action_names_the_action_and_the_refusal_says_what_to_grant(aws_env: None) -> None:
    verifier = Verifier("eu-west-1", "es")
    key = verifier.add(
        Key(AKID, SECRET, arn="arn:aws:iam::123456789012:role/auditor", denied=frozenset({"es:ESHttpPost"}))
    )
    with pytest.raises(Refused) as refused:
        verifier.allow(key, "es:ESHttpPost")
    auth = SearchAuth(aws=AwsSigner("eu-west-1", "es"))
    error = auth.refused("https://search", "reading datasetindex_v2", 403, refused.value.message)
    assert isinstance(error, AccessRefused) and error.exit_code == 3
    assert "es:ESHttpPost" in (error.hint or "") and "...0001" in str(error)
    assert SECRET not in str(error) + (error.hint or "")
    expired = auth.refused(
        "https://search", "GET /", 403, "The security token included in the request is expired"
    )
    assert "expired" in (expired.hint or "")
    bad = auth.refused("https://search", "GET /", 403, "The request signature we calculated does not match")
    assert (
        "eu-west-1" in (bad.hint or "")
        and "aws_service" in (bad.hint or "")
        and "secret key" in (bad.hint or "")
    )


def test_api_key_bearer_and_cloud_id() -> None:
    encoded = base64.b64encode(b"key-id-1:key-secret").decode()
    assert api_key_header("key-id-1:key-secret") == f"ApiKey {encoded}"
    assert api_key_header(encoded) == f"ApiKey {encoded}"
    auth = SearchAuth(api_key=encoded)
    assert auth.identity() == "API key key-id-1" and "key-secret" not in repr(auth)
    assert auth.elasticsearch_kwargs() == {"api_key": encoded}
    assert SearchAuth(bearer="tok").headers("GET", "/") == {"Authorization": "Bearer tok"}
    cloud = "prod:" + base64.b64encode(b"eu-west-1.aws.found.io:443$abc123$kib456").decode()
    assert cloud_url(cloud) == "https://abc123.eu-west-1.aws.found.io:443"
    with pytest.raises(ConfigError, match="cloud_id"):
        cloud_url("prod:not-base64!")
    with pytest.raises(ConfigError, match="choose one"):
        SearchAuth(basic=("u", "p"), api_key=encoded)


def test_settings_choose_the_method_and_never_show_a_secret(aws_env: None) -> None:
    env = {"AUDITOR_SEARCH_URL": "https://s", "OPENSEARCH_USE_AWS_IAM_AUTH": "1", "AWS_REGION": "eu-west-1"}
    settings = load_settings(env=env)
    assert settings.search_aws_iam and settings.aws_region == "eu-west-1"
    assert from_settings(settings).method == "aws-sigv4 (es)"
    assert "AWS SigV4" in settings.describe()["search"]
    keyed = load_settings(
        env={"AUDITOR_SEARCH_CLOUD_ID": "prod:x", "AUDITOR_SEARCH_API_KEY": "id:very-secret"}
    )
    assert "very-secret" not in repr(keyed) + str(keyed.describe())
    with pytest.raises(ConfigError, match="region"):
        from_settings(load_settings(env={"AUDITOR_SEARCH_URL": "https://s", "AUDITOR_SEARCH_AWS_IAM": "1",
                                         "AWS_REGION": "", "AWS_DEFAULT_REGION": ""}))  # fmt: skip


def test_presigned_tokens_are_checked_too(aws_env: None) -> None:
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    verifier = Verifier("eu-west-1", "kafka-cluster")
    verifier.add(Key(AKID, SECRET))
    request = AWSRequest(
        method="GET", url="https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect"
    )
    SigV4QueryAuth(Credentials(AKID, SECRET), "kafka-cluster", "eu-west-1", expires=900).add_auth(request)
    verifier.check_presigned(request.url, action="kafka-cluster:Connect")
    with pytest.raises(Refused, match="signature"):
        verifier.check_presigned(request.url.replace("eu-west-1.amazonaws", "eu-west-2.amazonaws"))


def test_the_msk_iam_token_is_a_presigned_connect_url_with_an_absolute_expiry(aws_env: None) -> None:
    """What MSK checks, checked with botocore: the token AWS's signer makes through the auditor's
    provider is a SigV4 query-signed `kafka-cluster:Connect` URL for the region, and librdkafka is
    given its expiry in epoch seconds (not MSK's milliseconds)."""
    import time

    from auditor.backends.kafka_auth import msk_iam_token, oauth_settings

    settings = load_settings(env={"AUDITOR_KAFKA_SASL_MECHANISM": "AWS_MSK_IAM", "AWS_REGION": "eu-west-1"})
    conf = oauth_settings(settings)
    assert conf["sasl.mechanism"] == "OAUTHBEARER" and conf["security.protocol"] == "SASL_SSL"
    token, expiry, _ = conf["oauth_cb"]("")
    assert time.time() < expiry <= time.time() + 901
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    verifier = Verifier("eu-west-1", "kafka-cluster")
    verifier.add(Key(AKID, SECRET))
    assert verifier.check_presigned(url, action="kafka-cluster:Connect").access_key == AKID
    wrong, _, _ = msk_iam_token("eu-west-2")("")
    with pytest.raises(Refused, match="region"):
        verifier.check_presigned(base64.urlsafe_b64decode(wrong + "=" * (-len(wrong) % 4)).decode())
    with pytest.raises(ConfigError, match="region"):
        oauth_settings(load_settings(env={"AUDITOR_KAFKA_SASL_MECHANISM": "AWS_MSK_IAM", "AWS_REGION": "",
                                          "AWS_DEFAULT_REGION": ""}))  # fmt: skip


def test_no_aws_credentials_is_one_clear_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.backends.kafka_auth import oauth_settings

    chain = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ROLE_ARN",
             "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")  # fmt: skip
    for name in chain:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    settings = load_settings(env={"AUDITOR_KAFKA_SASL_MECHANISM": "AWS_MSK_IAM", "AWS_REGION": "eu-west-1"})
    with pytest.raises(AccessRefused, match="MSK IAM token") as refused:
        oauth_settings(settings)
    assert "kafka-cluster:Connect" in (refused.value.hint or "")
    with pytest.raises(AccessRefused, match="no AWS credentials"):
        AwsSigner("eu-west-1", "es")


def test_a_glue_refusal_names_the_identity_and_the_permission(aws_env: None) -> None:
    """Through the SigV4-checking Glue stand-in: a key it does not know is refused, and the error
    names the key (its last four characters), the operation and glue:GetSchemaVersion."""
    import os
    import uuid

    from auditor.backends.registry import GlueSchemas, Registry
    from sandbox.glue import GlueRegistry

    verifier = Verifier("eu-west-1", "glue")
    verifier.add(Key("AKIASOMEONEELSE00099", SECRET))
    with GlueRegistry(verifier) as glue:
        os.environ["AWS_ENDPOINT_URL_GLUE"] = glue.url
        try:
            schemas = GlueSchemas(Registry(kind="aws_glue", glue_name="datahub", glue_region="eu-west-1"))
            with pytest.raises(AccessRefused) as refused:
                schemas.definition(uuid.uuid4())
        finally:
            del os.environ["AWS_ENDPOINT_URL_GLUE"]
    assert "...0001" in str(refused.value) and "GetSchemaVersion" in str(refused.value)
    assert "glue:GetSchemaVersion" in (refused.value.hint or "") and SECRET not in str(refused.value)


def test_a_failing_credential_chain_names_its_source_and_what_to_check() -> None:
    from botocore.exceptions import ClientError, ProfileNotFound

    from auditor.backends.aws_chain import chain_source, resolve

    irsa = {"AWS_ROLE_ARN": "arn:aws:iam::1:role/auditor", "AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/token"}
    assert chain_source(irsa) == "web identity (IRSA) for role arn:aws:iam::1:role/auditor"
    assert chain_source({"AWS_PROFILE": "ops"}) == "profile ops"
    assert chain_source({**irsa, "AWS_ACCESS_KEY_ID": "AKIA"}) == "the environment's access key"

    class Failing:
        def __init__(self, error: Exception) -> None:
            self.error = error

        def get_credentials(self) -> None:
            raise self.error

    denied = ClientError(
        {
            "Error": {
                "Code": "AccessDenied",
                "Message": "Not authorized to perform sts:AssumeRoleWithWebIdentity",
            }
        },
        "AssumeRoleWithWebIdentity",
    )
    with pytest.MonkeyPatch.context() as mp:
        for k, v in irsa.items():
            mp.setenv(k, v)
        mp.delenv("AWS_ACCESS_KEY_ID", raising=False)
        with pytest.raises(AccessRefused) as refused:
            resolve(Failing(denied), "search cluster request signing")
    assert "role arn:aws:iam::1:role/auditor were refused (AccessDenied" in str(refused.value)
    assert "trust policy" in (refused.value.hint or "")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_PROFILE", "nope")
        mp.delenv("AWS_ACCESS_KEY_ID", raising=False)
        mp.delenv("AWS_ROLE_ARN", raising=False)
        with pytest.raises(AccessRefused, match="profile nope failed"):
            resolve(Failing(ProfileNotFound(profile="nope")), "store db: an RDS IAM token")


def test_a_signer_crosses_to_a_reader_process_as_its_region_and_service(aws_env: None) -> None:
    """A reader process (search_readers.py) gets the signer pickled: the region and service, the
    credentials resolved again there by the same chain (a boto session does not pickle)."""
    import pickle

    again = pickle.loads(pickle.dumps(AwsSigner("eu-west-1", "aoss")))
    assert (again.region, again.service) == ("eu-west-1", "aoss")
    assert again.frozen().access_key == AKID
    verifier = Verifier("eu-west-1", "aoss")
    verifier.add(Key(AKID, SECRET))
    assert verifier.check_header("GET", "/", signed(again, "GET", "/"), b"").access_key == AKID
