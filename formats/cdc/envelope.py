"""What the change-envelope formats (debezium-json, canal-json, maxwell-json) share: their options, the
decoder that turns a batch of envelopes into rows with change kinds, and the encoder of envelopes.

Decoding takes the fast path first: the whole batch through Arrow's JSON reader with the envelope's own
schema (the row images typed as the table's columns), then Arrow compute lays out each envelope's rows (a
pre-image, a post-image, ...) in order. Whatever that path cannot read exactly goes through the per-envelope
path (orjson), which is the reference: envelopes the fast path marks (an unknown operation, a missing image,
a partial pre-image that holds an explicit null, ...), and whole batches Arrow cannot read. That path also
names what is wrong with a record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from ...kernel.change_kind import ChangeKind
from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Choice, Option
from ..codec import (
    IGNORE_PARSE_ERRORS,
    ChangelogCodec,
    ChangelogDecoder,
    ChangelogEncoder,
    CodecContext,
    DecodedChanges,
    empty_batch,
    nested_type_has,
)
from ..decimals import decimals_fit
from ..json.codec import FAIL_ON_MISSING_FIELD, JsonCodec, JsonEncoder, arrow_reads_exactly, read_json_lines
from ..json.values import (
    RECORD_ERRORS,
    Convert,
    json_loads_for,
    json_reason,
    json_to_arrow,
    rows_to_batch,
)
from .columns import cast_columns, old_has_null, overlay, show


class RowJson(JsonCodec):
    """The JSON of the row images: Flink's json options, named with the changelog format's prefix."""

    declared_options = tuple(
        o for o in JsonCodec.declared_options if o not in (FAIL_ON_MISSING_FIELD, IGNORE_PARSE_ERRORS)
    )


CHANGELOG_MODE = Option(
    "changelog-mode",
    "upsert",
    FORMAT,
    "Not in Flink: `upsert` (rows are upserts and deletes of their key) or `all` (Flink's row kinds, "
    "pre-images included; needs them in the envelopes).",
    kind=Choice(("upsert", "all")),
)


class EnvelopeCodec(ChangelogCodec):
    """Options of every envelope format: Flink's (ignore-parse-errors and the json options of the row images)
    and `changelog-mode` (ours): `upsert` reads rows as upserts and deletes of their key, `all` as Flink's
    full changelog with pre-images."""

    declared_options = (*RowJson.declared_options, IGNORE_PARSE_ERRORS, CHANGELOG_MODE)
    # The row images are Flink's json (read by json's conversions; Canal's texts of numbers too).
    column_types = JsonCodec.column_types

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        self.full_changelog = self.option_values.value(CHANGELOG_MODE) == "all"
        # Named as the changelog format (Codec.named): its options are spelled with that format's prefix.
        self.rows = RowJson.named(self.name, {k: v for k, v in options.items() if k in RowJson.option_names}, context)

    def envelope_encoder(
        self, schema: pa.Schema, insert: tuple[bytes, bytes], delete: tuple[bytes, bytes]
    ) -> EnvelopeEncoder:
        return EnvelopeEncoder(schema, self.rows, insert, delete)


# ---------------------------------------------------------------------------------------------
# Decoding


@dataclass(frozen=True)
class Slot:
    """One kind of row an element (an envelope, or one row of a Canal envelope) may give."""

    image: pa.StructArray  # per element
    kind: ChangeKind
    mask: pa.BooleanArray  # per element: whether this slot gives a row


def row_slots(
    rows: pa.StructArray, olds: pa.StructArray, inserted: pa.Array, updated: pa.Array, deleted: pa.Array
) -> list[Slot]:
    """The slots of envelopes that carry a row and, for an update, its changed fields `old` (Canal, Maxwell): an
    update gives the pre-image (the row with its `old` fields put back) and the row; an insert or delete the row."""
    return [
        Slot(overlay(olds, rows), ChangeKind.UPDATE_BEFORE, updated),
        Slot(rows, ChangeKind.UPDATE_AFTER, updated),
        Slot(rows, ChangeKind.INSERT, inserted),
        Slot(rows, ChangeKind.DELETE, deleted),
    ]


def image_slots(
    before: pa.StructArray, after: pa.StructArray, inserted: pa.Array, updated: pa.Array, deleted: pa.Array
) -> tuple[list[Slot], pa.BooleanArray]:
    """The slots of envelopes that carry the row before and after (Debezium, GoldenGate), and the envelopes that
    give no row as their op says: an insert or update needs the row after, a delete the row before; an update gives
    its pre-image only when the envelope has one."""
    has_before, has_after = before.is_valid(), after.is_valid()
    good = pc.or_(pc.and_(pc.or_(inserted, updated), has_after), pc.and_(deleted, has_before))
    slots = [
        Slot(before, ChangeKind.UPDATE_BEFORE, pc.and_(updated, has_before)),
        Slot(after, ChangeKind.UPDATE_AFTER, updated),
        Slot(after, ChangeKind.INSERT, inserted),
        Slot(before, ChangeKind.DELETE, deleted),
    ]
    return slots, pc.invert(good)


#: The rows (kind, row image) an envelope gives, as the per-envelope path reads them.
Changes = list[tuple[ChangeKind, object]]


def update_rows(row: dict[str, object], old: dict[str, object]) -> Changes:
    """row_slots' update for the per-envelope path: the pre-image and the row."""
    return [(ChangeKind.UPDATE_BEFORE, {**row, **old}), (ChangeKind.UPDATE_AFTER, row)]


