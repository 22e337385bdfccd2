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

from .options.layout import table_schema
from .overwrite import UpsertKafkaOverwriter
from .read.source import UpsertKafkaBatchReader, UpsertKafkaLookupReader, UpsertKafkaStreamReader
from .read.spec import parse_read_spec
from .spark_internals import pushdown_enabled
from .write.sink import UpsertKafkaStreamWriter, UpsertKafkaWriter, plan_write


class UpsertKafkaDataSource(DataSource):
    """A Kafka topic as a keyed changelog (a null value deletes its key), and the way back."""

    @classmethod
    def name(cls) -> str:
        return "upsert-kafka"

    def schema(self) -> StructType:
        return table_schema(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        spec = parse_read_spec(self.options, schema, streaming=False)
        return UpsertKafkaLookupReader(spec) if pushdown_enabled() else UpsertKafkaBatchReader(spec)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return UpsertKafkaStreamReader(parse_read_spec(self.options, schema, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # overwrite: the topic's table becomes the DataFrame (missing keys get tombstones).
        plan = plan_write(self.options, schema, overwrite)
        return UpsertKafkaOverwriter(plan) if overwrite else UpsertKafkaWriter(plan)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        # Complete mode passes overwrite: every row is an upsert of its key, which is what it means here.
        return UpsertKafkaStreamWriter(self.options, schema)
