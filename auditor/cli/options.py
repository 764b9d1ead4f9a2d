"""Options declared once and shared by the commands that take them.

`@with_options(CONNECTION, ...)` appends a group's parameters to a command's signature (typer
reads the signature), and the command receives them in `**opts`; `settings_of(opts)` turns the
connection group into the settings, as `load` does. A flag's name, help and environment
variable are written here once, whichever commands take it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_type_hints

from auditor.cli.common import (
    ClusterAliasOpt,
    ConfigOpt,
    ConsumerGroupOpt,
    DebugOpt,
    IndexPrefixOpt,
    KafkaOpt,
    PlatformOpt,
    PlatformVersionOpt,
    RegistryOpt,
    SearchUrl,
    Stores,
    StoreUrl,
    TimeseriesTopicOpt,
    TopicOpt,
    TransportOpt,
    load,
)

F = TypeVar("F", bound=Callable[..., Any])
Group = Mapping[str, tuple[Any, Any]]  # parameter name -> (its Annotated type, its default)

# where the auditor reads from (and with --apply, writes to), and which platform it is
CONNECTION: Group = {
    "store_url": (StoreUrl, None),
    "store": (Stores, None),
    "search_url": (SearchUrl, None),
    "kafka": (KafkaOpt, None),
    "schema_registry": (RegistryOpt, None),
    "index_prefix": (IndexPrefixOpt, None),
    "topic": (TopicOpt, None),
    "timeseries_topic": (TimeseriesTopicOpt, None),
    "consumer_group": (ConsumerGroupOpt, None),
    "config": (ConfigOpt, None),
    "platform": (PlatformOpt, None),
    "cluster_alias": (ClusterAliasOpt, None),
    "platform_version": (PlatformVersionOpt, None),
    "transport": (TransportOpt, None),
}
# the same without the change log's topic and group, a federation and the release: for a command
# that names its topics its own way, reads no store and judges no document (`auditor watch` tails
# the topics it is given and times events)
SOURCES: Group = {
    k: v for k, v in CONNECTION.items() if k not in ("topic", "consumer_group", "store", "platform_version")
}
# the connection without the release: `auditor probe` times a canary, it judges no document
PROBING: Group = {k: v for k, v in CONNECTION.items() if k != "platform_version"}
DEBUG: Group = {"debug": (DebugOpt, False)}


def with_options(*groups: Group) -> Callable[[F], F]:
    """The groups' parameters appended to the command's own (keyword-only, in the groups' order)."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn)
        hints = get_type_hints(fn, include_extras=True)  # the command's own, evaluated (Annotated kept)
        own = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in signature.parameters.values()
            if p.kind != inspect.Parameter.VAR_KEYWORD
        ]
        added = {name: spec for group in groups for name, spec in group.items()}
        params = own + [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default)
            for name, (kind, default) in added.items()
        ]

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {**hints, **{n: k for n, (k, _) in added.items()}}
        return command  # type: ignore[return-value]

    return wrap


def settings_of(opts: Mapping[str, Any], **more: Any) -> Any:
    """The settings from the connection group's values (flags > environment > file > defaults)."""
    return load(
        opts.get("config"),
        opts.get("store_url"),
        opts.get("search_url"),
        opts.get("kafka"),
        opts.get("schema_registry"),
        opts.get("index_prefix"),
        topic=opts.get("topic"),
        timeseries_topic=opts.get("timeseries_topic"),
        group=opts.get("consumer_group"),
        platform=opts.get("platform"),
        cluster_alias=opts.get("cluster_alias"),
        platform_version=opts.get("platform_version"),
        transport=opts.get("transport"),
        stores=opts.get("store") or None,
        **more,
    )
