"""Executor side, for a changelog value format (debezium-json, canal-json, maxwell-json): each record's envelope
becomes its rows, with their change kinds, in the table's schema.

The key columns come from the envelope's row images, not from the record key: a Canal message carries several
rows (keys) and no record key, Maxwell's record key names the database and table, and Debezium's repeats the
image's key fields (in a schema/payload wrapper with schemas enabled). Null values (Debezium's tombstone after a
delete, which it sends for compaction) carry no change and are skipped.

`changelog-mode=upsert` (the default): inserts and updates are `upsert` rows, deletes `delete` rows with the
key columns only, as every delete this connector reads. `all`: Flink's changelog, `insert`,
`update_preimage`, `update_postimage` and `delete` (with the deleted row's values). Either way an update that
changes the key is a delete of the old key and an insert of the new. A table read (and a compacted
changelog) keeps the last row of each key (by record order, then the envelope's row order) with latest_per_key.py's
reducer: within scan.table.memory-budget, spilled to local disk beyond it.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from ..formats import ChangelogCodec, DecodedChanges
from ..kernel.change_kind import ChangeKind
from ..options.layout import format_metadata
from .fetch import Records
from .latest_per_key import KEY, OFFSET, VALUE, LatestPerKey, key_identity
from .range_calculator import PartitionRange
from .range_decoder import RangeDecoder
from .spec import ReadSpec

_ROW = "row:"  # the reducer's columns of the table's row are named _ROW + column (no clash with its own)


class ChangeRangeDecoder(RangeDecoder):
    """Change envelopes of a changelog value format: each record's envelope gives its rows and their kinds."""

    def __init__(self, spec: ReadSpec, rng: PartitionRange) -> None:
        super().__init__(spec, rng)
        layout = self.layout
        codec = layout.value_codec
        assert isinstance(codec, ChangelogCodec), "a change decoder reads a changelog value format only"
        self.codec = codec
        self.format_metadata = {c.column: c.value_key for c in layout.metadata if c.value_key is not None}
        self.decoder = self.codec.changelog_decoder(layout.value_schema, format_metadata(layout))
        # Flink's full changelog only where rows are not reduced to the last per key.
        self.full = self.codec.full_changelog and spec.changelog and not spec.compact
        self._seq = 0  # the reducer's `offset`: the row's number in record and envelope order

    # -- RangeDecoder's steps --------------------------------------------------------------------

    def _rows(self, chunk: Records) -> pa.RecordBatch:
        return self._rows_and_kinds(chunk)[0]

    def _reducer(self) -> LatestPerKey:
        """The reducer's `offset` is the row's number in record and envelope order (one record may carry several
        rows), its `key` the key columns' identity, its `value` null for a delete; the rows ride along."""
        self._seq = 0
        return LatestPerKey(self.spec.table_memory_budget)

    def _keyed(self, chunk: Records) -> pa.Table | None:
        batch, kinds = self._rows_and_kinds(chunk)
        if not batch.num_rows:
            return None
        deleted = pc.equal(kinds, ChangeKind.DELETE)
        columns = [
            self._key_identity(batch),
            pc.if_else(deleted, pa.scalar(None, pa.binary()), pa.scalar(b"", pa.binary())),
            pa.array(range(self._seq, self._seq + batch.num_rows), pa.int64()),
            *batch.columns,
        ]
        self._seq += batch.num_rows
        names = [KEY, VALUE, OFFSET, *(_ROW + n for n in self.layout.arrow_schema.names)]
        return pa.Table.from_arrays(columns, names=names)

    def _reduced_rows(self, table: pa.Table) -> pa.RecordBatch:
        rows = [table[_ROW + n].combine_chunks() for n in self.layout.arrow_schema.names]
        return pa.RecordBatch.from_arrays(rows, schema=self.layout.arrow_schema)

    # -- one chunk ---------------------------------------------------------------------------------

    def _rows_and_kinds(self, chunk: Records) -> tuple[pa.RecordBatch, pa.Array]:
        """The chunk's rows in the table's schema, and each row's kind (also in the changelog column)."""
        with_value = [i for i, v in enumerate(chunk.values) if v is not None]
        payloads = [v for v in chunk.values if v is not None]  # the values of with_value, in order
        offsets = [chunk.offsets[i] for i in with_value]
        decoded = self.decoder.decode_changes(payloads)
        bad = self._failed("value", self.codec, self._faults(decoded), payloads, offsets)
        rows, kinds, records, metadata = decoded.batch, decoded.kinds, decoded.records, decoded.metadata
        if bad:
            keep = pc.invert(pc.is_in(records, value_set=pa.array(sorted(bad), pa.int64())))
            rows, kinds, records = rows.filter(keep), kinds.filter(keep), records.filter(keep)
            metadata = {k: v.filter(keep) for k, v in metadata.items()}
        kinds = self._key_changes(rows, kinds)
        if not self.full:
            rows, kinds, records, metadata = self._upserts(rows, kinds, records, metadata)
        row_records = pa.array(with_value, pa.int64()).take(records)
        return self._assemble_rows(rows, kinds, row_records, metadata, chunk), kinds

    def _faults(self, decoded: DecodedChanges) -> list[tuple[int, str]]:
        """The decoder's failures, and records whose rows have no key or (changelog-mode all) no pre-image."""
        faults = list(decoded.failures)
        rows, kinds, records = decoded.batch, decoded.kinds, decoded.records
        for name in self.layout.key_fields:
            missing = rows.column(name).is_null()
            if pc.any(missing).as_py():
                faults += [
                    (r, f"a row of it has no value for the key column '{name}' (option 'key.fields')")
                    for r in records.filter(missing).to_pylist()
                ]
        if self.full:
            after_pre = _shifted(pc.equal(kinds, ChangeKind.UPDATE_BEFORE))
            orphan = pc.and_(pc.equal(kinds, ChangeKind.UPDATE_AFTER), pc.invert(after_pre))
            if pc.any(orphan).as_py():
                reason = (
                    "an update without its before image, which changelog-mode 'all' needs (have the source send "
                    "it: for Debezium from PostgreSQL, set the table's REPLICA IDENTITY FULL; or set "
                    f"'{self._option('changelog-mode')}' to upsert)"
                )
                faults += [(r, reason) for r in records.filter(orphan).to_pylist()]
        return sorted(dict(reversed(faults)).items())  # the first fault of each record, in record order

    def _key_changes(self, rows: pa.RecordBatch, kinds: pa.Array) -> pa.Array:
        """An update whose pre- and post-image differ in the key: a delete of the old key, an insert of the new."""
        pre = pc.equal(kinds, ChangeKind.UPDATE_BEFORE)
        if not len(kinds) or not pc.any(pre).as_py():
            return kinds
        same = self._same_key_as_next(rows)
        moved = pc.and_(pre, pc.invert(same))
        if not pc.any(moved).as_py():
            return kinds
        return pc.if_else(moved, ChangeKind.DELETE, pc.if_else(_shifted(moved), ChangeKind.INSERT, kinds))

    def _same_key_as_next(self, rows: pa.RecordBatch) -> pa.BooleanArray:
        n = rows.num_rows
        identity = self._key_identity(rows)
        same = pc.fill_null(pc.equal(identity.slice(0, n - 1), identity.slice(1)), False)
        return pa.concat_arrays([same, pa.array([True])])

    def _upserts(
        self, rows: pa.RecordBatch, kinds: pa.Array, records: pa.Array, metadata: Mapping[str, pa.Array]
    ) -> tuple[pa.RecordBatch, pa.Array, pa.Array, Mapping[str, pa.Array]]:
        """Upserts and deletes of keys: pre-images dropped, a delete's value columns null."""
        keep = pc.not_equal(kinds, ChangeKind.UPDATE_BEFORE)
        if not pc.all(keep).as_py():
            rows, kinds, records = rows.filter(keep), kinds.filter(keep), records.filter(keep)
            metadata = {k: v.filter(keep) for k, v in metadata.items()}
        deletes = pc.equal(kinds, ChangeKind.DELETE)
        if pc.any(deletes).as_py():
            nulled = pc.if_else(deletes, pa.scalar(None, pa.int64()), pa.array(range(rows.num_rows), pa.int64()))
            keys = set(self.layout.key_fields)
            columns = [c if f.name in keys else c.take(nulled) for f, c in zip(rows.schema, rows.columns)]
            rows = pa.RecordBatch.from_arrays(columns, schema=rows.schema)
        return rows, pc.if_else(deletes, ChangeKind.DELETE, ChangeKind.UPSERT), records, metadata

    def _assemble_rows(
        self,
        rows: pa.RecordBatch,
        kinds: pa.Array,
        row_records: pa.Array,
        metadata: Mapping[str, pa.Array],
        chunk: Records,
    ) -> pa.RecordBatch:
        """Columns in the table's order: the change kind, record metadata, format metadata, the row's columns."""
        layout = self.layout
        kafka_metadata = {c.column: c.kind for c in layout.metadata if c.value_key is None}
        columns = []
        for f in layout.arrow_schema:
            if f.name == layout.changelog_column:
                columns.append(kinds)
            elif f.name in kafka_metadata:
                columns.append(self._metadata(kafka_metadata[f.name], chunk).take(row_records).cast(f.type))
            elif f.name in self.format_metadata:
                columns.append(metadata[self.format_metadata[f.name]].cast(f.type))
            else:
                columns.append(rows.column(f.name))
        return pa.RecordBatch.from_arrays(columns, schema=layout.arrow_schema)

    def _key_identity(self, rows: pa.RecordBatch) -> pa.Array:
        return key_identity(rows.select(list(self.layout.key_fields)))

    def _option(self, name: str) -> str:
        return f"value.{self.codec.name}.{name}"


def _shifted(flags: pa.BooleanArray) -> pa.BooleanArray:
    """flags[i - 1] at i (False at 0): whether the row before is flagged."""
    if not len(flags):
        return flags
    return pa.concat_arrays([pa.array([False]), pc.fill_null(flags, False).slice(0, len(flags) - 1)])
