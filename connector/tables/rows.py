"""What the stateful helpers (normalize, aggregate, temporal_join) share: a row carried through Python as the text
Spark's own `to_json` writes, and the state store they need.

A row crosses into Spark's Python stateful operator and back as pandas in its form on every pyspark 4.x
(`transformWithStateInPandas`; the Row form of 4.1+ hands Rows: tables/operator_form.py). Pandas loses data: a null
and a NaN are one value in a pandas float column (both come out as null), an integer column with nulls becomes float64
(past 2**53, another number). So the helpers hand Python each row as one STRING, written by Spark's `to_json` and read
back by Spark's `from_json` with options that keep every value (microsecond timestamps with their offset, NaN and
infinities, -0.0, decimals digit for digit, binary as base64): Python compares and stores the text, never a typed
value. Equal rows give equal text, as Flink compares rows by their bytes. Both forms carry the same texts, so a
helper's state is the same in either.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..errors import OptionError, SchemaError

log = logging.getLogger("upsert_kafka")

_EPOCH_NTZ = "1970-01-01 00:00:00"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# The state groups of the helpers that keep an entry per key or group (hash buckets of it): a micro-batch's keys spread
# over this many Python calls, and at most this many tasks apply them at once. Spark calls Python once per state group
# and micro-batch, and a call has a cost of its own (about 3 ms here: the rows to pandas, the state calls' fixed part,
# the kernels on small arrays): few enough groups that a micro-batch of a few thousand records does not pay a call per
# handful of keys, enough to spread a large one over as many cores. Fixed, since an entry is found by its group (a
# checkpoint's layout).
GROUPS = 32


def ntz_micros(column: Column) -> Column:
    """A TIMESTAMP_NTZ as microseconds from its epoch (BIGINT), whatever the session's time zone."""
    return F.timestamp_diff("MICROSECOND", F.lit(_EPOCH_NTZ).cast(TimestampNTZType()), column)


def micros_ntz(column: Column) -> Column:
    """Microseconds from the epoch as a TIMESTAMP_NTZ (ntz_micros undone)."""
    return F.timestamp_add("MICROSECOND", column, F.lit(_EPOCH_NTZ).cast(TimestampNTZType()))


def as_long(value: Column, given: DataType) -> Column | None:
    """An integer, date, timestamp or decimal of up to 18 digits as a BIGINT in the same order, exactly: days,
    microseconds, the unscaled value (`from_long` gives the value back); None for another type."""
    if isinstance(given, IntegralType):
        return value.cast(LongType())
    if isinstance(given, TimestampType):
        return F.unix_micros(value)
    if isinstance(given, TimestampNTZType):
        return ntz_micros(value)
    if isinstance(given, DateType):
        return F.unix_date(value).cast(LongType())
    if isinstance(given, DecimalType) and given.precision <= 18:
        return (value * F.lit(10**given.scale)).cast(LongType())
    return None


def from_long(value: Column, given: DataType) -> Column:
    """The value of type `given` that `as_long` made this BIGINT of."""
    if isinstance(given, TimestampType):
        return F.timestamp_micros(value)
    if isinstance(given, TimestampNTZType):
        return micros_ntz(value)
    if isinstance(given, DateType):
        return F.date_from_unix_date(value.cast(IntegerType()))
    if isinstance(given, DecimalType):  # the unscaled value over 10^scale: exact (the quotient's scale is 20)
        return (value.cast(DecimalType(18, 0)) / F.lit(10**given.scale).cast(DecimalType(19, 0))).cast(given)
    return value.cast(given)


def state_group(columns: list[str]) -> Column:
    """The state group of a row's key (or group) columns: one of GROUPS hash buckets, as BIGINT."""
    return F.pmod(F.xxhash64(*columns), F.lit(GROUPS))


_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
_PARTITIONS = "spark.sql.shuffle.partitions"
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

# to_json and from_json with the same options: a timestamp keeps its microseconds (the default pattern stops at
# milliseconds) and, for TIMESTAMP, its offset from UTC (so a wall clock in a DST change is not ambiguous).
JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "dateFormat": "yyyy-MM-dd",
}
_SCALARS = (
    BooleanType,
    IntegralType,
    FloatType,
    DoubleType,
    DecimalType,
    StringType,
    BinaryType,
    DateType,
    TimestampType,
    TimestampNTZType,
)


def require_state_settings(spark: SparkSession, helper: str) -> None:
    """The session settings a stateful helper's query depends on, checked before the query starts, and the state
    store's checkpointing chosen where the session has none."""
    _require_rocksdb(spark, helper)
    _require_state_partitions(spark, helper)
    _choose_changelog_checkpointing(spark, helper)


