"""upsert-kafka for Apache Spark: a Kafka topic read as a keyed changelog, DataFrames written back as
upserts and tombstones."""

from connector.datasource import UpsertKafkaDataSource
from connector.errors import (
    KafkaUnavailableError,
    OptionError,
    RecordError,
    TopicError,
    UpsertKafkaError,
)
from connector.foreach_batch import upsert_writer

__all__ = [
    "KafkaUnavailableError",
    "OptionError",
    "RecordError",
    "TopicError",
    "UpsertKafkaDataSource",
    "UpsertKafkaError",
    "upsert_writer",
]
