"""maxwell-json: Maxwell's daemon's messages, as Flink reads and writes them.

A message is `{"database": ..., "table": ..., "type": "update", "ts": <seconds>, "xid": ..., "commit": true,
"data": row, "old": {changed fields}, "primary_key_columns": [...]}`: one row. `insert` (and Maxwell's
`bootstrap-insert`, a snapshot row) gives an insert of `data`; `update` a pre-image (`data` with its `old`
fields put back) and the post-image `data`; `delete` a delete of `data`. Bootstrap markers and DDL messages
carry no rows. Written like Flink's serializer: `{"data":row,"type":"insert"}` for an insert or update,
`{"data":row,"type":"delete"}` for a delete.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.change_kind import ChangeKind
from ..codec import ChangelogDecoder, ChangelogEncoder
from .columns import TIMESTAMP_MS, column_names, epoch_millis, equal_to, millis_to_timestamp, text
from .envelope import Changes, EnvelopeCodec, EnvelopeDecoder, Envelopes, row_slots, update_rows

_INSERTS = ("insert", "bootstrap-insert")
# Messages without rows: bootstrap markers, and DDL (with output_ddl).
_NO_ROWS = (
    "bootstrap-start",
    "bootstrap-complete",
    "database-create",
    "database-alter",
    "database-drop",
    "table-create",
    "table-alter",
    "table-drop",
)


class MaxwellJsonCodec(EnvelopeCodec):
    name = "maxwell-json"
    readable_metadata = {
        "database": pa.string(),
        "table": pa.string(),
        "primary-key-columns": pa.list_(pa.string()),
        "ingestion-timestamp": TIMESTAMP_MS,
    }

    def changelog_decoder(self, schema: pa.Schema, metadata: Sequence[str] = ()) -> ChangelogDecoder:
        return MaxwellDecoder(self, schema, metadata)

    def encoder(self, schema: pa.Schema) -> ChangelogEncoder:
        return self.envelope_encoder(schema, (b'{"data":', b',"type":"insert"}'), (b'{"data":', b',"type":"delete"}'))


class MaxwellDecoder(EnvelopeDecoder):
    def envelope_schemas(self) -> list[pa.Schema]:
        image = self.relaxed_image()
        fields = [("data", image), ("old", image), ("type", pa.string())]
        extra = {
            "database": ("database", pa.string()),
            "table": ("table", pa.string()),
            "primary-key-columns": ("primary_key_columns", pa.list_(pa.string())),
            "ingestion-timestamp": ("ts", pa.int64()),
        }
        return [pa.schema(fields + [extra[k] for k in self.metadata])]

    def envelopes(self, batch: pa.RecordBatch) -> Envelopes:
        kind, data, old = batch.column("type"), batch.column("data"), batch.column("old")
        inserted = pc.fill_null(pc.is_in(kind, value_set=pa.array(_INSERTS)), False)
        updated, deleted = equal_to(kind, "update"), equal_to(kind, "delete")
        rows = pc.or_(pc.or_(inserted, updated), deleted)
        no_rows = pc.fill_null(pc.is_in(kind, value_set=pa.array(_NO_ROWS)), False)
        broken = pc.or_(pc.invert(data.is_valid()), pc.and_(updated, pc.invert(old.is_valid())))
        bad = pc.or_(pc.and_(rows, broken), pc.and_(pc.invert(rows), pc.invert(no_rows)))
        slots = row_slots(data, old, inserted, updated, deleted)
        metadata = {}
        for key in self.metadata:
            if key == "ingestion-timestamp":  # Maxwell's ts is in seconds
                metadata[key] = millis_to_timestamp(batch.column("ts"), factor=1000)
            else:
                metadata[key] = batch.column("primary_key_columns" if key == "primary-key-columns" else key)
        return Envelopes(slots, bad, metadata, partial=updated)

    def changes_of(self, envelope: dict[str, Any]) -> tuple[Changes, dict[str, Any]]:
        kind, data, old = envelope.get("type"), envelope.get("data"), envelope.get("old")
        if kind in _NO_ROWS:
            return [], {}
        if kind not in (*_INSERTS, "update", "delete"):
            raise ValueError(f"unknown type {text(kind)}; Maxwell's row types are insert, update, delete")
        if data is None:
            raise ValueError(f"a {kind} message has no 'data' row")
        if kind == "update":
            if not isinstance(old, dict) or not isinstance(data, dict):
                raise ValueError("an update message needs 'data' and 'old' objects")
            rows = update_rows(data, old)
        else:
            rows = [(ChangeKind.DELETE if kind == "delete" else ChangeKind.INSERT, data)]
        return rows, {k: self._metadata_value(k, envelope) for k in self.metadata}

    def _metadata_value(self, key: str, envelope: dict[str, Any]) -> Any:
        if key == "ingestion-timestamp":
            seconds = epoch_millis(envelope.get("ts"), "ts")
            return None if seconds is None else seconds * 1000
        if key == "primary-key-columns":
            return column_names(envelope.get("primary_key_columns"), "primary_key_columns")
        return text(envelope.get(key))
