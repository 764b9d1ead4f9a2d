"""Running the console under uvicorn: our logging (one line per request, no banner, no
client-library chatter), the safety checks before binding, and a clean stop on SIGTERM."""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from auditor.errors import ConfigError
from auditor.serve.app import Guard


class _Visible(logging.Formatter):
    """One line per record, control characters from the data (a urn in a path) spelled out."""

    def format(self, record: logging.LogRecord) -> str:
        from auditor.reports.escape import visible

        return visible(super().format(record))


def setup_logging(debug: bool, access_log: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Visible("%(asctime)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.WARNING)
    for name in ("auditor.serve", "auditor.serve.access"):
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.INFO)
    access = logging.getLogger("uvicorn.access")
    access.handlers[:] = []
    access.propagate = True
    access.setLevel(logging.INFO if access_log else logging.CRITICAL + 1)
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.WARNING)
    if not debug:  # librdkafka's and the drivers' chatter
        for name in ("auditor.kafka", "opensearch", "elastic_transport", "urllib3", "sqlalchemy"):
            logging.getLogger(name).setLevel(
                logging.CRITICAL + 1 if name == "auditor.kafka" else logging.ERROR
            )


def read_token(token_file: Path | None) -> str | None:
    """The bearer token: from the file (its first line) or AUDITOR_SERVE_TOKEN. Never printed."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip().splitlines()[0].strip()
        except (OSError, IndexError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the token file {token_file}: {type(exc).__name__}") from None
    else:
        token = os.environ.get("AUDITOR_SERVE_TOKEN", "").strip()
    if token and len(token) < 16:
        raise ConfigError(
            "the bearer token is shorter than 16 characters", hint="e.g. `openssl rand -hex 32`"
        )
    return token or None


def check_exposure(host: str, guard: Guard) -> None:
    """Beyond loopback only with a token or a trusted proxy header: refused before binding."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback and not guard.token and not guard.proxy_header:
        raise ConfigError(
            f"--host {host} reaches beyond this machine: anyone could read the catalog",
            hint="set AUDITOR_SERVE_TOKEN or --token-file (a bearer token), or --trusted-proxy-header "
            "behind an authenticating proxy; or keep the default --host 127.0.0.1",
        )


def serve(app: Any, host: str, port: int, debug: bool, access_log: bool, announce: str) -> None:
    import uvicorn

    setup_logging(debug, access_log)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,  # ours (setup_logging): no banner, the access log through our handler
        access_log=access_log,
        proxy_headers=False,  # the peer's address is the client's: X-Forwarded-For cannot fake loopback
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=5,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    logging.getLogger("auditor.serve").info("%s", announce)
    # uvicorn stops gracefully on SIGTERM / SIGINT, then raises the signal again into the handler
    # that was there before it: a no-op here, so a stop is exit 0 (not death by signal)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    try:
        server.run()
    except SystemExit:  # uvicorn's own exit when it cannot bind (it logged why)
        pass
    if not server.started:
        raise ConfigError(f"could not listen on {host}:{port} (in use, or not an address of this machine)")
