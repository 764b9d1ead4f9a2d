"""DataHub's names for the projections: index names and document ids, in one place."""

from __future__ import annotations

import base64
import hashlib

# DataHub's change-log topics and the MAE consumer's group: the configuration's defaults (each can
# be configured), kept with the settings' other defaults (auditor/settings/model.py)
from auditor.settings.model import MAE_CONSUMER_GROUP as MAE_CONSUMER_GROUP
from auditor.settings.model import MCL_TIMESERIES_TOPIC as MCL_TIMESERIES_TOPIC
from auditor.settings.model import MCL_VERSIONED_TOPIC as MCL_VERSIONED_TOPIC

# the platform's name, as its findings carry it (`details.platform`) and `--platform` spells it
PLATFORM = "datahub"

ENTITY_INDEX_SUFFIX = "index_v2"
SYSTEM_METADATA_INDEX = "system_metadata_service_v1"
GRAPH_INDEX = "graph_service_v1"

_URL_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")


def prefixed(name: str, prefix: str = "") -> str:
    """DataHub's `[prefix_]name` index naming (INDEX_PREFIX)."""
    return f"{prefix}_{name}" if prefix else name


def entity_index(entity_type: str, prefix: str = "") -> str:
    """`[prefix_]<entity type lowercased>index_v2`, e.g. `datasetindex_v2`."""
    return prefixed(f"{entity_type.lower()}{ENTITY_INDEX_SUFFIX}", prefix)


ENTITY_INDEX_V3_SUFFIX = "index_v3"
V3_TYPE_FIELD = "_entityType"  # the entity type of a V3 document (a search group holds several)


def entity_index_v3(key: str, prefix: str = "") -> str:
    """DataHub's V3 index: `[prefix_]<search group, or the entity type when none>index_v3`."""
    return prefixed(f"{key.lower()}{ENTITY_INDEX_V3_SUFFIX}", prefix)


def document_id_v3(urn: str) -> str:
    """A V3 document's `_id`: the SHA-256 hex of the urn (V2 keeps the URL-encoded urn)."""
    return hashlib.sha256(urn.encode("utf-8")).hexdigest()


def system_metadata_index(prefix: str = "") -> str:
    return prefixed(SYSTEM_METADATA_INDEX, prefix)


def graph_index(prefix: str = "") -> str:
    return prefixed(GRAPH_INDEX, prefix)


def _encoded(byte: int) -> str:
    """One byte as Java's URLEncoder writes it."""
    if byte in _URL_SAFE:
        return chr(byte)
    return "+" if byte == 0x20 else f"%{byte:02X}"


_BYTES = [_encoded(byte) for byte in range(256)]  # by byte value; str.translate takes it for ASCII


def document_id(urn: str) -> str:
    """The entity doc `_id`: Java's `URLEncoder.encode(urn, "UTF-8")`."""
    if urn.isascii():  # nearly every urn: one C-level pass (a byte loop took 30 us a urn)
        return urn.translate(_BYTES)
    return "".join([_BYTES[byte] for byte in urn.encode("utf-8")])


def _md5_b64(raw: str) -> str:
    return base64.b64encode(hashlib.md5(raw.encode("utf-8")).digest()).decode("ascii")


def system_metadata_id(urn: str, aspect: str) -> str:
    """`_id` of a `system_metadata_service_v1` doc: base64(md5(urn--aspect))."""
    return _md5_b64(f"{urn}--{aspect}")


def edge_id(source: str, relationship: str, destination: str, owner: str | None = None) -> str:
    """`_id` of a `graph_service_v1` doc: base64(md5(src--relType--dst[--owner]))."""
    raw = f"{source}--{relationship}--{destination}"
    if owner:
        raw += f"--{owner}"
    return _md5_b64(raw)
