"""The Protobuf message type of a table's columns: what protobuf-confluent registers and writes when no message type
is given, as avro-confluent and json-confluent derive their schemas (Confluent's Flink does the same for
`proto-registry`: one proto3 message `Row`, nullable scalars `optional`).

Every column maps to the field the protobuf format reads back into the same column (schema.py's mapping), or
the table is refused on the driver naming the column and what to change: protobuf has no DECIMAL, DATE or TIME
type of its own here, no list of lists and no null list.
"""

from __future__ import annotations

import re

import pyarrow as pa
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor

from ...kernel.errors import FormatOptionError
from .schema import TIMESTAMP, pool_of

ROW = "Row"
_FILE = "row.proto"
_TIMESTAMP_FILE = "google/protobuf/timestamp.proto"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
P = descriptor_pb2.FieldDescriptorProto
_SCALARS = [
    (pa.types.is_boolean, P.TYPE_BOOL),
    (lambda t: t in (pa.int8(), pa.int16(), pa.int32()), P.TYPE_INT32),
    (lambda t: t == pa.int64(), P.TYPE_INT64),
    (pa.types.is_float32, P.TYPE_FLOAT),
    (pa.types.is_float64, P.TYPE_DOUBLE),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), P.TYPE_STRING),
    (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), P.TYPE_BYTES),
]
_MAP_KEYS = [pa.types.is_boolean, pa.types.is_integer, pa.types.is_string, pa.types.is_large_string]


def derived_message(schema: pa.Schema, option: str) -> Descriptor:
    """The message `Row` of file `row.proto` (proto3, no package) with a field per column, numbered in column
    order: a nullable scalar is `optional`, a STRUCT a nested message, an ARRAY `repeated`, a MAP a `map`, a
    TIMESTAMP a google.protobuf.Timestamp. `option`: the message type's option, named in errors."""
    deriver = _Deriver(option)
    deriver.message(deriver.file.message_type.add(), f".{ROW}", list(schema))
    try:
        return pool_of([deriver.file]).FindMessageTypeByName(ROW)
    except (TypeError, KeyError) as e:  # names protobuf refuses that the checks let through (a_b and aB)
        raise FormatOptionError(
            f"protobuf-confluent cannot derive a message type from the columns ({e}): rename them, or give the message "
            f"type with '{option}'"
        ) from None


class _Deriver:
    def __init__(self, option: str) -> None:
        self.option = option
        self.file = descriptor_pb2.FileDescriptorProto(name=_FILE, syntax="proto3")

    def message(self, message: descriptor_pb2.DescriptorProto, full_name: str, fields: list[pa.Field]) -> None:
        """Fill `message` (full name `full_name`; types are named fully qualified) with a field per column."""
        message.name = full_name.rsplit(".", 1)[1]
        for number, column in enumerate(fields, start=1):
            if not _NAME.match(column.name):
                raise self._refused(column.name, "its name (letters, digits and _, not first a digit)", "rename it")
            field = message.field.add(name=column.name, number=number, label=P.LABEL_OPTIONAL)
            t = column.type
            if pa.types.is_map(t):
                entry = message.nested_type.add(name=f"{_camel(column.name)}Entry")
                entry.options.map_entry = True
                if not any(test(t.key_type) for test in _MAP_KEYS):
                    raise self._refused(column.name, f"a map key of type {t.key_type}", "cast the keys to STRING")
                key = entry.field.add(name="key", number=1, label=P.LABEL_OPTIONAL)
                self.single(key, t.key_type, column.name, message, full_name, element=True)
                value = entry.field.add(name="value", number=2, label=P.LABEL_OPTIONAL)
                self.single(value, t.item_type, column.name, message, full_name, element=True)
                field.label, field.type, field.type_name = P.LABEL_REPEATED, P.TYPE_MESSAGE, f"{full_name}.{entry.name}"
            elif pa.types.is_list(t) or pa.types.is_large_list(t):
                field.label = P.LABEL_REPEATED
                self.single(field, t.value_type, column.name, message, full_name, element=True)
            else:
                self.single(field, t, column.name, message, full_name, element=False)
                if column.nullable and field.type != P.TYPE_MESSAGE:  # proto3 `optional`: a synthetic oneof
                    field.proto3_optional = True
                    field.oneof_index = len(message.oneof_decl)
                    message.oneof_decl.add(name=f"_{column.name}")

    def single(self, field: P, t: pa.DataType, column: str, owner: descriptor_pb2.DescriptorProto, owner_name: str,
               element: bool) -> None:  # fmt: skip
        """Set `field`'s type to hold one value of column type `t` (`element`: of a repeated field or a map); a
        STRUCT becomes a message nested in `owner`."""
        for test, scalar in _SCALARS:
            if test(t):
                field.type = scalar
                return
        if pa.types.is_timestamp(t):
            if _TIMESTAMP_FILE not in self.file.dependency:
                self.file.dependency.append(_TIMESTAMP_FILE)
            field.type, field.type_name = P.TYPE_MESSAGE, f".{TIMESTAMP}"
            return
        if pa.types.is_struct(t):
            nested = f"{owner_name}.{_camel(column)}Row"
            self.message(owner.nested_type.add(), nested, list(t))
            field.type, field.type_name = P.TYPE_MESSAGE, nested
            return
        if element and (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)):
            raise self._refused(column, "a list or map inside a list or map", "wrap the inner value in a STRUCT")
        raise self._refused(column, f"the column type {t}", "cast it (a DECIMAL to STRING, a DATE to TIMESTAMP)")

    def _refused(self, column: str, what: str, change: str) -> FormatOptionError:
        return FormatOptionError(
            f"column '{column}': protobuf-confluent derives no protobuf field for {what}: {change}, or give the "
            f"message type with '{self.option}'"
        )


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))
