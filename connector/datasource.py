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

from connector.errors import OptionError
from connector.kafka_clients import admin_client, check_writable
from connector.layout import schema_ddl
from connector.read_options import parse_read_spec
from connector.readers import UpsertKafkaBatchReader, UpsertKafkaStreamReader
from connector.write_options import WriteSpec, parse_write_spec
from connector.writers import UpsertKafkaStreamWriter, UpsertKafkaWriter


class UpsertKafkaDataSource(DataSource):
    """A Kafka topic as a keyed changelog (a null value deletes its key), and the way back."""

    @classmethod
    def name(cls) -> str:
        return "upsert-kafka"

    def schema(self) -> str:
        return schema_ddl(self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        return UpsertKafkaBatchReader(parse_read_spec(self.options, schema, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return UpsertKafkaStreamReader(parse_read_spec(self.options, schema, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError("save mode 'overwrite' is not supported yet; use mode('append')")
        return UpsertKafkaWriter(_checked_write_spec(self.options, schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return UpsertKafkaStreamWriter(_checked_write_spec(self.options, schema))


def _checked_write_spec(options: dict, schema: StructType) -> WriteSpec:
    """Parse the options and check on the driver, before any task starts, that the topic can be written."""
    spec = parse_write_spec(options, schema)
    check_writable(admin_client(spec.kafka), spec.kafka, spec.topic)
    return spec
