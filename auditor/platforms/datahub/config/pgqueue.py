"""`auditor config init` on a DataHub without Kafka: `DATAHUB_MESSAGING_TRANSPORT=pgqueue`.

DataHub then keeps its change log and its consumers' offsets in PostgreSQL tables
(`${DATAHUB_PGQUEUE_SCHEMA:queue}.${DATAHUB_PGQUEUE_TABLE_PREFIX:metadata_queue}_*`, in the
metadata database), and GMS serves the schema registry itself (`/schema-registry/api`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from auditor.platforms.datahub.config.init import _Planning


def transport(b: _Planning) -> None:
    """`transport` and [pgqueue]; [kafka]'s entries commented out when there is no Kafka."""
    from auditor.platforms.datahub.config.init import Entry

    value = (b.get("DATAHUB_MESSAGING_TRANSPORT") or "kafka").lower()
    if value not in ("kafka", "pgqueue"):
        b.warnings.append(
            f"DATAHUB_MESSAGING_TRANSPORT={value!r} is neither kafka nor pgqueue: kafka assumed"
        )
        value = "kafka"
    if value == "kafka":
        return
    b.sections[""].append(Entry("transport", "pgqueue", "DATAHUB_MESSAGING_TRANSPORT"))
    for e in b.sections["kafka"]:
        if e.value is not None:
            e.example, e.value = e.value, None
        e.source = "DATAHUB_MESSAGING_TRANSPORT=pgqueue: no Kafka"
    notes = ["the queue's tables are read in the store's database (DataHub's own)"]
    b.sections["pgqueue"].append(
        Entry(
            "url",
            None,
            "the store's database unless set",
            notes,
            example="postgresql+psycopg://auditor@pg/datahub",
        )
    )
    for key, var, default in (
        ("schema", "DATAHUB_PGQUEUE_SCHEMA", "queue"),
        ("table_prefix", "DATAHUB_PGQUEUE_TABLE_PREFIX", "metadata_queue"),
    ):
        given = b.get(var)
        b.sections["pgqueue"].append(
            Entry(key, given or default, var if given else f"{var} unset: DataHub's default")
        )
    if not b.get("KAFKA_SCHEMAREGISTRY_URL"):
        for e in b.sections["schema_registry"]:
            e.notes.append("on pgQueue GMS serves the registry: http://GMS:8080/schema-registry/api")
