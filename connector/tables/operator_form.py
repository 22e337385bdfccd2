"""The form of Spark's Python stateful operator a helper runs on, and its edges: a state group's records into the
helper as one Arrow table, the helper's changes (columns) out in the form's own kind.

Both forms run the same processor on the same state (the same variables, grouped by the same key), but Spark names
the operator after its form in the checkpoint's state metadata and refuses a checkpoint of the other form
(STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA): a query goes on in the form it started with, so a helper
takes the form as `operator_form`. `transformWithStateInPandas` (every pyspark 4.x, the default) hands Python pandas
frames; the Row-based `transformWithState` (pyspark 4.1+, 'rows') hands it Rows, without pandas. The default is
pandas, by measurement (integration/results, "At stream cadence"): at a steady rate the Row form's floor (a
processor keeping nothing) is fresher, but normalize on it is not, beyond this machine's spread from run to run (six
runs interleaved: p50 medians 1,198 ms Rows, 1,228 ms pandas), and it unpacks every cell in Python (PySpark's worker
does), so one big micro-batch (a query catching up) takes 1.3 to 1.55x as long (1 M keys: 48.5 s against 36.1 s,
medians). And every checkpoint a helper wrote before the option is of the pandas form.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyspark
from pyspark.sql import DataFrame, Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.types import BooleanType, DataType, DoubleType, IntegerType, LongType, StringType, StructType

from ..errors import OptionError

ROWS, PANDAS = "rows", "pandas"
_Helper = TypeVar("_Helper", bound=Callable[..., DataFrame])
# A helper's operator_form keyword, said once for all of them (their docstrings: `documented`)
DOC = (
    "`operator_form`: Spark's Python stateful operator it runs on, 'pandas' (`transformWithStateInPandas`, every "
    "pyspark 4.x, the default) or 'rows' (the Row-based `transformWithState`, pyspark 4.1+: no pandas, each cell "
    "unpacked in Python, so one big micro-batch takes longer). A query goes on from its checkpoint only in the form it "
    "started with: Spark refuses the other as the query starts, with "
    "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA naming the checkpoint's operator "
    "(transformWithStateInPandasExec or transformWithStateInPySparkExec)."
)


def documented(helper: _Helper) -> _Helper:
    """The helper with DOC at the end of its docstring (a docstring is a literal: it cannot hold a name)."""
    text = textwrap.fill(DOC, 116, initial_indent="    ", subsequent_indent="    ")
    helper.__doc__ = f"{helper.__doc__}\n\n{text}"
    return helper


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
    by: str  # the column that groups the records: the state group
    given: pa.Schema  # the records' other columns

    @staticmethod
    def of(records: DataFrame, by: str, wanted: str, helper: str) -> Form:
        """The form `wanted` for `records` grouped by `by`."""
        if wanted not in (PANDAS, ROWS):
            raise OptionError(f"{helper}: operator_form is '{PANDAS}' (the default) or '{ROWS}', not {wanted!r}")
        if wanted == ROWS and not hasattr(records.groupBy(by), "transformWithState"):
            raise OptionError(
                f"{helper}: operator_form '{ROWS}' runs on Spark's transformWithState, which pyspark "
                f"{pyspark.__version__} does not have (4.1 and later do): leave operator_form unset ('{PANDAS}')"
            )
        given = pa.schema([(f.name, _ARROW[f.dataType]) for f in records.schema if f.name != by])
        return Form(wanted == ROWS, by, given)

    def run(self, records: DataFrame, processor: StatefulProcessor, out: StructType, time_mode: str) -> DataFrame:
        """The records, grouped, through the processor (output mode Append)."""
        grouped = records.groupBy(self.by)
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
