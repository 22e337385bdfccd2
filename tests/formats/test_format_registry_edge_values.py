"""Every value the writer accepts is valid under the schema it registers: edge values (NaN, ±Infinity, -0.0, the
extremes of each integer and float type, 38-digit decimals, the first and last DATE and TIMESTAMP_NTZ, nulls, empty
strings and bytes, nested in arrays, maps and structs) written by the connector with a derived schema, key and value,
and read back with Confluent's own deserializers from the session's registry: AvroDeserializer, the validating
JSONDeserializer (it refused json-confluent's "Infinity" under {"type": "number"}) and ProtobufDeserializer."""

from __future__ import annotations

import base64
import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.formats.test_format_avro_confluent import confluent_client
from tests.support.kafka_io import consume_all
from tests.support.registry_fixtures import registered_class
from tests.support.write_helpers import write

UTC = dt.timezone.utc
NAN, INF = math.nan, math.inf
F32_MAX, F32_TINY = 3.4028234663852886e38, 1.401298464324817e-45  # FLOAT's largest and smallest subnormal
AT = dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)

# Columns every registry format's derived schema holds, and rows of edge values (no null inside an array or map:
# protobuf has no such null, and fails the row).
COLUMNS = (
    "id INT NOT NULL, d DOUBLE, f FLOAT, ti TINYINT, si SMALLINT, i INT, bi BIGINT, s STRING, b BINARY, "
    "flag BOOLEAN, at TIMESTAMP, nums ARRAY<DOUBLE>, m MAP<STRING, DOUBLE>, "
    "st STRUCT<x: DOUBLE, y: STRING, inner: STRUCT<z: BIGINT, blob: BINARY>>"
)
# fmt: off
ROWS = [
    (1, NAN, NAN, -128, -(2**15), -(2**31), -(2**63), "", b"", False, AT, [NAN, INF, -INF, -0.0], {"": INF, "k": NAN},
     (-INF, "", (-(2**63), b""))),
    (2, INF, INF, 127, 2**15 - 1, 2**31 - 1, 2**63 - 1, "ünï 🎉", b"\x00\xff", True, dt.datetime(2024, 3, 31, 1, 30,
     tzinfo=UTC), [1.7976931348623157e308, 5e-324], {"max": F32_MAX}, (NAN, "x", (2**63 - 1, b"\x00"))),
    (3, -INF, -INF, 0, 0, 0, 0, "0", b"\x00", False, dt.datetime(1970, 1, 1, tzinfo=UTC), [], {}, (-0.0, None, None)),
    (4, -0.0, -0.0, None, None, None, None, None, None, None, None, None, None, None),
    (5, 1.7976931348623157e308, F32_MAX, -1, -1, -1, -1, " ", b" ", True, None, [-5e-324], {"tiny": F32_TINY},
     (5e-324, None, (0, None))),
    (6, 5e-324, F32_TINY, 1, 1, 1, 1, "\x00", b"\xff" * 3, False, None, [0.0], {}, (None, None, (None, None))),
]
# What avro-confluent and json-confluent hold beside: DECIMAL(38, s), DATE, TIMESTAMP_NTZ, and nulls inside.
MORE_COLUMNS = "dec DECIMAL(38, 0), frac DECIMAL(38, 10), day DATE, ntz TIMESTAMP_NTZ, holes ARRAY<STRING>, " \
               "opt MAP<STRING, STRING>"
MORE = [
    (Decimal(-(10**38 - 1)), Decimal("-9999999999999999999999999999.9999999999"), dt.date(1, 1, 1),
     dt.datetime(1, 1, 1), [None, ""], {"k": None}),
    (Decimal(10**38 - 1), Decimal("0.0000000001"), dt.date(9999, 12, 31), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
     [""], {"": ""}),
    (Decimal(0), Decimal("-0.0000000001"), dt.date(1969, 12, 31), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
     [], {}),
    (None, None, None, None, None, None),
    (Decimal(1), Decimal("12345678901234567890123456.7890123456"), dt.date(1970, 1, 1), dt.datetime(1970, 1, 1),
     [None], {"a": "b"}),
    (Decimal(-1), Decimal("1"), dt.date(2000, 2, 29), dt.datetime(2000, 2, 29, 12), ["x", None], {}),
]
# fmt: on
NAMES = ["id", "d", "f", "ti", "si", "i", "bi", "s", "b", "flag", "at", "nums", "m", "st"]
MORE_NAMES = ["dec", "frac", "day", "ntz", "holes", "opt"]