@dataclass(frozen=True)
class Envelopes:
    """What a format's fast path makes of a batch of envelopes."""

    slots: list[Slot]  # in the order an element's rows come
    bad: pa.BooleanArray  # per envelope: only the per-envelope path reads it exactly (or names its fault)
    metadata: dict[str, pa.Array]  # per envelope, the requested metadata
    element_records: pa.Array | None = None  # per element, its envelope; None: element i is envelope i
    partial: pa.BooleanArray | None = None  # per envelope: a pre-image from a partial `old` (see overlay)


class EnvelopeDecoder(ChangelogDecoder):
    """The two paths and their merge; each format says how its envelopes look (the methods below)."""

    #: Metadata keys the fast path cannot give (asking for one sends every batch down the per-envelope path).
    slow_metadata: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, codec: EnvelopeCodec, schema: pa.Schema, metadata: Sequence[str]) -> None:
        unknown = [k for k in metadata if k not in codec.readable_metadata]
        if unknown:
            raise FormatOptionError(
                f"format '{codec.name}' has no metadata {', '.join(unknown)}; it has "
                f"{', '.join(codec.readable_metadata)}"
            )
        self.codec, self.schema = codec, schema
        self.metadata = tuple(dict.fromkeys(metadata))
        self.image = pa.struct(list(schema))
        self._loads = json_loads_for(self.image)
        self._converters = [(f.name, self.converter(f.type)) for f in schema]
        self._decimals = any(nested_type_has(f.type, pa.types.is_decimal) for f in schema)
        fast = arrow_reads_exactly(schema) and not set(self.metadata) & self.slow_metadata
        self._parse_options = (
            [
                pa_json.ParseOptions(explicit_schema=s, unexpected_field_behavior="ignore")
                for s in self.envelope_schemas()
            ]
            if fast
            else []
        )

    # -- what each format says ---------------------------------------------------------------------

    def envelope_schemas(self) -> list[pa.Schema]:
        """The schemas the fast path reads a batch with, tried in order."""
        raise NotImplementedError

    def envelopes(self, batch: pa.RecordBatch) -> Envelopes | None:
        """The fast path's reading of a batch (read with one of envelope_schemas); None: read it all per envelope."""
        raise NotImplementedError

    def changes_of(self, envelope: dict[str, Any]) -> tuple[Changes, dict[str, Any]]:
        """The per-envelope path: the rows (kind, image object) and the requested metadata values (timestamps as
        epoch milliseconds); raises ValueError (or TypeError) saying what is wrong with the envelope."""
        raise NotImplementedError

    def converter(self, t: pa.DataType) -> Convert:
        """From a JSON value of a row image to what pa.array takes for `t`."""
        return json_to_arrow(t)

    def image_columns(self, images: pa.StructArray) -> list[pa.Array] | None:
        """The columns (in the decoder's schema) of row images as the fast path read them; None: it cannot."""
        return cast_columns(images.flatten(), self.schema)

    def relaxed_image(self, types: Mapping[str, pa.DataType] | None = None) -> pa.StructType:
        """The row image for the envelope schema: every column nullable (an absent image is null), types as
        given (by column name) or the table's; a TIME read as its text (cast_columns parses it)."""
        return pa.struct([
            f.with_type((types or {}).get(f.name, pa.string() if pa.types.is_time(f.type) else f.type))
            .with_nullable(True)
            for f in self.schema
        ])  # fmt: skip

    # -- the two paths -----------------------------------------------------------------------------

    def decode_changes(self, payloads: Sequence[bytes]) -> DecodedChanges:
        if not payloads:
            return self._empty()
        parts: list[tuple[DecodedChanges, list[int]]] = []
        got = self._decode_fast(payloads) if self._parse_options else None
        bad: set[int] = set(range(len(payloads)))
        if got is not None:
            parts.append((got[0], list(range(len(payloads)))))
            bad = set(got[1])
        slow = sorted(bad)
        if slow:
            parts.append((self._decode_each([payloads[i] for i in slow]), slow))
        return self._merge(parts)

    def _decode_fast(self, payloads: Sequence[bytes]) -> tuple[DecodedChanges, list[int]] | None:
        """The fast path's rows, and the envelopes it leaves to the per-envelope path; None: it read nothing."""
        for options in self._parse_options:
            batch = read_json_lines(payloads, options)
            if batch is not None:
                break
        else:
            return None
        if self._decimals and not all(decimals_fit(column) for column in batch.columns):
            return None  # a number too wide for its DECIMAL: the per-envelope path names the record
        envelopes = self.envelopes(batch)
        if envelopes is None:
            return None
        bad = envelopes.bad
        if envelopes.partial is not None and pc.any(envelopes.partial).as_py():
            unsure = [i for i in pc.indices_nonzero(envelopes.partial).to_pylist() if old_has_null(payloads[i])]
            if unsure:
                bad = pc.or_(bad, pc.is_in(pa.array(range(len(payloads)), pa.int64()), value_set=pa.array(unsure)))
        laid_out = lay_out(envelopes.slots, bad, envelopes.element_records, self.image)
        images, kinds, records = laid_out
        columns = self.image_columns(images)
        if columns is None:
            return None
        rows = pa.RecordBatch.from_arrays(columns, schema=self.schema)
        types = self.codec.readable_metadata
        metadata = {k: envelopes.metadata[k].take(records).cast(types[k]) for k in self.metadata}
        changes = DecodedChanges(rows, kinds, records.cast(pa.int64()), metadata)
        return changes, pc.indices_nonzero(bad).to_pylist()

    def _decode_each(self, payloads: list[bytes]) -> DecodedChanges:
        rows: list[list[Any]] = []
        kinds: list[str] = []
        records: list[int] = []
        values: dict[str, list[Any]] = {k: [] for k in self.metadata}
        failures: list[tuple[int, str]] = []
        for i, payload in enumerate(payloads):
            if not payload:
                continue  # an empty message carries no change (Flink skips it too)
            try:
                envelope = self._loads(payload)
                if not isinstance(envelope, dict):
                    raise ValueError(f"expected a JSON object, got {type(envelope).__name__}")
                changes, meta = self.changes_of(envelope)
                converted = [(kind, self._convert(image)) for kind, image in changes]
            except RECORD_ERRORS as e:
                failures.append((i, json_reason(e)))
                continue
            for kind, row in converted:
                rows.append(row)
                kinds.append(kind)
                records.append(i)
            for k in self.metadata:
                values[k] += [meta.get(k)] * len(converted)
        batch, unfit = rows_to_batch(rows, self.schema)
        if unfit:  # a value Arrow refuses after all: its whole record fails, not just that row
            bad = {records[j]: reason for j, reason in unfit}
            failures = sorted([*failures, *bad.items()])
            kept = [j for j, r in enumerate(records) if r not in bad]
            rows, kinds, records = [rows[j] for j in kept], [kinds[j] for j in kept], [records[j] for j in kept]
            values = {k: [v[j] for j in kept] for k, v in values.items()}
            batch = rows_to_batch(rows, self.schema)[0]
        metadata = {k: _metadata_array(v, self.codec.readable_metadata[k]) for k, v in values.items()}
        return DecodedChanges(
            batch, pa.array(kinds, pa.string()), pa.array(records, pa.int64()), metadata, tuple(failures)
        )

    def _convert(self, image: object) -> list[Any]:
        if not isinstance(image, dict):
            raise TypeError(f"a row image must be a JSON object, got {show(image)}")
        row: list[Any] = []
        for name, convert in self._converters:
            value = image.get(name)
            if value is None:
                row.append(None)
                continue
            try:
                row.append(convert(value))
            except RECORD_ERRORS as e:
                raise ValueError(f"field '{name}': {json_reason(e)}") from None
        return row

    def _empty(self) -> DecodedChanges:
        metadata = {k: pa.array([], self.codec.readable_metadata[k]) for k in self.metadata}
        return DecodedChanges(empty_batch(self.schema), pa.array([], pa.string()), pa.array([], pa.int64()), metadata)

    def _merge(self, parts: list[tuple[DecodedChanges, list[int]]]) -> DecodedChanges:
        """The parts' rows in payload order (a record's rows keep theirs: the sort is stable)."""
        if not parts:
            return self._empty()
        records = [pa.array(index, pa.int64()).take(p.records) for p, index in parts]
        failures = tuple(sorted((index[i], reason) for p, index in parts for i, reason in p.failures))
        if len(parts) == 1:
            only = parts[0][0]
            return DecodedChanges(only.batch, only.kinds, records[0], only.metadata, failures)
        order = pc.sort_indices(pa.concat_arrays(records))
        batch = pa.concat_batches([p.batch for p, _ in parts]).take(order)
        kinds = pa.concat_arrays([p.kinds for p, _ in parts]).take(order)
        metadata = {k: pa.concat_arrays([p.metadata[k] for p, _ in parts]).take(order) for k in self.metadata}
        return DecodedChanges(batch, kinds, pa.concat_arrays(records).take(order), metadata, failures)


