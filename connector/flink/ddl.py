"""Flink's `CREATE TABLE ... WITH ('connector' = 'upsert-kafka', ...)` as it is, for Spark: `flink_table(ddl)`.

What the statement says maps onto this connector's options: the columns and their types (Flink's type names; a
timestamp's precision onto `flink.column-types`), `PRIMARY KEY (...) NOT ENFORCED` (or a column's own
`PRIMARY KEY NOT ENFORCED`) onto `key.fields` and NOT NULL key columns, `METADATA [FROM 'key'] [VIRTUAL]` columns
onto `metadata.columns` (virtual ones left out of writes), the `WITH` options as they are (the catalog takes Flink's
spellings; `csv.field-delimiter` unescaped as Flink unescapes it), and `WATERMARK FOR ts AS ts - INTERVAL 'n' UNIT`
onto Spark's `withWatermark` for stream reads. `COMMENT`s are documentation. What has no meaning here (a computed
column, `LIKE`, `AS SELECT`, `PARTITIONED BY`, another connector) is refused by name, never dropped.

The statement is read by flink/statement.py (its types by flink/types.py); this module maps what it declares onto
the connector.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.readwriter import DataFrameWriter
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import DataType, StructField, StructType, TimestampNTZType

from ..errors import OptionError
from ..options.canonical import canonical_options
from ..options.catalog import KEY_FIELDS, METADATA_COLUMNS, SCHEMA
from ..options.catalog_read import READ_MODE, ReadMode
from ..options.columns import metadata_fields, parse_column_options
from ..options.ddl import ddl_text
from .statement import DeclaredTable, FlinkStatement
from .types import COLUMN_TYPES, path_text

FORMAT = "upsert-kafka"
_CONNECTORS = ("upsert-kafka", "kafka")


@dataclass(frozen=True)
class FlinkTable:
    """A Flink table definition as this connector's options, and the reads and writes that mean the same."""

    name: str
    columns: StructType  # every column of the statement, in its order, with Flink's types as Spark's
    options: dict[str, str]  # for format("upsert-kafka"): the WITH options, key.fields, metadata.columns, schema
    virtual: frozenset[str] = frozenset()  # metadata columns a write leaves out
    metadata_types: dict[str, DataType] = field(default_factory=dict)  # the connector's type of each metadata column
    watermark: tuple[str, str] | None = None  # (column, delay) for withWatermark
    comments: dict[str, str] = field(default_factory=dict)

    def read(self, spark: SparkSession) -> DataFrame:
        """A batch read: the table's columns in the statement's order and types, a row per key (as Flink
        materializes an upsert-kafka table; this connector's option 'read.mode' can say otherwise)."""
        df = self._columns(spark.read.format(FORMAT).options(**self.options).load())
        table = canonical_options(self.options).value(READ_MODE) is ReadMode.TABLE
        return df.select(*self.columns.names) if table else df

    def read_stream(self, spark: SparkSession) -> DataFrame:
        """A stream of the table's changes (with the change-type column), watermarked as the statement says.

        Spark watermarks only a TIMESTAMP (an instant), and Flink's common rowtime is a TIMESTAMP(3), a wall clock
        (TIMESTAMP_NTZ here). Such a rowtime column becomes a TIMESTAMP in this stream: the instant its wall clock
        names read as UTC, whatever `spark.sql.session.timeZone` is. So `F.window(rowtime, ...)` starts windows where
        Flink's TUMBLE / HOP on the TIMESTAMP(3) does (epoch-aligned wall clocks), and a window bound shows the wall
        clock in a session whose time zone is UTC (elsewhere, shifted by the zone's offset). A TIMESTAMP_LTZ rowtime
        is an instant already and stays as it is."""
        df = self._columns(spark.readStream.format(FORMAT).options(**self.options).load())
        if self.watermark is None:
            return df
        column, delay = self.watermark
        if isinstance(self.columns[column].dataType, TimestampNTZType):
            df = df.withColumn(column, _instant_in_utc(F.col(column)))
        return df.withWatermark(column, delay)

    def write(self, df: DataFrame) -> DataFrameWriter:
        """The writer of `df` into the table: its columns but the virtual ones, with the options set."""
        return self._writable(df).write.format(FORMAT).options(**self.write_options)

    def write_stream(self, df: DataFrame) -> DataStreamWriter:
        return self._writable(df).writeStream.format(FORMAT).options(**self.write_options)

    @property
    def write_options(self) -> dict[str, str]:
        """The options of a write: the virtual metadata columns are read only (Flink leaves them out of INSERTs)."""
        written = [c for c in self.metadata_types if c not in self.virtual]
        name = METADATA_COLUMNS.name
        options = {k: v for k, v in self.options.items() if k != name}
        pairs = dict(p.split("=", 1) for p in self.options.get(name, "").split(",") if p)
        return options | ({name: ",".join(f"{c}={pairs[c]}" for c in written)} if written else {})

    def create_view(self, spark: SparkSession, view: str | None = None) -> None:
        """`CREATE TEMPORARY VIEW <view> USING upsert-kafka OPTIONS (...)`: the table for Spark SQL (a batch
        read; named as the Flink table unless `view` says otherwise)."""
        quoted = ", ".join(f"{_sql_text(k)} {_sql_text(v)}" for k, v in self.options.items())
        name = (view or self.name).replace("`", "``")
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` USING `{FORMAT}` OPTIONS ({quoted})")

    def _columns(self, df: DataFrame) -> DataFrame:
        """The statement's columns in its order and types (metadata columns come in the connector's types); a
        column already of its type is not cast (Spark casts no STRUCT to one with a NOT NULL field)."""
        names = {c.lower(): c for c in df.columns}
        given = {f.name.lower(): f.dataType for f in df.schema.fields}

        def typed(f: StructField) -> Column:
            column = F.col(names[f.name.lower()])
            same = given[f.name.lower()].simpleString() == f.dataType.simpleString()  # nullability aside
            return (column if same else column.cast(f.dataType)).alias(f.name)

        wanted = [typed(f) for f in self.columns]
        extra = [F.col(c) for c in df.columns if c.lower() not in {f.name.lower() for f in self.columns}]
        return df.select(*wanted, *extra)  # the change-type column of a changelog read comes last

    def _writable(self, df: DataFrame) -> DataFrame:
        """Without the virtual columns; metadata columns in the connector's types (Flink's TIMESTAMP(3) for the
        record timestamp is a TIMESTAMP here)."""
        virtual = {v.lower() for v in self.virtual}
        types = {c.lower(): t for c, t in self.metadata_types.items()}
        kept = [c for c in df.columns if c.lower() not in virtual]
        return df.select(*[F.col(c).cast(types[c.lower()]).alias(c) if c.lower() in types else F.col(c) for c in kept])


def _instant_in_utc(wall_clock: Column) -> Column:
    """The TIMESTAMP a TIMESTAMP_NTZ's wall clock names in UTC, from its parts: a cast would read it in the session's
    time zone (and skip the wall clocks a daylight-saving gap there has)."""
    seconds = F.date_part(F.lit("SECOND"), wall_clock)  # with the fraction: DECIMAL(8, 6)
    return F.make_timestamp(
        F.year(wall_clock),
        F.month(wall_clock),
        F.dayofmonth(wall_clock),
        F.hour(wall_clock),
        F.minute(wall_clock),
        seconds,
        F.lit("UTC"),
    )


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def flink_table(ddl: str, options: dict[str, str] | None = None) -> FlinkTable:
    """The table a Flink `CREATE TABLE` statement defines, for this connector. `options` add to or replace the
    statement's WITH options (e.g. the brokers where the statement has Flink's documentation placeholder `...`)."""
    return _mapped(FlinkStatement(ddl).table(), options or {})


def _mapped(declared: DeclaredTable, given: dict[str, str]) -> FlinkTable:
    """The table's options for this connector: the WITH options, with `given` added or replacing them."""
    name, fields, metadata, key, watermark = (
        declared.name, declared.fields, declared.metadata, declared.key, declared.watermark
    )  # fmt: skip
    options = declared.options | given
    connector = options.pop("connector", None)
    if connector is None or connector.strip().lower() not in _CONNECTORS:
        raise OptionError(
            f"Flink DDL: table '{name}' has 'connector' = {connector!r}: this connector reads and writes the tables "
            f"of Flink's {' and '.join(_CONNECTORS)} connectors"
        )
    if key is not None:
        # A `kafka` table may have both (its key format's columns and its primary key): here both are the key.
        listed = [k.strip() for k in options.get(KEY_FIELDS.name, ";".join(key)).split(";") if k.strip()]
        if listed != key:
            raise OptionError(
                f"Flink DDL: table '{name}' has PRIMARY KEY ({', '.join(key)}) and option 'key.fields' = "
                f"'{options[KEY_FIELDS.name]}': here the key format's columns are the primary key, so give the same "
                "columns in the same order, or only one of them"
            )
        unknown = [k for k in key if k not in {f.name for f in fields}]
        if unknown:
            raise OptionError(f"Flink DDL: the PRIMARY KEY of table '{name}' names '{unknown[0]}', which is no column")
        options[KEY_FIELDS.name] = ";".join(key)
        # Flink makes a primary key's columns NOT NULL (its docs on PRIMARY KEY; the Avro schemas it derives).
        fields = [StructField(f.name, f.dataType, False, f.metadata) if f.name in key else f for f in fields]
    elif KEY_FIELDS.name not in options:
        raise OptionError(
            f"Flink DDL: table '{name}' has no PRIMARY KEY (... ) NOT ENFORCED and no 'key.fields': an upsert-kafka "
            "table is keyed, so declare its primary key"
        )
    if metadata:
        options[METADATA_COLUMNS.name] = ",".join(f"{c}={k}" for c, k in metadata.items())
    data = StructType([f for f in fields if f.name not in metadata])
    options[SCHEMA.name] = ddl_text(data)
    if watermark is not None and watermark[0] not in {f.name for f in fields}:
        raise OptionError(f"Flink DDL: WATERMARK FOR '{watermark[0]}' names no column of table '{name}'")
    types = {f.name: f.dataType for f in metadata_fields(parse_column_options(canonical_options(options)))}
    if declared.flink_types and COLUMN_TYPES not in given:  # the given options replace the statement's
        options[COLUMN_TYPES] = ", ".join(f"{path_text(path)} {flink}" for path, flink in declared.flink_types)
    virtual = frozenset(declared.virtual)
    return FlinkTable(name, StructType(fields), options, virtual, types, watermark, declared.comments)
