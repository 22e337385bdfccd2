"""ogg-json: Oracle GoldenGate's JSON change messages (its Kafka handler's `json` format), as Flink reads and
writes them.

A message is `{"table": "OGG.TBL", "op_type": "U", "op_ts": "2020-05-13 15:40:06.000000", "current_ts":
"2020-05-13T15:40:07.000000", "pos": "...", "primary_keys": [...], "before": row, "after": row}`. op_type `I` gives
an insert of `after`; `U` an update: the pre-image `before` (when GoldenGate sends it) and the post-image `after`;
`D` a delete of `before`; `T` (a truncate) is not a change of keys and fails, as in Flink. Flink's metadata:
`table`, `primary-keys`, `ingestion-timestamp` (`current_ts`) and `event-timestamp` (`op_ts`), the two timestamps
read as UTC with microseconds (Flink's TIMESTAMP_LTZ(6)). Written like Flink's serializer: `{"before":null,
"after":row,"op_type":"I"}` for an insert or update, `{"before":row,"after":null,"op_type":"D"}` for a delete.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ...kernel.change_kind import ChangeKind
from ..codec import ChangelogDecoder, ChangelogEncoder
from .columns import column_names, equal_to, show, text
from .envelope import Changes, EnvelopeCodec, EnvelopeDecoder, Envelopes, image_slots

TIMESTAMP_US = pa.timestamp("us", tz="UTC")  # Flink's TIMESTAMP_LTZ(6) metadata
_EPOCH = dt.datetime(1970, 1, 1)
# Metadata key: the message's field and its type as the fast path reads it.
_FIELDS = {
    "table": ("table", pa.string()),
    "primary-keys": ("primary_keys", pa.list_(pa.string())),
    "ingestion-timestamp": ("current_ts", pa.string()),
    "event-timestamp": ("op_ts", pa.string()),
}


class OggJsonCodec(EnvelopeCodec):
    name = "ogg-json"
    readable_metadata = {
        "table": pa.string(),
        "primary-keys": pa.list_(pa.string()),
        "ingestion-timestamp": TIMESTAMP_US,
        "event-timestamp": TIMESTAMP_US,
    }

    def changelog_decoder(self, schema: pa.Schema, metadata: Sequence[str] = ()) -> ChangelogDecoder:
        return OggDecoder(self, schema, metadata)

    def encoder(self, schema: pa.Schema) -> ChangelogEncoder:
        if self.rows.ignore_null_fields:  # Flink leaves the null image out of the envelope too
            return self.envelope_encoder(
                schema, (b'{"after":', b',"op_type":"I"}'), (b'{"before":', b',"op_type":"D"}')
            )
        return self.envelope_encoder(
            schema,
            (b'{"before":null,"after":', b',"op_type":"I"}'),
            (b'{"before":', b',"after":null,"op_type":"D"}'),
        )


class OggDecoder(EnvelopeDecoder):
    def envelope_schemas(self) -> list[pa.Schema]:
        image = self.relaxed_image()
        fields = [("before", image), ("after", image), ("op_type", pa.string())]
        return [pa.schema(fields + [_FIELDS[k] for k in self.metadata])]

    def envelopes(self, batch: pa.RecordBatch) -> Envelopes | None:
        before, after, op = batch.column("before"), batch.column("after"), batch.column("op_type")
        slots, bad = image_slots(before, after, *(equal_to(op, o) for o in "IUD"))
        metadata = {}
        for key in self.metadata:
            column = batch.column(_FIELDS[key][0])
            if key.endswith("-timestamp"):
                try:  # Arrow reads both of GoldenGate's forms ("2020-05-13 15:40:06.000000", with a 'T' too)
                    column = column.cast(pa.timestamp("us")).cast(TIMESTAMP_US)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    return None  # the per-envelope path names the record with the text it cannot read
            metadata[key] = column
        return Envelopes(slots, bad, metadata)

    def changes_of(self, envelope: dict[str, Any]) -> tuple[Changes, dict[str, Any]]:
        op, before, after = envelope.get("op_type"), envelope.get("before"), envelope.get("after")
        if op in ("I", "U") and after is None:
            raise ValueError(f"a message with op_type '{op}' has no 'after' row")
        if op == "I":
            rows = [(ChangeKind.INSERT, after)]
        elif op == "U":
            rows = ([] if before is None else [(ChangeKind.UPDATE_BEFORE, before)]) + [(ChangeKind.UPDATE_AFTER, after)]
        elif op == "D":
            if before is None:
                raise ValueError(
                    "a message with op_type 'D' has no 'before' row to name the deleted key; configure GoldenGate "
                    "to write before images (e.g. its Kafka handler's includeBeforeImage / GETBEFORECOLS)"
                )
            rows = [(ChangeKind.DELETE, before)]
        elif op == "T":
            raise ValueError("a truncate message (op_type 'T') empties the whole table: it is not a change of keys")
        else:
            raise ValueError(f"unknown op_type {show(op)}; GoldenGate's are I, U, D (and T, a truncate)")
        return rows, {k: self._metadata_value(k, envelope) for k in self.metadata}

    def _metadata_value(self, key: str, envelope: dict[str, Any]) -> Any:
        field = _FIELDS[key][0]
        value = envelope.get(field)
        if key == "primary-keys":
            return column_names(value, field)
        if key == "table":
            return text(value)
        return _micros(value, field)


def _micros(value: Any, name: str) -> int | None:
    """GoldenGate's timestamp text ("2020-05-13 15:40:06.000000", or with a 'T') as UTC epoch microseconds."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"'{name}' is not a timestamp text: {show(value)}")
    try:
        at = dt.datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"'{name}' is not a timestamp like 2020-05-13 15:40:06.000000: {show(value)}") from None
    if at.tzinfo is not None:
        at = at.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return (at - _EPOCH) // dt.timedelta(microseconds=1)
