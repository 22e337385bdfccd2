"""upsert-kafka for Apache Spark: a Kafka topic read as a keyed changelog, DataFrames written back as
upserts and tombstones.

Spark imports every installed top-level `pyspark_*` package that defines `DefaultSource` and registers it:
installing this package is all it takes for `format("upsert-kafka")` to work.

The public names load on first use (PEP 562), so that importing a subpackage, e.g. the formats, which know
nothing of Spark, does not load the connector and pyspark first.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .datasource import UpsertKafkaDataSource
    from .errors import (
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
    from .flink_ddl import FlinkTable, flink_table
    from .foreach_batch import upsert_writer
    from .formats import Codec, CodecContext, ColumnTypes, Decoded, Decoder, Encoder, FormatOptionError, register_codec
    from .lag import lag
    from .mirror import delta_mirror, mirror_to_delta
    from .secrets import SPARK_REDACTION_REGEX, redact_secret_options

    DefaultSource = UpsertKafkaDataSource

# Public name -> (module, its name there).
_EXPORTS = {
    "DefaultSource": (".datasource", "UpsertKafkaDataSource"),
    "UpsertKafkaDataSource": (".datasource", "UpsertKafkaDataSource"),
    **{
        name: (".errors", name)
        for name in (
            "DataLossError",
            "KafkaAuthenticationError",
            "KafkaAuthorizationError",
            "KafkaClientError",
            "KafkaUnavailableError",
            "OptionError",
            "RecordError",
            "SchemaError",
            "TopicError",
            "UpsertKafkaError",
            "WriteTaskError",
        )
    },
    "FlinkTable": (".flink_ddl", "FlinkTable"),
    "flink_table": (".flink_ddl", "flink_table"),
    "upsert_writer": (".foreach_batch", "upsert_writer"),
    **{
        name: (".formats", name)
        for name in ("Codec", "CodecContext", "ColumnTypes", "Decoded", "Decoder", "Encoder", "FormatOptionError")
    },
    "register_codec": (".formats", "register_codec"),
    "lag": (".lag", "lag"),
    "delta_mirror": (".mirror", "delta_mirror"),
    "mirror_to_delta": (".mirror", "mirror_to_delta"),
    "SPARK_REDACTION_REGEX": (".secrets", "SPARK_REDACTION_REGEX"),
    "redact_secret_options": (".secrets", "redact_secret_options"),
}

__all__ = [
    "SPARK_REDACTION_REGEX",
    "Codec",
    "CodecContext",
    "ColumnTypes",
    "DataLossError",
    "Decoded",
    "Decoder",
    "DefaultSource",
    "Encoder",
    "FlinkTable",
    "FormatOptionError",
    "KafkaAuthenticationError",
    "KafkaAuthorizationError",
    "KafkaClientError",
    "KafkaUnavailableError",
    "OptionError",
    "RecordError",
    "SchemaError",
    "TopicError",
    "UpsertKafkaDataSource",
    "UpsertKafkaError",
    "WriteTaskError",
    "delta_mirror",
    "flink_table",
    "lag",
    "mirror_to_delta",
    "redact_secret_options",
    "register_codec",
    "upsert_writer",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _Package(types.ModuleType):
    """The import system binds a submodule to an attribute of its package: the submodule `lag` must not hide the
    public function `lag` (which an eager `from .lag import lag` used to rebind)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
