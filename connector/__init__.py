"""upsert-kafka for Apache Spark: a Kafka topic read as a keyed changelog, DataFrames written back as
upserts and tombstones.

Spark imports every installed top-level `pyspark_*` package that defines `DefaultSource` and registers it:
installing this package is all it takes for `format("upsert-kafka")` to work.

The public names load on first use (PEP 562), so that importing a subpackage, e.g. the formats, which know
nothing of Spark, does not load the connector and pyspark first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names for type checkers; at run time __getattr__ imports them on first use
    from .consumer_lag import lag  # noqa: F401
    from .datasource import UpsertKafkaDataSource
    from .errors import (  # noqa: F401
        DataLossError,
        KafkaAuthenticationError,
        KafkaAuthorizationError,
        KafkaClientError,
        KafkaUnavailableError,
        OptionError,
        RecordError,
        SchemaError,
        TopicError,
        UpsertKafkaError,
        WriteTaskError,
    )
    from .flink.ddl import FlinkTable, flink_table  # noqa: F401
    from .foreach_batch import upsert_writer  # noqa: F401
    from .formats import Codec, CodecContext, ColumnTypes, Decoded, Decoder, Encoder, FormatOptionError, register_codec  # noqa: F401
    from .mirror import delta_mirror, mirror_to_delta  # noqa: F401
    from .secrets import SPARK_REDACTION_REGEX, redact_secret_options  # noqa: F401
    from .tables.aggregate import aggregate_changelog  # noqa: F401
    from .tables.history import changelog_history, changelog_table  # noqa: F401
    from .tables.normalize import normalized_changelog  # noqa: F401
    from .tables.temporal_join import temporal_join  # noqa: F401

    DefaultSource = UpsertKafkaDataSource

# Each public name's module (DefaultSource is UpsertKafkaDataSource: Spark's auto-registration looks it up).
_HOMES = {
    "UpsertKafkaDataSource": ".datasource",
    "DataLossError": ".errors",
    "KafkaAuthenticationError": ".errors",
    "KafkaAuthorizationError": ".errors",
    "KafkaClientError": ".errors",
    "KafkaUnavailableError": ".errors",
    "OptionError": ".errors",
    "RecordError": ".errors",
    "SchemaError": ".errors",
    "TopicError": ".errors",
    "UpsertKafkaError": ".errors",
    "WriteTaskError": ".errors",
    "FlinkTable": ".flink.ddl",
    "flink_table": ".flink.ddl",
    "upsert_writer": ".foreach_batch",
    "Codec": ".formats",
    "CodecContext": ".formats",
    "ColumnTypes": ".formats",
    "Decoded": ".formats",
    "Decoder": ".formats",
    "Encoder": ".formats",
    "FormatOptionError": ".formats",
    "register_codec": ".formats",
    "lag": ".consumer_lag",
    "delta_mirror": ".mirror",
    "mirror_to_delta": ".mirror",
    "SPARK_REDACTION_REGEX": ".secrets",
    "redact_secret_options": ".secrets",
    "normalized_changelog": ".tables.normalize",
    "aggregate_changelog": ".tables.aggregate",
    "temporal_join": ".tables.temporal_join",
    "changelog_table": ".tables.history",
    "changelog_history": ".tables.history",
}
_ALIASES = {"DefaultSource": "UpsertKafkaDataSource"}

__all__ = sorted([*_HOMES, *_ALIASES])


def __getattr__(name: str) -> Any:
    attribute = _ALIASES.get(name, name)
    if attribute not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[attribute], __name__), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