def _require_rocksdb(spark: SparkSession, helper: str) -> None:
    """Spark's Python stateful operator runs on the RocksDB state store only; say so before the query starts."""
    provider = spark.conf.get(_PROVIDER, None) or ""
    if provider != ROCKSDB:
        raise OptionError(
            f"{helper} keeps its state in Spark's RocksDB state store, and this session uses "
            f"{provider or 'the default (HDFS-backed) one'}: set spark.conf.set('{_PROVIDER}', '{ROCKSDB}') "
            "before starting the query (or the same in the session's config)"
        )


def _require_state_partitions(spark: SparkSession, helper: str) -> None:
    """A stateful query runs `spark.sql.shuffle.partitions` tasks of Spark's Python stateful operator each
    micro-batch, and keeps that number in its checkpoint. Spark's default (200) costs about 21 s a micro-batch of a
    few thousand records on 2 cores: refuse it before the query starts, unless the user chose it."""
    if spark.conf.get(_PARTITIONS, None) is None:  # not set: Spark's default
        raise OptionError(
            f"{helper} runs a stateful operator in {_PARTITIONS} tasks every micro-batch, and this session has "
            "Spark's default (200): each micro-batch would start 200 tasks of Spark's Python stateful operator "
            f"(about 21 s a micro-batch of 2,000 records measured on 2 cores). Set spark.conf.set('{_PARTITIONS}', "
            "N) before starting the query, N about the cores it runs on (set 200 yourself to keep it); a query "
            "restarted from its checkpoint keeps the number it first ran with"
        )


def _choose_changelog_checkpointing(spark: SparkSession, helper: str) -> None:
    """RocksDB's changelog checkpointing, unless the session says otherwise: a micro-batch's commit then writes the
    state entries it changed, not a snapshot of the store (snapshots are taken in the background): at 5,000 updates/s
    into 1 M keys, normalize's freshness went from 1.1 s / 2.1 s to 0.9 s / 1.5 s (p50 / p99, integration/results).
    Spark's default is off on every pyspark 4.x. It is read when a query starts, so it is set in the session: the
    stateful queries started after it get it too (Spark's recommended setting; a checkpoint goes on after it is
    switched either way). A value the user set is kept; a declarative pipeline's definitions may not set it (its spec
    can), so there it is only said."""
    if spark.conf.get(CHANGELOG_CHECKPOINTING, None) is not None:
        return
    try:
        spark.conf.set(CHANGELOG_CHECKPOINTING, "true")
    except PySparkException as e:
        if "SESSION_MUTATION_IN_DECLARATIVE_PIPELINE" not in str(e.getCondition()):
            raise
        log.warning(
            "%s: a micro-batch's state commit writes a snapshot of the state store; set %s: 'true' in the pipeline "
            "spec's configuration to write only the entries it changed (fresher output: connector/tables/README.md)",
            helper,
            CHANGELOG_CHECKPOINTING,
        )


def require_columns(df: DataFrame, names: Sequence[str], role: str, helper: str) -> list[str]:
    """The DataFrame's spelling of each name (Spark resolves names case-insensitively); a missing one is an error.
    The helpers' first look at their input: inside a declarative pipeline's query function Spark refuses it."""
    try:
        columns = {c.lower(): c for c in df.columns}
    except Exception as e:
        if "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION" not in str(e):
            raise
        raise SchemaError(
            f"{helper} looks at its input's columns, which Spark refuses inside a pipeline's query function: build "
            "it outside the function (at the top of the definitions file) and return it from the function"
        ) from e
    missing = [n for n in names if n.lower() not in columns]
    if missing:
        raise SchemaError(f"{helper}: {role} {', '.join(map(repr, missing))} not among the columns {df.columns}")
    return [columns[n.lower()] for n in names]


def require_text_safe(df: DataFrame, columns: Sequence[str], helper: str) -> None:
    """Every column travels as to_json's text: types it reads back exactly, or an error naming the column."""
    for field in df.select(*columns).schema.fields:
        problem = _unsafe(field.dataType)
        if problem:
            shown = f"'{field.name}' ({field.dataType.simpleString()})"
            raise SchemaError(f"{helper} cannot carry column {shown}: {problem}")


def _unsafe(t: DataType) -> str | None:
    if isinstance(t, _SCALARS):
        return None
    if isinstance(t, ArrayType):
        return _unsafe(t.elementType)
    if isinstance(t, MapType):
        return "a MAP's keys must be STRING" if not isinstance(t.keyType, StringType) else _unsafe(t.valueType)
    if isinstance(t, StructType):
        return next((p for f in t.fields if (p := _unsafe(f.dataType))), None)
    return f"{t.simpleString()} is not a type this helper carries (use a scalar, ARRAY, MAP or STRUCT type)"


def as_text(columns: Sequence[str]) -> Column:
    """The row of these columns as one JSON text (nulls left out)."""
    return F.to_json(F.struct(*[F.col(c) for c in columns]), JSON_OPTIONS)


def from_text(text: Column, schema: StructType) -> Column:
    """The STRUCT that `as_text` wrote."""
    return F.from_json(text, schema, JSON_OPTIONS)
