"""Executor side: Kafka records -> key/value codecs -> Arrow record batches in the table's schema.

Changelog mode turns each chunk into one batch (a tombstone is a `delete` row: key columns set, value
columns null). Table mode first keeps the latest record per key bytes (two C-speed dict updates per
chunk, so memory follows distinct keys, not records), then decodes only what survives, so values
that were overwritten or deleted are never decoded at all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from connector.errors import RecordError, escaped_prefix
from connector.fetch import CHUNK_RECORDS, Chunk
from connector.offsets import PartitionRange
from connector.read_options import ReadSpec
from formats import Codec, Decoder

log = logging.getLogger("upsert_kafka")

UPSERT, DELETE = "upsert", "delete"


class RangeDecoder:
    """Decodes the records of one partition range; counts what it skips and logs it at the end."""

    def __init__(self, spec: ReadSpec, rng: PartitionRange) -> None:
        layout = spec.layout
        self.spec, self.rng, self.layout = spec, rng, layout
        self.key_decoder = layout.key_codec.decoder(layout.key_schema)
        self.value_decoder = layout.value_codec.decoder(layout.value_schema)
        self.null_keys = 0
        self.bad_records = 0

    # -- the two read modes ------------------------------------------------------------------

    def changelog(self, chunks: Iterable[Chunk]) -> Iterator[pa.RecordBatch]:
        for chunk in chunks:
            keys, values, offsets = self._drop_null_keys(chunk.keys, chunk.values, chunk.offsets)
            if keys:
                batch = self._decode_records(keys, values, offsets)
                if batch.num_rows:
                    yield batch
        self._log_skips()

    def table(self, chunks: Iterable[Chunk]) -> Iterator[pa.RecordBatch]:
        latest_value: dict[bytes, bytes | None] = {}
        latest_offset: dict[bytes, int] = {}
        for chunk in chunks:
            keys, values, offsets = self._drop_null_keys(chunk.keys, chunk.values, chunk.offsets)
            latest_value.update(zip(keys, values))
            latest_offset.update(zip(keys, offsets))
        if latest_value:
            key_batch, values, offsets = self._latest_per_decoded_key(
                list(latest_value), list(latest_value.values()), list(latest_offset.values())
            )
            live = [i for i, v in enumerate(values) if v is not None]
            for start in range(0, len(live), CHUNK_RECORDS):
                part = live[start : start + CHUNK_RECORDS]
                batch = self._with_values(
                    key_batch.take(pa.array(part, pa.int64())),
                    [values[i] for i in part],
                    [offsets[i] for i in part],
                )
                if batch.num_rows:
                    yield batch
        self._log_skips()

    # -- steps -------------------------------------------------------------------------------

    def _drop_null_keys(
        self, keys: list[bytes | None], values: list[bytes | None], offsets: list[int]
    ) -> tuple[list, list, list]:
        if None not in keys:
            return keys, values, offsets
        kept = [i for i, k in enumerate(keys) if k is not None]
        self.null_keys += len(keys) - len(kept)
        return [keys[i] for i in kept], [values[i] for i in kept], [offsets[i] for i in kept]

    def _latest_per_decoded_key(
        self, keys: list, values: list, offsets: list
    ) -> tuple[pa.RecordBatch, list, list]:
        """Decode the keys; two encodings of one logical key (e.g. JSON with other spacing) are one key,
        of which the record with the highest offset wins. Exact for every format."""
        key_batch, keys, values, offsets = self._decode_keys(keys, values, offsets)
        table = pa.Table.from_batches([key_batch]).append_column("__offset", pa.array(offsets, pa.int64()))
        try:
            latest = table.group_by(list(self.layout.key_fields)).aggregate([("__offset", "max")])
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return key_batch, values, offsets  # key types Arrow cannot group: key bytes are the identity
        if latest.num_rows == table.num_rows:
            return key_batch, values, offsets
        keep = pc.is_in(table["__offset"], value_set=latest["__offset_max"])
        kept = pc.indices_nonzero(keep).to_pylist()
        return key_batch.filter(keep.combine_chunks()), [values[i] for i in kept], [offsets[i] for i in kept]

    def _decode_records(
        self, keys: list[bytes], values: list[bytes | None], offsets: list[int]
    ) -> pa.RecordBatch:
        key_batch, keys, values, offsets = self._decode_keys(keys, values, offsets)
        return self._with_values(key_batch, values, offsets)

    def _with_values(
        self, key_batch: pa.RecordBatch, values: list[bytes | None], offsets: list[int]
    ) -> pa.RecordBatch:
        """Decode the values (None: a tombstone) of the records whose keys are decoded in key_batch."""
        present = [v is not None for v in values]
        payloads = [v for v in values if v is not None]
        value_offsets = [o for o, p in zip(offsets, present) if p]
        value_batch, bad = self._decode(
            "value", self.value_decoder, self.layout.value_codec, payloads, value_offsets
        )
        if bad:
            # Drop the records whose value failed (ignore-parse-errors) from the key side too.
            record_of_payload = [i for i, p in enumerate(present) if p]
            dropped = {record_of_payload[j] for j in bad}
            keep = [i not in dropped for i in range(len(present))]
            key_batch = key_batch.filter(pa.array(keep))
            present = [p for p, k in zip(present, keep) if k]
        return self._assemble(key_batch, value_batch, present)

    def _decode_keys(
        self, keys: list, values: list, offsets: list
    ) -> tuple[pa.RecordBatch, list, list, list]:
        key_batch, bad = self._decode("key", self.key_decoder, self.layout.key_codec, keys, offsets)
        key_batch = pa.RecordBatch.from_arrays(key_batch.columns, names=list(self.layout.key_fields))
        if bad:
            kept = [i for i in range(len(keys)) if i not in bad]
            keys, values, offsets = (
                [keys[i] for i in kept],
                [values[i] for i in kept],
                [offsets[i] for i in kept],
            )
        return key_batch, keys, values, offsets

    def _decode(
        self, role: str, decoder: Decoder, codec: Codec, payloads: Sequence[bytes], offsets: Sequence[int]
    ) -> tuple[pa.RecordBatch, set[int]]:
        decoded = decoder.decode(payloads)
        if not decoded.failures:
            return decoded.batch, set()
        if not codec.ignore_parse_errors:
            index, reason = decoded.failures[0]
            hint = (
                f" To skip such records set '{role}.{codec.name}.ignore-parse-errors' to true."
                if "ignore-parse-errors" in codec.option_names
                else ""
            )
            raise RecordError(
                f"cannot decode the {role} of the record at topic '{self.rng.topic}' partition "
                f"{self.rng.partition} offset {offsets[index]} with format '{codec.name}': {reason}; "
                f"{role} bytes: {escaped_prefix(payloads[index])}.{hint}"
            )
        self.bad_records += len(decoded.failures)
        return decoded.batch, {i for i, _ in decoded.failures}

    def _assemble(
        self, key_batch: pa.RecordBatch, value_batch: pa.RecordBatch, present: list[bool]
    ) -> pa.RecordBatch:
        """Columns in the table's order: keys from the key, the rest from the value (null for deletes)."""
        present_mask = pa.array(present, pa.bool_())
        if not all(present):
            # Row i of the output takes value row (number of values before it), or null for a tombstone.
            position = pc.subtract(pc.cumulative_sum(pc.cast(present_mask, pa.int64())), 1)
            value_batch = value_batch.take(pc.if_else(present_mask, position, None))
        layout, columns = self.layout, []
        for name in layout.arrow_schema.names:
            if name == layout.changelog_column:
                columns.append(pc.if_else(present_mask, UPSERT, DELETE))
            elif name in layout.key_fields:
                columns.append(key_batch.column(name))
            else:
                columns.append(value_batch.column(name))
        return pa.RecordBatch.from_arrays(columns, schema=layout.arrow_schema)

    def _log_skips(self) -> None:
        if self.null_keys or self.bad_records:
            log.warning(
                "%s: skipped %d record(s) with a null key and %d that failed to decode (ignore-parse-errors)",
                self.rng,
                self.null_keys,
                self.bad_records,
            )
