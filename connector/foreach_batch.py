"""Streaming aggregations into upsert-kafka in one line.

Spark's Python sinks take the Append and Complete output modes only; an aggregation's Update mode (each
micro-batch holds the groups that changed) reaches Kafka through `foreachBatch`. `upsert_writer` gives the
function to pass there: each micro-batch is written as a batch write, every row an upsert of its key (or a
tombstone, by its change type). With `sink.delivery-guarantee=exactly-once` the micro-batch is the unit of
exactly-once: its write id is the query id and the batch id (write.exactly_once), so a micro-batch
that Spark replays after a restart is not written twice.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from .options.canonical import canonical_options


def upsert_writer(**options: str) -> Callable[[DataFrame, int], None]:
    """A `foreachBatch` function writing each micro-batch to upsert-kafka with these options, e.g.
    `sales.writeStream.outputMode("update").foreachBatch(upsert_writer(**kafka)).start()`.

    Option names are checked now (unknown ones fail before the query starts); the rest when the first
    micro-batch is written, against its schema."""
    given = {name: str(value) for name, value in options.items()}
    canonical_options(given)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # The batch id needs no passing: Spark sets it (and the query id) on the tasks of this write.
        batch.write.format("upsert-kafka").options(**given).mode("append").save()

    return write_batch
