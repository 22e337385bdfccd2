"""The `upsert-kafka` data source: Spark's entry point, which parses options and hands out readers
and writers built on the parsed specs."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from .options.layout import prime_readers, table_schema
from .overwrite import UpsertKafkaOverwriter
from .read.source import UpsertKafkaBatchReader, UpsertKafkaLookupReader, UpsertKafkaStreamReader
from .read.spec import parse_read_spec
from .spark_internals import pushdown_enabled
from .write.plan import plan_write
from .write.sink import UpsertKafkaStreamWriter, UpsertKafkaWriter


class UpsertKafkaDataSource(DataSource):
    """A Kafka topic as a keyed changelog (a null value deletes its key), and the way back: Flink's `upsert-kafka`.

    Name: ``upsert-kafka`` (registered when the package is installed). Options, spelled as Flink's (Spark's
    `kafka` spellings are aliases; every option: connector/options/README.md):

    - ``properties.bootstrap.servers`` (required), ``topic`` (or ``topic-pattern`` to read),
    - ``key.fields``: the primary key columns; ``key.format`` / ``value.format``: json (default), csv, raw,
      avro, avro-confluent, the change envelopes, or ``module:Class``,
    - ``schema``: the data columns when not given with ``.schema(...)``,
    - ``scan.startup.mode``, ``sink.delivery-guarantee``, ``properties.*`` for the Kafka clients.

    Read: a batch read is the topic's table (the last value of each key, deleted keys left out); a stream read
    is the changelog, each row with ``_change_type`` ``upsert`` or ``delete``. Write: each row an upsert of its
    key, ``_change_type`` ``delete`` (or a change data feed's kinds) a tombstone, keys partitioned as Kafka's
    Java client does.

    >>> orders = spark.read.format("upsert-kafka").options(**{  # doctest: +SKIP
    ...     "properties.bootstrap.servers": "localhost:9092", "topic": "orders", "key.fields": "id",
    ...     "schema": "id INT, item STRING, amount DOUBLE"}).load()
    >>> orders.write.format("upsert-kafka").options(**{  # doctest: +SKIP
    ...     "properties.bootstrap.servers": "localhost:9092", "topic": "orders_copy", "key.fields": "id",
    ...     "sink.delivery-guarantee": "exactly-once",
    ...     "sink.transactional-id-prefix": "orders-copy"}).mode("append").save()
    """

    @classmethod
    def name(cls) -> str:
        return "upsert-kafka"

    def schema(self) -> StructType:
        return table_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        spec = parse_read_spec(self.options, schema, streaming=False)
        prime_readers(spec.layout)
        return UpsertKafkaLookupReader(spec) if pushdown_enabled() else UpsertKafkaBatchReader(spec)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        spec = parse_read_spec(self.options, schema, streaming=True)
        prime_readers(spec.layout)
        return UpsertKafkaStreamReader(spec)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # overwrite: the topic's table becomes the DataFrame (missing keys get tombstones).
        plan = plan_write(self.options, schema, overwrite)
        return UpsertKafkaOverwriter(plan) if overwrite else UpsertKafkaWriter(plan)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # Complete mode passes overwrite: every row is an upsert of its key, which is what it means here.
        return UpsertKafkaStreamWriter(self.options, schema)
