"""Driver side: a write planned in two steps, once before any task starts. `parse_write` turns the options into
a WriteSpec and checks what the save mode allows (no I/O); `resolve_write` asks the schema registry and the
brokers (write.target) and fences what an earlier run left open (write.exactly_once), giving the WritePlan
pickled into every task. Whether the write has transactions is decided here, once: ExactlyOnce or NoTransactions."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from pyspark.sql.types import StructType

from ..errors import OptionError
from ..formats import ChangelogCodec
from ..kafka.pool import CLIENT_POOL
from ..options.layout import check_codecs
from .exactly_once import NO_TRANSACTIONS, ExactlyOnce, NoTransactions
from .spec import EXACTLY_ONCE, WriteSpec, parse_write_spec
from .target import WriteTarget, describe_write_target

# A stream's write target (topics, limits) is asked again after a minute.
_TARGET_TTL_S = 60.0


@dataclass(frozen=True)
class WritePlan:
    """A write as the driver planned it, pickled into every task."""

    spec: WriteSpec
    target: WriteTarget
    transactions: ExactlyOnce | NoTransactions = NO_TRANSACTIONS  # ExactlyOnce: sink.delivery-guarantee exactly-once
    collect_keys: bool = False  # overwrite: tasks report every key they were given


def parse_write(options: Mapping[str, str], schema: StructType, overwrite: bool = False) -> WriteSpec:
    """The write's spec, with what save mode overwrite refuses."""
    spec = parse_write_spec(options, schema)
    if overwrite and spec.topics.pattern is not None:
        raise OptionError(
            "save mode overwrite with option 'topic-pattern' would tombstone the keys of every topic the pattern "
            "matches, now or later: list the topics with option 'topic' (the DataFrame's rows name theirs in the "
            "topic column)"
        )
    if overwrite and isinstance(spec.layout.value_codec, ChangelogCodec):
        raise OptionError(
            f"save mode overwrite deletes the keys the DataFrame lacks with tombstones, which a "
            f"'{spec.layout.value_codec.name}' reader skips: write with mode append and `delete` rows for the keys "
            "to remove"
        )
    if overwrite and spec.tables is not None:
        raise OptionError("save mode overwrite does not apply to a multi-table write: write with mode append")
    return spec


def resolve_write(
    spec: WriteSpec, overwrite: bool = False, query_id: str | None = None, streaming: bool = False
) -> WritePlan:
    """What the registry and the brokers say, and earlier runs fenced. `query_id`: the streaming query's, when
    the driver can tell it (exactly-once names its transactional ids after it).

    streaming: Spark plans a stream write again for every micro-batch, in a driver-side Python worker it keeps
    for the query; there the brokers' answers are reused for a while (the client pool keeps them)."""
    check_codecs(spec.layout, writing=True)  # may ask the schema registry
    # 0: no transactions; None: exactly-once with the default transaction timeout.
    timeout = spec.transaction_timeout_ms if spec.guarantee == EXACTLY_ONCE else 0
    describe = partial(describe_write_target, spec.kafka, spec.topics.names, spec.topics.pattern, timeout)
    if streaming:
        target = CLIENT_POOL.shared(("write-target", spec.kafka, spec.topics, timeout), describe, _TARGET_TTL_S)
    else:
        target = describe()
    transactions: ExactlyOnce | NoTransactions = NO_TRANSACTIONS
    if spec.guarantee == EXACTLY_ONCE:
        transactions = ExactlyOnce(spec, target, uuid.uuid4().hex, streaming)
    transactions.fence_earlier_runs(query_id)
    return WritePlan(spec, target, transactions, collect_keys=overwrite)


def plan_write(
    options: Mapping[str, str],
    schema: StructType,
    overwrite: bool,
    query_id: str | None = None,
    streaming: bool = False,
) -> WritePlan:
    return resolve_write(parse_write(options, schema, overwrite), overwrite, query_id, streaming)