def lay_out(
    slots: list[Slot], bad: pa.BooleanArray, element_records: pa.Array | None, image: pa.StructType
) -> tuple[pa.StructArray, pa.Array, pa.Array]:
    """Every row the slots give, in order, without those of bad envelopes: (images, kinds, envelope of each row).
    `element_records`: per element, its envelope (None: element i is envelope i)."""
    images, kinds, elements = _expand(slots, image)
    records = elements if element_records is None else element_records.take(elements)
    keep = pc.invert(bad.take(records))
    if not pc.all(keep).as_py():
        images, kinds, records = images.filter(keep), kinds.filter(keep), records.filter(keep)
    return images, kinds, records


def _expand(slots: list[Slot], image: pa.StructType) -> tuple[pa.StructArray, pa.Array, pa.Array]:
    """Every row the slots give, ordered by element and then slot: (images, kinds, element of each row)."""
    images, kinds, elements, positions = [], [], [], []
    for s, slot in enumerate(slots):
        index = pc.indices_nonzero(pc.fill_null(slot.mask, False)).cast(pa.int64())
        if len(index):
            images.append(slot.image.take(index))
            kinds.append(pa.repeat(pa.scalar(slot.kind), len(index)))
            elements.append(index)
            positions.append(pc.add(pc.multiply(index, len(slots)), s))
    if not images:
        return (
            pa.array([], slots[0].image.type if slots else image),
            pa.array([], pa.string()),
            pa.array([], pa.int64()),
        )
    order = pc.sort_indices(pa.concat_arrays(positions))
    return (
        pa.concat_arrays(images).take(order),
        pa.concat_arrays(kinds).take(order),
        pa.concat_arrays(elements).take(order),
    )


def _metadata_array(values: list[Any], t: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(t):
        return pa.array(values, pa.int64()).cast(t)
    return pa.array(values, t)


# ---------------------------------------------------------------------------------------------
# Encoding


class EnvelopeEncoder(ChangelogEncoder):
    """Each row as Flink's json format writes it, between an envelope's opening and closing bytes."""

    def __init__(
        self, schema: pa.Schema, rows: RowJson, insert: tuple[bytes, bytes], delete: tuple[bytes, bytes]
    ) -> None:
        self.rows = JsonEncoder(schema, rows)
        self.insert, self.delete = insert, delete

    def encode_changes(self, batch: pa.RecordBatch, deletes: pa.BooleanArray) -> list[bytes]:
        (i0, i1), (d0, d1) = self.insert, self.delete
        return [d0 + r + d1 if d else i0 + r + i1 for r, d in zip(self.rows.encode(batch), deletes.to_pylist())]
