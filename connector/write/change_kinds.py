"""A row's change kind (the `changelog.column`): a value, a delete, or a before-image to drop. One reading of
the kinds for the record writer, the multi-table write and the Delta mirror."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import RecordError

# Case-insensitive: ours, Delta CDF's and Flink's RowKind short strings; null is an upsert.
VALUE_KINDS = ("upsert", "insert", "update_postimage", "+i", "+u")
DELETE_KINDS = ("delete", "-d")
SKIP_KINDS = ("update_preimage", "-u")  # the row before an update: its after-image follows

Rows = TypeVar("Rows", pa.RecordBatch, pa.Table)


def classify(
    rows: Rows, column: str | None, where: Callable[[Rows, int], str] | None = None
) -> tuple[Rows, pa.BooleanArray | pa.ChunkedArray, int]:
    """(the rows without before-images, which of them are deletes, how many before-images were dropped); with no
    change column every row is a value. An unknown kind is a RecordError; `where(rows, i)` names row i in it."""
    if column is None:
        return rows, pa.repeat(pa.scalar(False), rows.num_rows), 0
    kinds = pc.utf8_lower(rows.column(column))
    unknown = pc.and_(pc.invert(pc.is_in(kinds, pa.array(VALUE_KINDS + DELETE_KINDS + SKIP_KINDS))), pc.is_valid(kinds))
    if pc.any(unknown).as_py():
        row = pc.index(unknown, True).as_py()
        raise RecordError(
            f"column '{column}' has the unknown change kind '{rows.column(column)[row].as_py()}'"
            f"{f' in {where(rows, row)}' if where else ''}; use upsert, delete, insert, update_preimage or "
            "update_postimage (or Flink's +I, -U, +U, -D)"
        )
    skip = pc.fill_null(pc.is_in(kinds, pa.array(SKIP_KINDS)), False)
    skipped = pc.sum(skip).as_py() or 0
    if skipped:
        rows, kinds = rows.filter(pc.invert(skip)), kinds.filter(pc.invert(skip))
    return rows, pc.fill_null(pc.is_in(kinds, pa.array(DELETE_KINDS)), False), skipped
