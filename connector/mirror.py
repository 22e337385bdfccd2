"""A changelog mirrored into a Delta table: one MERGE per micro-batch.

Delta's Spark jars do not run on pyspark 4.3 (delta-spark 4.4.0 is built for Spark 4.2 and fails with
`NoSuchMethodError` on `LogicalRDD`; Iceberg's 1.11/1.12 runtimes with `IncompatibleClassChangeError`), so
the MERGE is delta-rs's: the `deltalake` package (extra `delta`), which writes the Delta protocol itself. A
micro-batch is collected as Arrow on the driver, reduced to each key's last change, and merged in one Delta
commit that also records the batch id as the query's application transaction (Delta's `txn` action, the
one Spark's Delta writes for `txnAppId`/`txnVersion`): a batch Spark replays after a restart finds its id
recorded and is skipped, so the table gets every change once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.streaming.query import StreamingQuery

from .errors import OptionError, RecordError
from .secrets import strip_url_credentials
from .spark_internals import session_query_id
from .write.upsert_actions import classify

log = logging.getLogger("upsert_kafka")

_ROW, _DELETE = "__upsert_kafka_row", "__upsert_kafka_delete"  # helper columns of the merge source


def mirror_to_delta(
    changes: DataFrame,
    table: str,
    keys: str | Sequence[str],
    *,
    checkpoint_location: str,
    change_column: str = "_change_type",
    storage_options: dict[str, str] | None = None,
    trigger: dict[str, str | bool] | None = None,
) -> StreamingQuery:
    """Start a query mirroring the changelog `changes` (an upsert-kafka stream) into the Delta table at
    `table`, keyed by `keys` (';'-separated or a list): upserts update or insert, deletes delete.
    `trigger` takes `DataStreamWriter.trigger`'s keywords, e.g. `{"availableNow": True}`."""
    writer = changes.writeStream.foreachBatch(
        delta_mirror(table, keys, change_column=change_column, storage_options=storage_options)
    ).option("checkpointLocation", checkpoint_location)
    # pyspark's overloads of trigger() each name one keyword, which a dict of them cannot show.
    return (writer.trigger(**trigger) if trigger else writer).start()  # type: ignore[arg-type]


def delta_mirror(
    table: str,
    keys: str | Sequence[str],
    *,
    change_column: str = "_change_type",
    storage_options: dict[str, str] | None = None,
) -> Callable[[DataFrame, int], None]:
    """The `foreachBatch` function of `mirror_to_delta`, for a query the caller builds itself."""
    try:
        import deltalake  # noqa: F401  (checked now, not at the first micro-batch)
    except ImportError as e:
        raise OptionError(
            "the Delta mirror needs the deltalake package: pip install 'pyspark-upsert-kafka[delta]'"
        ) from e
    key_columns = [k.strip() for k in keys.split(";")] if isinstance(keys, str) else list(keys)
    if not key_columns or not all(key_columns):
        raise OptionError(f"the Delta mirror needs the key columns, got {keys!r}")

    def merge_batch(batch: DataFrame, batch_id: int) -> None:
        app_id = _query_id(batch)
        changes = last_changes(batch.toArrow(), key_columns, change_column)
        merge_changes(table, changes, key_columns, app_id, batch_id, storage_options)

    return merge_batch


def _query_id(batch: DataFrame) -> str:
    """The id of the query running this foreachBatch function: the Delta application transaction's id. Spark
    keeps it across restarts from the same checkpoint, so a replayed batch id is recognised, and a new
    checkpoint (batch ids from 0 again) is a new application."""
    query = session_query_id(batch.sparkSession)
    if query is None:  # fail closed: without it a replayed batch cannot be told from a new one
        raise OptionError(
            "the Delta mirror runs as a streaming query's foreachBatch function in a classic Spark session: "
            "Spark gives it no query id otherwise (not over Spark Connect)"
        )
    return query


def last_changes(batch: pa.Table, keys: list[str], change_column: str) -> pa.Table:
    """Each key's last change in the batch, in a table of the mirrored columns and a delete flag.

    A key lives in one Kafka partition, read in offset order by one Spark task (or its slices by consecutive
    tasks), and `toArrow` keeps the tasks' order: the last row of a key in the collected batch is its last
    change. A shuffle between the source and the mirror would lose that order."""
    missing = [c for c in [*keys, change_column] if c not in batch.column_names]
    if missing:
        raise OptionError(
            f"the mirrored stream has no column {', '.join(map(repr, missing))}; "
            f"its columns are {', '.join(batch.column_names)}"
        )
    for key in keys:
        if batch[key].null_count:
            raise RecordError(f"a change with a null key column '{key}' cannot be mirrored: keys identify rows")
    rows, deletes, _ = classify(batch, change_column)  # before-images dropped
    rows = rows.drop_columns([change_column]).append_column(_DELETE, deletes)
    numbered = rows.select(keys).append_column(_ROW, pa.array(np.arange(rows.num_rows)))
    last = numbered.group_by(keys, use_threads=False).aggregate([(_ROW, "max")])[f"{_ROW}_max"]
    return rows.take(np.sort(last.to_numpy()))


def merge_changes(
    table: str,
    changes: pa.Table,
    keys: list[str],
    app_id: str,
    batch_id: int,
    storage_options: dict[str, str] | None = None,
) -> None:
    """Merge the reduced changes of micro-batch `batch_id` into the Delta table, creating it on first use,
    unless the table already records that batch of `app_id`."""
    from deltalake import CommitProperties, DeltaTable, Transaction

    columns = [c for c in changes.column_names if c != _DELETE]
    if DeltaTable.is_deltatable(table, storage_options):
        target = DeltaTable(table, storage_options=storage_options)
    else:
        target = DeltaTable.create(table, schema=changes.select(columns).schema, storage_options=storage_options)
    done = target.transaction_version(app_id)
    if done is not None and batch_id <= done:
        log.info(
            "Delta mirror: batch %d of query %s is already in %s; skipped",
            batch_id,
            app_id,
            strip_url_credentials(target.table_uri),
        )
        return
    if changes.num_rows == 0:
        return
    q = _quoted
    values = {q(c): f"s.{q(c)}" for c in columns}
    (
        target.merge(
            changes,
            predicate=" AND ".join(f"t.{q(k)} = s.{q(k)}" for k in keys),
            source_alias="s",
            target_alias="t",
            commit_properties=CommitProperties(app_transactions=[Transaction(app_id, batch_id)]),
        )
        .when_matched_delete(predicate=f"s.{q(_DELETE)}")
        .when_matched_update(updates=values, predicate=f"NOT s.{q(_DELETE)}")
        .when_not_matched_insert(updates=values, predicate=f"NOT s.{q(_DELETE)}")
        .execute()
    )


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'
