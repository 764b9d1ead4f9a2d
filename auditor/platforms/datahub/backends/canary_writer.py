"""Writing the probe's canary: through GMS's REST API, or GMS's own steps (row, then MCL).

The canary is the one entity the auditor ever writes aspects for, and only with --apply.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import create_engine, text

from auditor.errors import AccessRefused, BackendUnavailable
from auditor.redact import redact_url

PROBE_ACTOR = "urn:li:corpuser:__auditor_probe"


class GmsCanaryWriter:
    """DataHub GMS's Rest.li endpoints: `POST /aspects?action=ingestProposal`, `/entities?action=delete`."""

    path = "gms"

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
        self.url, self.token, self.timeout = url.rstrip("/"), token, timeout
        self.description = redact_url(url)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "X-RestLi-Protocol-Version": "2.0.0"},
        )
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                raw = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise AccessRefused(
                    f"GMS {self.description} refused {path} ({exc.code})",
                    hint="pass a token with write access (--gms-token / DATAHUB_GMS_TOKEN)",
                ) from None
            raise BackendUnavailable(f"GMS {self.description}: {path} failed: HTTP {exc.code}") from None
        except Exception as exc:
            raise BackendUnavailable(f"GMS {self.description}: {path} failed: {exc}") from None
        return json.loads(raw) if raw else None

    def write(self, urn: str, entity_type: str, aspect: str, value: dict[str, Any]) -> dict[str, Any]:
        """Upsert one aspect as any client of GMS does; returns what we know of its system metadata."""
        proposal = {
            "entityType": entity_type,
            "entityUrn": urn,
            "changeType": "UPSERT",
            "aspectName": aspect,
            "aspect": {"contentType": "application/json", "value": json.dumps(value)},
        }
        self._post("/aspects?action=ingestProposal", {"proposal": proposal})
        return {}

    def remove(self, urn: str) -> None:
        self._post("/entities?action=delete", {"urn": urn})

    def close(self) -> None:
        return None


class StoreCanaryWriter:
    """GMS's own steps where no GMS runs (the sandbox): the row in one transaction, then the MCL.

    Like GMS: the old version 0 is archived as max(version) + 1, the key aspect is written with
    the first write, and the MCL is produced (delivery awaited) after the commit.
    """

    path = "store"

    def __init__(self, url: str, table: str, producer: Any, builder: Any) -> None:
        self.engine = create_engine(url, pool_pre_ping=True)
        self.table, self.producer, self.builder = table, producer, builder
        self.description = redact_url(url)

    def _upsert(self, urn: str, aspect: str, value: dict[str, Any], sm: dict[str, Any]) -> None:
        t = self.table
        params = {
            "urn": urn,
            "aspect": aspect,
            "metadata": json.dumps(value),
            "sm": json.dumps(sm),
            "actor": PROBE_ACTOR,
            # naive UTC, as GMS stores `createdon`
            "createdon": datetime.fromtimestamp(sm["lastObserved"] / 1000, tz=UTC).replace(tzinfo=None),
        }
        with self.engine.begin() as conn:
            top = conn.execute(
                text(f"SELECT MAX(version) FROM {t} WHERE urn = :urn AND aspect = :aspect"), params
            ).scalar()
            if top is not None:
                conn.execute(
                    text(
                        f"INSERT INTO {t} (urn, aspect, version, metadata, systemmetadata, createdon, "
                        "createdby) "
                        f"SELECT urn, aspect, :v, metadata, systemmetadata, createdon, createdby FROM {t} "
                        "WHERE urn = :urn AND aspect = :aspect AND version = 0"
                    ),
                    {**params, "v": int(top) + 1},
                )
                conn.execute(
                    text(f"DELETE FROM {t} WHERE urn = :urn AND aspect = :aspect AND version = 0"), params
                )
            conn.execute(
                text(
                    f"INSERT INTO {t} (urn, aspect, version, metadata, systemmetadata, createdon, createdby) "
                    "VALUES (:urn, :aspect, 0, :metadata, :sm, :createdon, :actor)"
                ),
                params,
            )

    def _publish(
        self,
        urn: str,
        aspect: str,
        value: dict[str, Any] | None,
        sm: dict[str, Any],
        change: str,
        previous: str | None = None,
    ) -> None:
        from auditor.core.records import AspectRow

        row = AspectRow(aspect, json.dumps(value) if value is not None else "{}", json.dumps(sm), None)
        record = self.builder.record(urn, row)
        props = {
            k: v
            for k, v in (record["systemMetadata"].get("properties") or {}).items()
            if k != "forceIndexing"
        }
        record["systemMetadata"]["properties"] = props or None
        record["changeType"] = change
        record["created"]["actor"] = PROBE_ACTOR
        if value is None:
            record["aspect"] = None
        if previous is not None:  # a DELETE carries what it removed (the consumer needs it)
            record["previousAspectValue"] = {"value": previous.encode(), "contentType": "application/json"}
        self.producer.produce(urn, record)
        done = self.producer.flush(30)
        if done.failed:
            raise BackendUnavailable(f"Kafka: the canary's MCL was not delivered: {done.failed[0][1]}")

    def write(
        self,
        urn: str,
        entity_type: str,
        aspect: str,
        value: dict[str, Any],
        key: tuple[str, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        now = int(time.time() * 1000)
        if key is not None:
            with self.engine.connect() as conn:
                has_key = conn.execute(
                    text(f"SELECT 1 FROM {self.table} WHERE urn = :urn AND aspect = :aspect AND version = 0"),
                    {"urn": urn, "aspect": key[0]},
                ).first()
            if has_key is None:
                key_sm = {"lastObserved": now, "runId": "auditor-probe"}
                self._upsert(urn, key[0], key[1], key_sm)
                self._publish(urn, key[0], key[1], key_sm, "UPSERT")
        sm = {"lastObserved": now, "runId": "auditor-probe"}
        self._upsert(urn, aspect, value, sm)
        self._publish(urn, aspect, value, sm, "UPSERT")
        return sm

    def remove(self, urn: str, key_aspect: str) -> None:
        """Delete every row of the canary, then the key aspect's DELETE MCL (the consumer drops its docs)."""
        with self.engine.begin() as conn:
            previous = conn.execute(
                text(
                    f"SELECT metadata FROM {self.table} WHERE urn = :urn AND aspect = :aspect AND version = 0"
                ),
                {"urn": urn, "aspect": key_aspect},
            ).scalar()
            conn.execute(text(f"DELETE FROM {self.table} WHERE urn = :urn"), {"urn": urn})
        sm = {"lastObserved": int(time.time() * 1000), "runId": "auditor-probe"}
        self._publish(urn, key_aspect, None, sm, "DELETE", previous=previous or "{}")

    def close(self) -> None:
        self.producer.flush(10)
        self.engine.dispose()
