"""A row's change kind (the `changelog.column`) as the upsert write reads it: a value, a tombstone, or a
before-image to drop (kernel.change_kind's upsert_action). One reading of the column for the record writer,
the multi-table write and the Delta mirror."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError
from ..kernel.change_kind import UpsertAction, kind_names, spellings

# Case-insensitive: every kind's value and Flink's short string (+I, -U, +U, -D); null is an upsert.
_TOMBSTONES = pa.array(spellings(UpsertAction.TOMBSTONE))
_SKIPPED = pa.array(spellings(UpsertAction.SKIP))
_KNOWN = pa.array([s for action in UpsertAction for s in spellings(action)])

Rows = TypeVar("Rows", pa.RecordBatch, pa.Table)


def classify(
    rows: Rows,
    column: str | None,
    where: Callable[[Rows, int], str] | None = None,
    preimages_as_deletes: bool = False,
) -> tuple[Rows, pa.BooleanArray | pa.ChunkedArray, int]:
    """(the rows without before-images, which of them are deletes, how many before-images were dropped); with no
    change column every row is a value. An unknown kind is a RecordError; `where(rows, i)` names row i in it.
    `preimages_as_deletes`: a before-image is kept as a delete (Flink's change-envelope formats write -U so)."""
    if column is None:
        return rows, pa.repeat(pa.scalar(False), rows.num_rows), 0
    kinds = pc.utf8_lower(rows.column(column))
    unknown = pc.and_(pc.invert(pc.is_in(kinds, _KNOWN)), pc.is_valid(kinds))
    if pc.any(unknown).as_py():
        row = pc.index(unknown, True).as_py()
        raise RecordError(
            f"column '{column}' has the unknown change kind '{rows.column(column)[row].as_py()}'"
            f"{f' in {where(rows, row)}' if where else ''}; use {kind_names()}"
        )
    skip = pc.fill_null(pc.is_in(kinds, _SKIPPED), False)
    if preimages_as_deletes:
        return rows, pc.or_(pc.fill_null(pc.is_in(kinds, _TOMBSTONES), False), skip), 0
    skipped = pc.sum(skip).as_py() or 0
    if skipped:
        rows, kinds = rows.filter(pc.invert(skip)), kinds.filter(pc.invert(skip))
    return rows, pc.fill_null(pc.is_in(kinds, _TOMBSTONES), False), skipped
