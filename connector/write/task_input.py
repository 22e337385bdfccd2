"""Where a write task's rows enter: Spark's Arrow batches in the Arrow types the encoders were built for (UTC
timestamps), and pyspark 4.0's rows (its stream writers are handed rows) made into the same batches."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import ArrayType, MapType, Row, StructType, TimestampType

from .. import spark_internals


def in_utc(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Spark hands a writer Arrow batches whose timestamps carry the session's time zone (`timestamp[us,
    tz=America/New_York]`, or `Etc/UTC`), while the encoders were built for the UTC ones of
    spark_internals.to_arrow_schema: a zone in the type made csv write local times and Avro refuse the batch. The
    values are UTC microseconds either way, so only the type changes (a cast that keeps every value and buffer)."""
    given = target = None
    for batch in batches:
        if given is None or not batch.schema.equals(given):
            given = batch.schema
            target = pa.schema([f.with_type(_utc_type(f.type)) for f in given], metadata=given.metadata)
            target = None if target.equals(given) else target
        if target is None:
            yield batch
        else:
            columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, target)]
            yield pa.RecordBatch.from_arrays(columns, schema=target)


def _utc_type(t: pa.DataType) -> pa.DataType:
    """`t` with every timestamp that has a zone in UTC, nested ones included."""
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, tz="UTC") if t.tz is not None else t
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_utc_type(f.type)) for f in t])
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        return pa.map_(key.with_type(_utc_type(key.type)), item.with_type(_utc_type(item.type)), t.keys_sorted)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_utc_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_utc_type(t.value_type)))
    return t


# Rows per Arrow batch when a stream writer is handed rows (pyspark 4.0).
_ROWS_PER_BATCH = 10_000


def rows_as_batches(rows: Iterator[Row], schema: StructType) -> Iterator[pa.RecordBatch]:
    """pyspark 4.0 hands a stream writer Rows, not Arrow batches: the same batches, built from the rows (Python
    per row: the price of 4.0, which has no Arrow stream writer). A TIMESTAMP comes as the Python worker's local
    time without a zone (pyspark's `astimezone()`): read as local time again, not as UTC."""
    arrow = spark_internals.to_arrow_schema(schema)
    fixes = [_local_times(f.dataType) for f in schema.fields]
    while chunk := list(itertools.islice(rows, _ROWS_PER_BATCH)):
        columns = [c if fix is None else [fix(v) for v in c] for c, fix in zip(zip(*chunk), fixes)]
        yield pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, arrow)], schema=arrow)


def _local_times(t: Any) -> Callable[[Any], Any] | None:
    """A function giving a value of Spark type `t` its TIMESTAMPs in UTC; None when `t` holds none."""
    if isinstance(t, TimestampType):
        return lambda v: None if v is None else v.astimezone(dt.timezone.utc)
    if isinstance(t, ArrayType):
        element = _local_times(t.elementType)
        return None if element is None else lambda v: None if v is None else [element(e) for e in v]
    if isinstance(t, MapType):
        key, value = _local_times(t.keyType) or _same, _local_times(t.valueType) or _same
        if key is _same and value is _same:
            return None
        return lambda v: None if v is None else {key(k): value(e) for k, e in v.items()}
    if isinstance(t, StructType):
        fields = [_local_times(f.dataType) or _same for f in t.fields]
        if all(f is _same for f in fields):
            return None
        return lambda v: None if v is None else tuple(f(e) for f, e in zip(fields, v))
    return None


def _same(v: Any) -> Any:
    return v
