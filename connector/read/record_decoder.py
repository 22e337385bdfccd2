"""Executor side: Kafka records -> key/value codecs -> Arrow record batches in the table's schema.

Changelog mode turns each chunk into one batch (a tombstone is a `delete` row: key columns set, value
columns null). Table mode (and a compacted changelog) first keeps the latest record per key in Arrow, within
scan.table.memory-budget and spilling beyond it (latest_per_key.py): keys are decoded once per surviving record, values
only of what survives to the end, so values that were overwritten or deleted are never decoded at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from ..formats import Codec, Decoder
from ..formats.codec import Role
from ..kernel.change_kind import ChangeKind
from . import versions
from .fetch import CHUNK_RECORDS, Records
from .latest_per_key import (
    IDENT,
    KEY,
    META_PREFIX,
    OFFSET,
    VERSION,
    LatestPerKey,
    key_identity,
    records_table,
    table_records,
)
from .range_calculator import PartitionRange
from .range_decoder import RangeDecoder
from .spec import ReadSpec

KEY_COLUMN = "k:"  # the reducer's columns of decoded key fields are named KEY_COLUMN + field


class RecordRangeDecoder(RangeDecoder):
    """Records keyed by their record key: the key format gives the key columns, the value format the rest."""

    def __init__(self, spec: ReadSpec, rng: PartitionRange) -> None:
        super().__init__(spec, rng)
        self.key_decoder = self.layout.key_codec.decoder(self.layout.key_schema)
        self.value_decoder = self.layout.value_codec.decoder(self.layout.value_schema)

    # -- RangeDecoder's steps -----------------------------------------------------------------------

    def _rows(self, chunk: Records) -> pa.RecordBatch:
        records = self._drop_null_keys(chunk)
        if not len(records):
            return pa.RecordBatch.from_pylist([], schema=self.layout.arrow_schema)
        key_batch, records = self._decode_keys(records)
        return self._with_values(key_batch, records)

    def _reducer(self) -> LatestPerKey:
        return LatestPerKey(self.spec.table_memory_budget, self._identify)

    def _keyed(self, chunk: Records) -> pa.Table | None:
        records = self._drop_null_keys(chunk)
        if not len(records):
            return None
        table = records_table(records)
        source = self.spec.version
        if source is None:
            return table
        where = f"topic '{self.rng.topic}' partition {self.rng.partition}"
        table = table.append_column(VERSION, versions.versions(table, source, where))
        read_for_it = META_PREFIX + versions.metadata_kind(source)
        if versions.metadata_kind(source) not in {c.kind for c in self.layout.metadata}:
            table = table.drop_columns([read_for_it])  # read for the version only: not carried through the reducer
        return table

    def _reduced_rows(self, table: pa.Table) -> pa.RecordBatch:
        key_batch = pa.RecordBatch.from_arrays(
            [table[KEY_COLUMN + f].combine_chunks() for f in self.layout.key_fields],
            names=list(self.layout.key_fields),
        )
        return self._with_values(key_batch, table_records(table))

    def _identify(self, table: pa.Table) -> pa.Table:
        """Decode the keys of byte-reduced rows: their columns (as KEY_COLUMN + name) and identity, which two
        encodings of one logical key (e.g. JSON with other spacing) share. Rows whose key fails to decode are
        dropped (ignore-parse-errors, counted) or fail the read."""
        batches = []
        for batch in table.to_batches(max_chunksize=CHUNK_RECORDS):
            offsets = batch.column(OFFSET).to_pylist()
            payloads = batch.column(KEY).to_pylist()
            key_batch, bad = self._decode(Role.KEY, self.key_decoder, self.layout.key_codec, payloads, offsets)
            if bad:
                batch = batch.filter(pa.array([i not in bad for i in range(batch.num_rows)]))
            columns = [*batch.columns, *key_batch.columns, key_identity(key_batch)]
            names = [*batch.schema.names, *(KEY_COLUMN + f for f in self.layout.key_fields), IDENT]
            batches.append(pa.RecordBatch.from_arrays(columns, names=names))
        return pa.Table.from_batches(batches)

    # -- decoding -----------------------------------------------------------------------------------

    def _drop_null_keys(self, records: Records) -> Records:
        if None not in records.keys:
            return records
        kept = [i for i, k in enumerate(records.keys) if k is not None]
        self.null_keys += len(records) - len(kept)
        return records.take(kept)

    def _decode_keys(self, records: Records) -> tuple[pa.RecordBatch, Records]:
        keys = cast(list[bytes], records.keys)  # _drop_null_keys left none null
        key_batch, bad = self._decode(Role.KEY, self.key_decoder, self.layout.key_codec, keys, records.offsets)
        if bad:
            records = records.take([i for i in range(len(records)) if i not in bad])
        # The key format names columns without key.fields-prefix; the table names them with it.
        return pa.RecordBatch.from_arrays(key_batch.columns, names=list(self.layout.key_fields)), records

    def _with_values(self, key_batch: pa.RecordBatch, records: Records) -> pa.RecordBatch:
        """Decode the values (None: a tombstone) of records whose keys key_batch holds; assemble the rows."""
        present = [v is not None for v in records.values]
        with_value = [i for i, p in enumerate(present) if p]
        payloads = [v for v in records.values if v is not None]  # the values of with_value, in order
        value_offsets = [records.offsets[i] for i in with_value]
        value_batch, bad = self._decode(
            Role.VALUE, self.value_decoder, self.layout.value_codec, payloads, value_offsets
        )
        if bad:
            # Drop the records whose value failed (ignore-parse-errors) from the key side too.
            dropped = {with_value[j] for j in bad}
            kept = [i for i in range(len(records)) if i not in dropped]
            key_batch, records = key_batch.take(pa.array(kept, pa.int64())), records.take(kept)
            present = [present[i] for i in kept]
        return self._assemble(key_batch, value_batch, present, records)

    def _decode(
        self, role: Role, decoder: Decoder, codec: Codec, payloads: Sequence[bytes], offsets: Sequence[int]
    ) -> tuple[pa.RecordBatch, set[int]]:
        decoded = decoder.decode(payloads)
        # A row's key columns come from its key: the value may leave them out (it is NOT NULL there for the schema
        # Flink derives, not for reading).
        schema = self.layout.key_schema
        if role is Role.VALUE:
            schema = pa.schema([f for f in self.layout.value_schema if f.name not in self.layout.key_fields])
        batch, failures = _without_nulls_in_not_null(decoded.batch, schema, decoded.failures, len(payloads))
        return batch, self._failed(role, codec, failures, payloads, offsets)

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


def _without_nulls_in_not_null(
    batch: pa.RecordBatch, schema: pa.Schema, failures: Sequence[tuple[int, str]], count: int
) -> tuple[pa.RecordBatch, Sequence[tuple[int, str]]]:
    """A record whose bytes hold no value for a NOT NULL column (a primary key's, or one declared so) is a record
    error like any undecodable one: Spark would otherwise meet a null where the schema promises none."""
    nulls = [(f.name, batch.column(f.name).is_null()) for f in schema if not f.nullable]
    nulls = [(name, flags) for name, flags in nulls if pc.any(flags).as_py()]
    if not nulls:
        return batch, failures
    failed = {i for i, _ in failures}
    payload_of = [i for i in range(count) if i not in failed]  # the batch's rows are the records that decoded
    bad: dict[int, str] = {}
    for name, flags in nulls:
        for row in pc.indices_nonzero(flags).to_pylist():
            bad.setdefault(payload_of[row], f"column '{name}' is NOT NULL, but the record has no value for it")
    keep = pc.invert(pc.is_in(pa.array(payload_of), pa.array(list(bad))))
    return batch.filter(keep), sorted([*failures, *bad.items()])
