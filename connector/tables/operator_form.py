"""The form of Spark's Python stateful operator a helper runs on, and its edges: a state group's records into the
helper as one Arrow table, the helper's changes (columns) out in the form's own kind.

Both forms run the same processor on the same state (the same variables, grouped by the same key), but Spark names
the operator after its form in the checkpoint's state metadata and refuses a checkpoint of the other form
(STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA): a query goes on in the form it started with, so a helper
takes the form as `operator_form`. `transformWithStateInPandas` (every pyspark 4.x) hands Python pandas frames; the
Row-based `transformWithState` (pyspark 4.1+) hands it Rows, without pandas: at a steady rate the operator's floor on
it (a processor keeping nothing) measured 625 / 942 ms against 767 / 1,251 ms freshness (p50 / p99, 1 M keys, 5,000
updates/s: integration/results). So the Row form where the session has it, unless the helper is told otherwise. It
unpacks every cell in Python (PySpark's worker does): about 8 us a record, which a steady micro-batch of a few
thousand records barely feels and one big micro-batch does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame, GroupedData, Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import BooleanType, DataType, DoubleType, IntegerType, LongType, StringType, StructType

from ..errors import OptionError

ROWS, PANDAS = "rows", "pandas"
# A helper's operator_form keyword, said once for all of them (their docstrings and errors)
DOC = (
    "`operator_form`: Spark's Python stateful operator it runs on, 'rows' (`transformWithState`, pyspark 4.1+, the "
    "default where the session has it) or 'pandas' (`transformWithStateInPandas`, pyspark 4.0's). A query goes on from "
    "its checkpoint in the form it started with: one started on pyspark 4.0, or by a connector without this option, "
    "takes 'pandas' (Spark refuses it otherwise, with STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA naming "
    "transformWithStateInPandasExec)."
)
# the Arrow type of each Spark type a helper hands its processor (the key's and rows' texts, order values, flags)
_ARROW: dict[DataType, pa.DataType] = {
    StringType(): pa.string(),
    LongType(): pa.int64(),
    IntegerType(): pa.int32(),
    BooleanType(): pa.bool_(),
    DoubleType(): pa.float64(),
}


@dataclass(frozen=True)
class Form:
    """The operator's form for one query (chosen on the driver, carried to the workers in the processor), and its
    input's Arrow schema."""

    rows: bool
    given: pa.Schema

    @staticmethod
    def of(grouped: GroupedData, given: StructType, wanted: str | None, helper: str) -> Form:
        """The form `wanted` (None: the Row form where `grouped` has it, pyspark 4.1+), and the processor's input: the
        columns of `given`."""
        has_rows = hasattr(grouped, "transformWithState")
        if wanted not in (None, ROWS, PANDAS):
            raise OptionError(
                f"{helper}: operator_form is '{ROWS}' or '{PANDAS}' (unset: '{ROWS}' where pyspark has it), "
                f"not {wanted!r}"
            )
        if wanted == ROWS and not has_rows:
            raise OptionError(
                f"{helper}: operator_form '{ROWS}' runs on Spark's transformWithState, which pyspark "
                f"{pyspark.__version__} does not have (4.1 and later do): leave operator_form unset, or give '{PANDAS}'"
            )
        rows = wanted == ROWS or (wanted is None and has_rows)
        return Form(rows, pa.schema([(f.name, _ARROW[f.dataType]) for f in given]))

    def run(self, grouped: GroupedData, processor: StatefulProcessor, out: StructType, time_mode: str) -> DataFrame:
        """The grouped records through the processor (output mode Append)."""
        if self.rows:
            return grouped.transformWithState(processor, out, "Append", time_mode)
        return grouped.transformWithStateInPandas(processor, out, "Append", time_mode)

    def table(self, given: Iterator[Any]) -> pa.Table:
        """A state group's records of a micro-batch, as the operator handed them, in one table."""
        if not self.rows:
            frames = list(given)
            frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
            return pa.Table.from_pandas(frame[self.given.names], self.given, preserve_index=False)
        records = list(given)
        if not records:
            return self.given.empty_table()
        at = {name: i for i, name in enumerate(records[0].__fields__)}
        cells = list(zip(*records))  # column by column, in C: a Row is a tuple
        return pa.Table.from_arrays([pa.array(cells[at[f.name]], f.type) for f in self.given], schema=self.given)

    def emit(self, columns: Mapping[str, Any]) -> Iterable[Any]:
        """The processor's output, columns of equal length (Arrow arrays, NumPy arrays or lists, in the output
        schema's order), in the form's kind: one pandas frame, or a Row each."""
        if not self.rows:
            return [pd.DataFrame({n: _numpy(c) for n, c in columns.items()})]
        made = Row(*columns)
        return [made(*values) for values in zip(*[_values(c) for c in columns.values()])]


def _numpy(column: Any) -> Any:
    return column.to_numpy(zero_copy_only=False) if isinstance(column, pa.Array | pa.ChunkedArray) else column


def _values(column: Any) -> list[Any]:
    if isinstance(column, pa.Array | pa.ChunkedArray):
        values: list[Any] = column.to_pylist()
    else:
        values = column.tolist() if isinstance(column, np.ndarray) else list(column)
    return values
