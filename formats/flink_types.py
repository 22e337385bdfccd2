"""The Flink type a table column stands for, where Spark's type carries less than Flink's.

Spark's TIMESTAMP_NTZ and TIMESTAMP hold microseconds: by themselves they stand for Flink's TIMESTAMP(6) and
TIMESTAMP_LTZ(6). A column that stands for another precision (Flink's common TIMESTAMP(3)) carries it as Arrow field
metadata on the schemas the formats are given (the connector sets it from option 'flink.column-types', which
`flink_table` fills from the statement); a format whose bytes depend on it (avro: millis or micros) reads it here.

A primary key makes its columns NOT NULL in Flink, in the key and in the value: `primary_key_not_null` marks them so
on the schema a format is given, so a derived schema has no null branch for them (Avro's union byte).
"""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa

PRECISION = b"flink.precision"
#: Spark's timestamps hold microseconds: Flink's TIMESTAMP(6) / TIMESTAMP_LTZ(6), its default precision too.
SPARK_PRECISION = 6


def timestamp_precision(field: pa.Field) -> int:
    """The Flink precision (0 to 6) of a timestamp field: its metadata's, else Spark's 6."""
    value = (field.metadata or {}).get(PRECISION)
    return SPARK_PRECISION if value is None else int(value)


def with_precision(field: pa.Field, precision: int) -> pa.Field:
    return field.with_metadata({**(field.metadata or {}), PRECISION: str(precision).encode()})


def flink_type_name(field: pa.Field) -> str:
    """'TIMESTAMP(3)' / 'TIMESTAMP_LTZ(6)' for a timestamp field, as errors and the type table name it."""
    zone = "_LTZ" if field.type.tz is not None else ""
    return f"TIMESTAMP{zone}({timestamp_precision(field)})"


def primary_key_not_null(schema: pa.Schema, key_names: Collection[str]) -> pa.Schema:
    """`schema` with the primary key's columns NOT NULL (Flink: a primary key makes its columns NOT NULL)."""
    return pa.schema([f.with_nullable(False) if f.name in key_names else f for f in schema], schema.metadata)