def canonical(value: Any) -> Any:
    """A value comparable with ==: a float by its text (NaN equals NaN, -0.0 is not 0.0), containers inside out."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def as_dict(row: tuple, names: list[str]) -> dict[str, Any]:
    out = dict(zip(names, row))
    st = out.get("st")
    if st is not None:
        inner = st[2] if st[2] is None else {"z": st[2][0], "blob": st[2][1]}
        out["st"] = {"x": st[0], "y": st[1], "inner": inner}
    return out


def json_text(value: Any) -> Any:
    """A value as the json format writes it and JSON (orjson) reads it: NaN and ±Infinity as strings, bytes as
    base64, times as SQL text, a decimal as an integer within 64 bits, else as a double."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Decimal):
        return float(value) if value != value.to_integral_value() or abs(value) >= 2**63 else int(value)
    if isinstance(value, dt.datetime):
        text = value.astimezone(UTC).replace(tzinfo=None).isoformat(" ") if value.tzinfo else value.isoformat(" ")
        text = text.rstrip("0").rstrip(".") if "." in text else text
        return text + ("Z" if value.tzinfo else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: json_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_text(v) for v in value]
    return value


def as_float32(value: Any) -> Any:
    """JSON holds FLOAT as Java's shortest text of the float32: read as a double, compared as a float32."""
    if isinstance(value, float):
        return struct.unpack("f", struct.pack("f", value))[0]
    return value


def proto_dict(message: Any) -> dict[str, Any]:
    """A message's fields as a row: an absent field with presence None, a Timestamp an aware datetime."""
    out = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            out[field.name] = dict(value)
        elif field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED:
            out[field.name] = list(value)
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        elif field.message_type is not None and field.message_type.full_name == "google.protobuf.Timestamp":
            out[field.name] = value.ToDatetime(tzinfo=UTC)
        elif field.message_type is not None:
            out[field.name] = proto_dict(value)
        else:
            out[field.name] = value
    return out


def proto_expected(row: dict) -> dict:
    # Protobuf has no null list or map: an absent repeated field reads as empty.
    return {**row, "nums": row["nums"] or [], "m": row["m"] or {}}


def deserializers(fmt: str, client: Any, topic: str) -> tuple[Callable, Callable]:
    if fmt == "avro-confluent":
        return AvroDeserializer(client), AvroDeserializer(client)
    if fmt == "json-confluent":  # validates each record against the schema its id names
        return JSONDeserializer(None, schema_registry_client=client), JSONDeserializer(
            None, schema_registry_client=client
        )
    key, value = (registered_class(client, f"{topic}-{role}") for role in ("key", "value"))
    conf = {"use.deprecated.format": False}
    return (
        lambda data, ctx: proto_dict(ProtobufDeserializer(key, conf)(data, ctx)),
        lambda data, ctx: proto_dict(ProtobufDeserializer(value, conf)(data, ctx)),
    )


# Per format: whether it holds MORE_COLUMNS, and a row as its deserializer gives it back.
CASES: dict[str, tuple[bool, Callable[[dict], Any]]] = {
    "avro-confluent": (True, lambda row: row),
    "json-confluent": (True, json_text),
    "protobuf-confluent": (False, proto_expected),
}


@pytest.mark.parametrize("fmt", list(CASES))
def test_every_edge_value_written_reads_back_with_confluents_deserializer_from_the_registry(
    spark, new_topic, options, bootstrap, registry_url, fmt
):
    more, expected = CASES[fmt]
    topic = new_topic()
    opts = options(topic, {"value.fields-include": "ALL"})
    for role in ("key", "value"):
        opts |= {f"{role}.format": fmt, f"{role}.{fmt}.url": registry_url}
    rows = [(*r, *m) for r, m in zip(ROWS, MORE)] if more else ROWS
    write(spark, opts, rows, f"{COLUMNS}, {MORE_COLUMNS}" if more else COLUMNS)

    client = confluent_client(registry_url)
    keys, values = deserializers(fmt, client, topic)
    records = consume_all(bootstrap, topic)
    read = [
        (
            keys(k, SerializationContext(topic, MessageField.KEY)),
            values(v, SerializationContext(topic, MessageField.VALUE)),
        )
        for *_, k, v in records
    ]
    if fmt == "json-confluent":  # FLOAT as a float32, whichever digits Java wrote
        read = [(k, {**v, "f": as_float32(v["f"])}) for k, v in read]

    names = NAMES + MORE_NAMES if more else NAMES
    assert [canonical(k) for k, _ in read] == [{"id": r[0]} for r in rows]
    assert [canonical(v) for _, v in read] == [canonical(expected(as_dict(r, names))) for r in rows]
