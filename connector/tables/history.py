"""changelog_table and changelog_history: a changelog kept as rows (a pipeline's streaming table, a bronze table, a
batch read with `read.mode` = `changelog`) turned into the table it describes, as slowly changing dimensions of
type 1 (each key's last row) and type 2 (every version of a row, with the offsets it held from and to).

These are what `create_auto_cdc_flow` (Spark Declarative Pipelines, 4.2+) builds incrementally. Open-source Spark
4.2 and 4.3 refuse AUTO CDC into every table format served for them (`AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE`
for parquet and for Delta 4.4's tables; Iceberg publishes no runtime for Spark 4.2+), so a pipeline gets the same
tables as materialized views of its changelog table, recomputed on each update. Batch only: in a stream,
`normalized_changelog` keeps the table in Spark's state store.

A key's records are ordered by `order_by` (the record's offset: a key lives in one partition); a delete (a
tombstone or -D) ends the key's row, a before-image (-U) is dropped, as the upsert write reads them. Two different
records of one key at one position cannot be ordered: the query fails saying so.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..errors import SchemaError
from ..kernel.change_kind import UpsertAction, kind_names, spellings
from .rows import JSON_OPTIONS

START, END = "__START_AT", "__END_AT"  # create_auto_cdc_flow's names for a type 2 version's interval
_DELETE, _ROW, _KIND = "uk_delete", "uk_row", "uk_kind"
_TOMBSTONES = list(spellings(UpsertAction.TOMBSTONE))
_SKIPPED = list(spellings(UpsertAction.SKIP))
_KNOWN = [s for action in UpsertAction for s in spellings(action)]


def changelog_table(
    changes: DataFrame,
    key: str | Sequence[str],
    *,
    order_by: str | Sequence[str] = "offset",
    change_column: str = "_change_type",
) -> DataFrame:
    """The table `changes` describes (SCD type 1): each key's last row, unless that was a delete. Its columns: the
    key's, then the others of `changes` but `order_by` and `change_column`."""
    keys, order = _names(key), _names(order_by)
    records = _records(changes, keys, order, change_column)
    last = records.groupBy(*keys).agg(F.max_by(F.struct(_DELETE, _ROW), F.struct(*order)).alias("uk_last"))
    kept = last.where(~F.col(f"uk_last.{_DELETE}")).select(*keys, F.col(f"uk_last.{_ROW}").alias(_ROW))
    return kept.select(*keys, f"{_ROW}.*")


def changelog_history(
    changes: DataFrame, key: str | Sequence[str], *, order_by: str = "offset", change_column: str = "_change_type"
) -> DataFrame:
    """Every version of every key's row (SCD type 2): the columns of `changelog_table`, then `__START_AT` and
    `__END_AT`, the `order_by` positions of the record that made the version and of the next change of its key
    (null while it is the key's row). A repeat of the same row is not a new version; a delete ends the version and
    starts none."""
    keys = _names(key)
    records = _records(changes, keys, [order_by], change_column)
    by_key = Window.partitionBy(*keys).orderBy(order_by)
    text = F.to_json(F.col(_ROW), JSON_OPTIONS)
    previous = F.struct(F.lag(_DELETE).over(by_key).alias("d"), F.lag(text).over(by_key).alias("t"))
    changed = ~previous.eqNullSafe(F.struct(F.col(_DELETE).alias("d"), text.alias("t")))
    # A window function cannot stand in a filter: whether a record changes its key's row is a column first.
    versions = records.select("*", changed.alias("uk_new")).where("uk_new")
    ends = versions.select(*keys, order_by, _DELETE, _ROW, F.lead(order_by).over(by_key).alias(END))
    return ends.where(~F.col(_DELETE)).select(*keys, f"{_ROW}.*", F.col(order_by).alias(START), END)


def _names(columns: str | Sequence[str]) -> list[str]:
    names = [columns] if isinstance(columns, str) else list(columns)
    if not names:
        raise SchemaError("changelog_table / changelog_history: give the key's columns and the columns that order them")
    return names


def _records(changes: DataFrame, keys: list[str], order: list[str], change: str) -> DataFrame:
    """The key and order columns, whether the record deletes its key, and the rest of the row as one STRUCT; without
    before-images, one record per key and position.

    Nothing here analyses `changes` (no look at its columns or schema): a pipeline's query function may not, so the
    row's other columns are picked by a regular expression Spark resolves, and a missing column is Spark's error."""
    if any(c in name for name in (*keys, *order, change) for c in ("`", "\\E")):
        raise SchemaError("changelog_table / changelog_history: column names with ` or \\E are not supported")
    others = "|".join(f"\\Q{name}\\E" for name in (*keys, *order, change))
    rest = F.struct(changes.colRegex(f"`(?i)(?!(?:{others})$).+`")).alias(_ROW)
    picked = changes.select(*keys, *order, F.col(change).alias(_KIND), rest)
    kind = F.lower(F.col(_KIND))
    named = F.concat(F.lit(f"column '{change}' has the unknown change kind '"), F.col(_KIND), F.lit("'; use "))
    unknown = F.raise_error(F.concat(named, F.lit(kind_names())))
    deletes = F.when(kind.isNull(), F.lit(False)).when(kind.isin(_KNOWN), kind.isin(_TOMBSTONES)).otherwise(unknown)
    records = picked.where(kind.isNull() | ~kind.isin(_SKIPPED)).select(*keys, *order, deletes.alias(_DELETE), _ROW)
    record = F.struct(_DELETE, _ROW)
    unique = records.groupBy(*keys, *order).agg(
        F.first(record).alias("uk_record"), _ambiguous(F.to_json(record, JSON_OPTIONS))
    )
    return unique.where(F.col("uk_ambiguous").isNull()).select(*keys, *order, "uk_record.*")


def _ambiguous(text: Column) -> Column:
    """Null, or the query fails: one key holds two different records at one position (a filter on it keeps the
    check from being pruned)."""
    message = "two different records of one key at one position of order_by: give order_by columns that order them"
    return F.when(F.count_distinct(text) > 1, F.raise_error(F.lit(message))).alias("uk_ambiguous")
