"""Opening the shared backends from the settings: the search cluster, Kafka's client settings and
the scan state (each platform opens its own store and event log: platforms/*/backends, connect)."""

from __future__ import annotations

import logging
from typing import Any

from auditor.backends import search_auth
from auditor.backends.kafka_auth import oauth_settings
from auditor.backends.search import SearchIndex
from auditor.backends.search_auth import cloud_url
from auditor.backends.state import ScanState
from auditor.errors import ConfigError
from auditor.settings.model import Settings

WEAKER = "verdicts rest on time and history only (weaker)"


def kafka_config(settings: Settings) -> dict[str, Any]:
    """librdkafka settings from ours (security options included, never logged)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": settings.kafka_bootstrap,
        # librdkafka's own chatter goes to a logger (shown with --debug), not to stderr
        "logger": logging.getLogger("auditor.kafka"),
        # the first backoff 10 ms, not 100: librdkafka waits it before the connections a cold
        # process makes after the bootstrap one (measured on the local broker: a metadata
        # request, an offset fetch and the watermarks 130-142 ms -> 55-83 ms); it still doubles on
        # each failure up to reconnect.backoff.max.ms (10 s) against a broker that is down
        "reconnect.backoff.ms": 10,
    }
    if settings.kafka_security_protocol:
        conf["security.protocol"] = settings.kafka_security_protocol
    if settings.kafka_sasl_mechanism:
        conf["sasl.mechanism"] = settings.kafka_sasl_mechanism
    if settings.kafka_sasl_username:
        conf["sasl.username"] = settings.kafka_sasl_username
    if settings.kafka_sasl_password:
        conf["sasl.password"] = settings.kafka_sasl_password.get_secret_value()
    if settings.kafka_ssl_ca_location:
        conf["ssl.ca.location"] = settings.kafka_ssl_ca_location
    if settings.kafka_ssl_certificate_location:  # mTLS
        conf["ssl.certificate.location"] = settings.kafka_ssl_certificate_location
    if settings.kafka_ssl_key_location:
        conf["ssl.key.location"] = settings.kafka_ssl_key_location
    if settings.kafka_ssl_key_password:
        conf["ssl.key.password"] = settings.kafka_ssl_key_password.get_secret_value()
    if not settings.kafka_ssl_endpoint_identification:
        conf["ssl.endpoint.identification.algorithm"] = "none"
    oauth = oauth_settings(settings)  # AWS_MSK_IAM, or a token file: OAUTHBEARER with a provider
    if oauth:
        conf.update(oauth)
        if settings.kafka_security_protocol:  # the protocol given wins over MSK's SASL_SSL
            conf["security.protocol"] = settings.kafka_security_protocol
    return conf


def open_search(settings: Settings) -> SearchIndex:
    url = settings.search_url or (cloud_url(settings.search_cloud_id) if settings.search_cloud_id else None)
    if not url:
        raise ConfigError(
            "no search cluster configured",
            hint="pass --search-url or set AUDITOR_SEARCH_URL (or AUDITOR_SEARCH_CLOUD_ID for Elastic Cloud)",
        )
    return SearchIndex(
        url,
        settings.search_kind,
        auth=search_auth.from_settings(settings),
        verify_certs=settings.search_verify_certs,
        ca_certs=settings.search_ca_certs,
        timeout=settings.search_timeout_seconds,
        retries=settings.search_retries,
    )


def open_state(settings: Settings, use: bool = True) -> ScanState:
    """The state file (or a throw-away in-memory state when `use` is false)."""
    return ScanState(settings.state_file if use else None)
