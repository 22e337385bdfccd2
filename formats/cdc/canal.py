"""canal-json: Alibaba Canal's flat messages, as Flink reads and writes them.

A message is `{"data": [row, ...], "old": [changed fields, ...], "type": "UPDATE", "database": ..., "table": ...,
"es": ..., "ts": ..., "pkNames": [...], "isDdl": false, "sqlType": {...}, "mysqlType": {...}, ...}`: one
statement's rows. INSERT (and INIT, Canal's initial snapshot, as Flink reads it) gives an insert of each row;
UPDATE a pre-image (the row with its `old` fields put back) and a post-image per row; DELETE a delete per row. DDL
messages (`isDdl`, and Flink's `CREATE`) carry no rows. Canal writes every value as a string ("111", "5.18"):
numbers and booleans are read from their text; Flink's serializer writes JSON numbers, read too. Written like
Flink's serializer: `{"data":[row], "type":"INSERT"}` for an insert or update, `{"data":[row],"type":"DELETE"}` for
a delete.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.change_kind import ChangeKind
from ...kernel.option_kinds import FORMAT, Option, Regex
from ..codec import ChangelogDecoder, ChangelogEncoder, CodecContext
from ..json.values import Convert
from .columns import TIMESTAMP_MS, cast_columns, column_names, epoch_millis, equal_to, millis_to_timestamp, text
from .envelope import Changes, EnvelopeCodec, EnvelopeDecoder, Envelopes, row_slots, update_rows
from .text_values import text_converter, text_fits, text_types

_ROW_TYPES = ("INSERT", "UPDATE", "DELETE")
_SNAPSHOT = "INIT"  # a row of the initial snapshot: an insert (Flink's reading)


DATABASE_INCLUDE: Option[re.Pattern[str] | None] = Option(
    "database.include",
    None,
    FORMAT,
    "Read only messages whose `database` fully matches this regular expression (Python's `re`); a "
    "message without the name fails.",
    kind=Regex(),
)
TABLE_INCLUDE: Option[re.Pattern[str] | None] = Option(
    "table.include",
    None,
    FORMAT,
    "Read only messages whose `table` fully matches this regular expression (Python's `re`); a message "
    "without the name fails.",
    kind=Regex(),
)
# The envelope's field each option matches.
_INCLUDES = {"database": DATABASE_INCLUDE, "table": TABLE_INCLUDE}


class CanalJsonCodec(EnvelopeCodec):
    name = "canal-json"
    declared_options = (*EnvelopeCodec.declared_options, DATABASE_INCLUDE, TABLE_INCLUDE)
    readable_metadata = {
        "database": pa.string(),
        "table": pa.string(),
        "sql-type": pa.map_(pa.string(), pa.int32()),
        "pk-names": pa.list_(pa.string()),
        "ingestion-timestamp": TIMESTAMP_MS,
        "event-timestamp": TIMESTAMP_MS,
    }

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.include = {name: self.option_values.value(option) for name, option in _INCLUDES.items()}

    def changelog_decoder(self, schema: pa.Schema, metadata: Sequence[str] = ()) -> ChangelogDecoder:
        return CanalDecoder(self, schema, metadata)

    def encoder(self, schema: pa.Schema) -> ChangelogEncoder:
        return self.envelope_encoder(
            schema, (b'{"data":[', b'],"type":"INSERT"}'), (b'{"data":[', b'],"type":"DELETE"}')
        )


class CanalDecoder(EnvelopeDecoder):
    slow_metadata = frozenset({"sql-type"})
    codec: CanalJsonCodec

    def converter(self, t: pa.DataType) -> Convert:
        return text_converter(t, super().converter(t))

    def envelope_schemas(self) -> list[pa.Schema]:
        texts = text_types(self.schema)
        images = [self.relaxed_image(texts), self.relaxed_image()] if texts else [self.relaxed_image()]
        return [self._schema(image) for image in images]

    def _schema(self, image: pa.StructType) -> pa.Schema:
        fields = [
            ("data", pa.list_(image)),
            ("old", pa.list_(image)),
            ("type", pa.string()),
            ("isDdl", pa.bool_()),
            ("database", pa.string()),
            ("table", pa.string()),
        ]
        extra = {"ingestion-timestamp": ("ts", pa.int64()), "event-timestamp": ("es", pa.int64())}
        fields += [extra[k] for k in self.metadata if k in extra]
        if "pk-names" in self.metadata:
            fields.append(("pkNames", pa.list_(pa.string())))
        return pa.schema(fields)

    def image_columns(self, images: pa.StructArray) -> list[pa.Array] | None:
        columns = images.flatten()
        return cast_columns(columns, self.schema) if text_fits(columns, self.schema) else None

    def envelopes(self, batch: pa.RecordBatch) -> Envelopes:
        n = batch.num_rows
        kind, data, old = batch.column("type"), batch.column("data"), batch.column("old")
        inserted, updated, deleted = (equal_to(kind, t) for t in _ROW_TYPES)
        inserted = pc.or_(inserted, equal_to(kind, _SNAPSHOT))
        rows = pc.or_(pc.or_(inserted, updated), deleted)
        ddl = pc.or_(pc.fill_null(batch.column("isDdl"), False), equal_to(kind, "CREATE"))
        no_rows = pc.and_(pc.and_(pc.invert(rows), ddl), pc.invert(equal_to(kind, "TRUNCATE")))
        included, unnamed = self._included(batch)

        # One element per row of `data`, with its envelope, and the `old` row at the same place.
        parent = pc.list_parent_indices(data)
        elements = pc.list_flatten(data)
        lengths = pc.fill_null(pc.list_value_length(data), 0)
        position = pc.subtract(pa.array(range(len(parent)), pa.int64()), _starts(lengths).take(parent))
        old_lengths = pc.list_value_length(old)
        aligned = pc.and_(updated, pc.fill_null(pc.equal(old_lengths, lengths), False))
        old_index = pc.add(_starts(pc.fill_null(old_lengths, 0)).take(parent), position)
        olds = pc.list_flatten(old).take(pc.if_else(aligned.take(parent), old_index, None))
        null_row = _any_per_envelope(pc.invert(elements.is_valid()), parent, n)
        null_old = _any_per_envelope(pc.and_(aligned.take(parent), pc.invert(olds.is_valid())), parent, n)

        broken = pc.or_(pc.or_(pc.invert(data.is_valid()), null_row), pc.and_(updated, pc.invert(aligned)))
        broken = pc.or_(broken, null_old)
        faulty = pc.or_(pc.and_(rows, broken), pc.and_(pc.invert(rows), pc.invert(no_rows)))
        bad = pc.or_(unnamed, pc.and_(included, faulty))

        take = pc.and_(included, rows).take(parent)
        slots = row_slots(elements, olds, *(pc.and_(take, kind.take(parent)) for kind in (inserted, updated, deleted)))
        return Envelopes(slots, bad, self._metadata(batch), element_records=parent, partial=updated)

    def _included(self, batch: pa.RecordBatch) -> tuple[pa.BooleanArray, pa.BooleanArray]:
        """Which envelopes database.include / table.include let through, and which name no database / table
        to match (full match of Python's re, on each distinct name once)."""
        included = pa.repeat(pa.scalar(True), batch.num_rows)
        unnamed = pa.repeat(pa.scalar(False), batch.num_rows)
        for name, pattern in self.codec.include.items():
            if pattern is None:
                continue
            column = batch.column(name)
            names = [v for v in pc.unique(column).to_pylist() if v is not None]
            matching = pa.array([v for v in names if pattern.fullmatch(v)], pa.string())
            included = pc.and_(included, pc.is_in(column, value_set=matching))
            unnamed = pc.or_(unnamed, column.is_null())
        return included, unnamed

    def _metadata(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        out = {"database": batch.column("database"), "table": batch.column("table")}
        if "ingestion-timestamp" in self.metadata:
            out["ingestion-timestamp"] = millis_to_timestamp(batch.column("ts"))
        if "event-timestamp" in self.metadata:
            out["event-timestamp"] = millis_to_timestamp(batch.column("es"))
        if "pk-names" in self.metadata:
            out["pk-names"] = batch.column("pkNames")
        return out

    def changes_of(self, envelope: dict[str, Any]) -> tuple[Changes, dict[str, Any]]:
        for name, pattern in self.codec.include.items():
            if pattern is None:
                continue
            value = envelope.get(name)
            if not isinstance(value, str):
                raise ValueError(f"no '{name}' name to match option '{self.codec.prefix}{_INCLUDES[name].name}'")
            if not pattern.fullmatch(value):
                return [], {}
        kind = envelope.get("type")
        if kind == _SNAPSHOT:
            kind = "INSERT"
        if kind not in _ROW_TYPES:
            if kind == "TRUNCATE":
                raise ValueError("a TRUNCATE message empties the whole table: it is not a change of keys")
            if envelope.get("isDdl") is True or kind == "CREATE":
                return [], {}
            raise ValueError(f"unknown type {text(kind)}; Canal's row types are INSERT, UPDATE, DELETE and INIT")
        data = envelope.get("data")
        if not isinstance(data, list) or None in data:
            raise ValueError(f"a {kind} message needs 'data', an array of rows")
        if kind == "INSERT":
            rows = [(ChangeKind.INSERT, row) for row in data]
        elif kind == "DELETE":
            rows = [(ChangeKind.DELETE, row) for row in data]
        else:
            old = envelope.get("old")
            if not isinstance(old, list) or len(old) != len(data) or not all(isinstance(o, dict) for o in old):
                raise ValueError("an UPDATE message needs 'old', one object of changed fields per row of 'data'")
            rows = [change for row, was in zip(data, old) for change in _update(row, was)]
        return rows, {k: self._metadata_value(k, envelope) for k in self.metadata}

    def _metadata_value(self, key: str, envelope: dict[str, Any]) -> Any:
        if key in ("ingestion-timestamp", "event-timestamp"):
            field = "ts" if key == "ingestion-timestamp" else "es"
            return epoch_millis(envelope.get(field), field)
        if key == "pk-names":
            return column_names(envelope.get("pkNames"), "pkNames")
        if key == "sql-type":
            types = envelope.get("sqlType")
            return None if types is None else [(k, _sql_type(v)) for k, v in types.items()]
        return text(envelope.get(key))


def _update(row: object, old: dict[str, object]) -> Changes:
    if not isinstance(row, dict):
        raise TypeError("a row of 'data' must be a JSON object")
    return update_rows(row, old)


def _sql_type(value: Any) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"'sqlType' values are JDBC type numbers, got {text(value)}")


def _starts(lengths: pa.Array) -> pa.Array:
    """Where each list starts among all lists' elements laid end to end."""
    lengths = lengths.cast(pa.int64())
    return pc.subtract(pc.cumulative_sum(lengths), lengths) if len(lengths) else lengths


def _any_per_envelope(flags: pa.BooleanArray, parent: pa.Array, n: int) -> pa.BooleanArray:
    """Per envelope, whether any of its elements is flagged."""
    flagged = parent.filter(pc.fill_null(flags, False))
    return pc.is_in(pa.array(range(n), pa.int64()), value_set=flagged)
