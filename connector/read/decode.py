"""Executor side: Kafka records -> key/value codecs -> Arrow record batches in the table's schema.

Changelog mode turns each chunk into one batch (a tombstone is a `delete` row: key columns set, value
columns null). Table mode (and a compacted changelog) first keeps the latest record per key in Arrow, within
scan.table.memory-budget and spilling beyond it (table.py): keys are decoded once per surviving record, values
only of what survives to the end, so values that were overwritten or deleted are never decoded at all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError, escaped_prefix
from ..formats import ChangeKind, ChangelogCodec, Codec, Decoder
from .fetch import CHUNK_RECORDS, Records
from .offsets import PartitionRange
from .spec import ReadSpec
from .table import HEADER_LIST, IDENT, KEY, OFFSET, LatestPerKey, key_identity, records_table, table_records

log = logging.getLogger("upsert_kafka")

KEY_COLUMN = "k:"  # the reducer's columns of decoded key fields are named KEY_COLUMN + field


class RangeDecoder:
    """Decodes the records of one partition range; counts what it skips and logs it at the end."""

    def __init__(self, spec: ReadSpec, rng: PartitionRange) -> None:
        layout = spec.layout
        self.spec, self.rng, self.layout = spec, rng, layout
        self.key_decoder = layout.key_codec.decoder(layout.key_schema)
        self.value_decoder = layout.value_codec.decoder(layout.value_schema)
        self.null_keys = 0
        self.bad_records = 0

    # -- the read modes --------------------------------------------------------------------------

    def changelog(self, chunks: Iterable[Records]) -> Iterator[pa.RecordBatch]:
        if self.spec.compact:
            yield from self._latest_per_key(chunks, keep_deletes=True)
            return
        for chunk in chunks:
            records = self._drop_null_keys(chunk)
            if len(records):
                key_batch, records = self._decode_keys(records)
                batch = self._with_values(key_batch, records)
                if batch.num_rows:
                    yield batch
        self._log_skips()

    def table(self, chunks: Iterable[Records]) -> Iterator[pa.RecordBatch]:
        yield from self._latest_per_key(chunks, keep_deletes=False)

    def _latest_per_key(self, chunks: Iterable[Records], keep_deletes: bool) -> Iterator[pa.RecordBatch]:
        reducer = LatestPerKey(self.spec.table_memory_budget, self._identify)
        try:
            for chunk in chunks:
                records = self._drop_null_keys(chunk)
                if len(records):
                    reducer.add(records_table(records))
            # A compacted changelog keeps its deletes, in offset order; a table, the live keys.
            for table in reducer.results(keep_deletes, CHUNK_RECORDS):
                key_batch = pa.RecordBatch.from_arrays(
                    [table[KEY_COLUMN + f].combine_chunks() for f in self.layout.key_fields],
                    names=list(self.layout.key_fields),
                )
                batch = self._with_values(key_batch, table_records(table))
                if batch.num_rows:
                    yield batch
        finally:
            reducer.close()
        self._log_spill(reducer)
        self._log_skips()

    def _log_spill(self, reducer: LatestPerKey) -> None:
        if reducer.spilled:
            log.info(
                "%s: the latest records per key outgrew a quarter of scan.table.memory-budget (%d bytes): %d run(s), "
                "%d bytes, spilled to local disk",
                self.rng,
                self.spec.table_memory_budget,
                reducer.runs,
                reducer.spilled_bytes,
            )

    def _identify(self, table: pa.Table) -> pa.Table:
        """Decode the keys of byte-reduced rows: their columns (as KEY_COLUMN + name) and identity, which two
        encodings of one logical key (e.g. JSON with other spacing) share. Rows whose key fails to decode are
        dropped (ignore-parse-errors, counted) or fail the read."""
        batches = []
        for batch in table.to_batches(max_chunksize=CHUNK_RECORDS):
            offsets = batch.column(OFFSET).to_pylist()
            payloads = batch.column(KEY).to_pylist()
            key_batch, bad = self._decode("key", self.key_decoder, self.layout.key_codec, payloads, offsets)
            if bad:
                batch = batch.filter(pa.array([i not in bad for i in range(batch.num_rows)]))
            columns = [*batch.columns, *key_batch.columns, key_identity(key_batch)]
            names = [*batch.schema.names, *(KEY_COLUMN + f for f in self.layout.key_fields), IDENT]
            batches.append(pa.RecordBatch.from_arrays(columns, names=names))
        return pa.Table.from_batches(batches)

    # -- steps -----------------------------------------------------------------------------------

    def _drop_null_keys(self, records: Records) -> Records:
        if None not in records.keys:
            return records
        kept = [i for i, k in enumerate(records.keys) if k is not None]
        self.null_keys += len(records) - len(kept)
        return records.take(kept)

    def _decode_keys(self, records: Records) -> tuple[pa.RecordBatch, Records]:
        key_batch, bad = self._decode("key", self.key_decoder, self.layout.key_codec, records.keys, records.offsets)
        if bad:
            records = records.take([i for i in range(len(records)) if i not in bad])
        # The key format names columns without key.fields-prefix; the table names them with it.
        return pa.RecordBatch.from_arrays(key_batch.columns, names=list(self.layout.key_fields)), records

    def _with_values(self, key_batch: pa.RecordBatch, records: Records) -> pa.RecordBatch:
        """Decode the values (None: a tombstone) of records whose keys key_batch holds; assemble the rows."""
        present = [v is not None for v in records.values]
        with_value = [i for i, p in enumerate(present) if p]
        payloads = [records.values[i] for i in with_value]
        value_offsets = [records.offsets[i] for i in with_value]
        value_batch, bad = self._decode("value", self.value_decoder, self.layout.value_codec, payloads, value_offsets)
        if bad:
            # Drop the records whose value failed (ignore-parse-errors) from the key side too.
            dropped = {with_value[j] for j in bad}
            kept = [i for i in range(len(records)) if i not in dropped]
            key_batch, records = key_batch.take(pa.array(kept, pa.int64())), records.take(kept)
            present = [present[i] for i in kept]
        return self._assemble(key_batch, value_batch, present, records)

    def _decode(
        self, role: str, decoder: Decoder, codec: Codec, payloads: Sequence[bytes], offsets: Sequence[int]
    ) -> tuple[pa.RecordBatch, set[int]]:
        decoded = decoder.decode(payloads)
        return decoded.batch, self._failed(role, codec, decoded.failures, payloads, offsets)

    def _failed(
        self,
        role: str,
        codec: Codec,
        failures: Sequence[tuple[int, str]],
        payloads: Sequence[bytes],
        offsets: Sequence[int],
    ) -> set[int]:
        """The records that failed to decode, when ignore-parse-errors skips them (counted); else the error
        naming the first."""
        if not failures:
            return set()
        if not codec.ignore_parse_errors:
            index, reason = failures[0]
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
        bad = {i for i, _ in failures}
        self.bad_records += len(bad)
        return bad

    def _assemble(
        self, key_batch: pa.RecordBatch, value_batch: pa.RecordBatch, present: list[bool], records: Records
    ) -> pa.RecordBatch:
        """Columns in the table's order: keys from the key, metadata from the record, the rest from the
        value (null for deletes)."""
        layout = self.layout
        present_mask = pa.array(present, pa.bool_())
        if not all(present):
            # Row i takes value row (number of values before it), or null for a tombstone.
            position = pc.subtract(pc.cumulative_sum(pc.cast(present_mask, pa.int64())), 1)
            value_batch = value_batch.take(pc.if_else(present_mask, position, None))
        metadata = {c.column: c.kind for c in layout.metadata}
        columns = []
        for f in layout.arrow_schema:
            if f.name == layout.changelog_column:
                columns.append(pc.if_else(present_mask, ChangeKind.UPSERT, ChangeKind.DELETE))
            elif f.name in metadata:
                columns.append(self._metadata(metadata[f.name], records).cast(f.type))
            elif f.name in layout.key_fields:
                columns.append(key_batch.column(f.name))
            else:
                columns.append(value_batch.column(f.name))
        return pa.RecordBatch.from_arrays(columns, schema=layout.arrow_schema)

    def _metadata(self, kind: str, records: Records) -> pa.Array:
        n, rng = len(records), self.rng
        if kind == "topic":
            return pa.repeat(pa.scalar(rng.topic, pa.string()), n)
        if kind == "partition":
            return pa.repeat(pa.scalar(rng.partition, pa.int32()), n)
        if kind == "offset":
            return pa.array(records.offsets, pa.int64())
        if kind == "watermark":
            millis = pa.scalar(rng.watermark_ms, pa.int64())
            return pa.repeat(millis, n).cast(pa.timestamp("ms", tz="UTC"))
        values = records.meta[kind]
        if kind == "timestamp":  # -1: the record has no timestamp
            millis = pa.array(values, pa.int64())
            return pc.if_else(pc.less(millis, 0), None, millis).cast(pa.timestamp("ms", tz="UTC"))
        if kind == "headers":
            return pa.array(values, pa.map_(pa.string(), pa.binary()))
        if kind == "header-list":
            return pa.array(values, HEADER_LIST)
        if kind == "leader-epoch":
            return pa.array(values, pa.int32())
        return pa.array(values, pa.string())  # timestamp-type

    def _log_skips(self) -> None:
        if self.null_keys or self.bad_records:
            log.warning(
                "%s: skipped %d record(s) with a null key and %d that failed to decode (ignore-parse-errors)",
                self.rng,
                self.null_keys,
                self.bad_records,
            )


def range_decoder(spec: ReadSpec, rng: PartitionRange) -> RangeDecoder:
    """The decoder of a partition range: records keyed by their record key, or change envelopes (a changelog
    value format: read.changes)."""
    if isinstance(spec.layout.value_codec, ChangelogCodec):
        from .changes import ChangeRangeDecoder  # it builds on RangeDecoder

        return ChangeRangeDecoder(spec, rng)
    return RangeDecoder(spec, rng)
