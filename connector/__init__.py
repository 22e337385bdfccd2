"""upsert-kafka for Apache Spark: a Kafka topic read as a keyed changelog, DataFrames written back as
upserts and tombstones.

Spark imports every installed top-level `pyspark_*` package that defines `DefaultSource` and registers it:
installing this package is all it takes for `format("upsert-kafka")` to work.
"""

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
