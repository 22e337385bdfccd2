"""The topic as a table inside a stream, as a real Apache Flink 2.2.1 runs it: the `tables_*` cases of the Flink golden
corpus (tests/formats/golden/flink/tables_*.json), made by integration/flink_golden.py (`--tables` for only these).

Each case writes Kafka records with Flink's own sinks (a "writer" table per topic: the case's table plus a writable
`kafka_timestamp TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'` column, so every record's Kafka timestamp is fixed and
two runs give identical files), then runs queries over the topics with Flink (bounded: 'scan.bounded.mode' =
'latest-offset'), and records every row each query emits with its RowKind, in emission order (parallelism 1), the
table that changelog folds to, and Flink's plan (EXPLAIN's "Optimized Physical Plan" with each operator's changelog
mode, of the job the query runs: into Flink's collecting sink):

- tables_normalize: `users` (upsert-kafka, json) read as a stream, `SELECT * FROM users`: Flink plans
  ChangelogNormalize (checked in the plan); once with the default settings, once with 'table.exec.state.ttl' set.
- tables_aggregate: `SELECT category, COUNT(*), SUM(price), AVG(price), MIN(price), MAX(price) FROM orders GROUP BY
  category` over an upsert-kafka `orders`: the query's changelog, and the records Flink's upsert-kafka sink writes for
  `INSERT INTO shop_sales SELECT ...` (their timestamps are the producer's clock: recorded as null).
- tables_temporal_join: Flink's documented event-time temporal join (orders x currency_rates, the rate's Kafka
  timestamp its version time), LEFT and inner, and Flink's error for the same join on processing time.

Each tables_<case>.json (values in the canonical form of tests/support/flink_golden.py):
- flink, case, writer ("flink"), config: the session's table settings (golden_job.py's TABLE_CONFIG, as Flink holds
  them)
- topics {name: {partitions, records [{partition, offset, key, value, timestamp, headers}]}}: each topic as Flink's
  sinks wrote it (key and value hex, null for none; timestamp epoch ms, null where Flink left it to the producer)
- tables [{name, topic, primary_key, ddl}]: every CREATE TABLE run, in order; `ddl` has '{topic}' (the topic named
  by `topic`) and '{bootstrap}' placeholders
- writes [{table, columns [{name, type}], changes [{kind, row}]}]: what Flink's writer tables were given, in order
- inserts [{name, statement, topic, plan}]: INSERT INTO statements whose records are the topic's (tables_aggregate)
- queries [{name, statement, config, columns, key, plan, rows [{kind, row}], table}]: `config` the settings of this
  query only, `columns` its output columns as Flink resolves them, `rows` every row it emitted with its RowKind
  ("+I" | "-U" | "+U" | "-D") in emission order, `table` those rows folded by `key` (sorted by it); or, where
  Flink refuses the query, {name, statement, config, error, causes} (its exception chain, root last)
- notes: what a reader of the file must know

Test/dev tooling only: the product never imports this module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from integration.flink_session import (
    BASE_TS,
    FLINK_VERSION,
    FlinkJobError,
    FlinkSession,
    consume_all,
    create_topic,
    fold,
    log,
    micros,
    q,
)

TS = "`kafka_timestamp` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'"
JSON_UPSERT = {"key.format": "json", "value.format": "json", "value.fields-include": "ALL"}
BOUNDED = {"scan.bounded.mode": "latest-offset"}


def ddl(table: str, lines: list[str], options: dict[str, str]) -> str:
    opts = {"connector": options["connector"], "topic": "{topic}", "properties.bootstrap.servers": "{bootstrap}"}
    opts |= options
    with_ = ",\n".join(f"  '{k}' = '{v}'" for k, v in opts.items())
    return f"CREATE TABLE {q(table)} (\n" + ",\n".join(f"  {line}" for line in lines) + f"\n) WITH (\n{with_}\n)"


def upsert_kafka(table: str, columns: list[tuple[str, str]], key: list[str], *extra: str, writer: bool = False) -> str:
    lines = [f"{q(n)} {t}" for n, t in columns] + list(extra)
    lines.append(f"PRIMARY KEY ({', '.join(q(k) for k in key)}) NOT ENFORCED")
    options = {"connector": "upsert-kafka", **JSON_UPSERT, **({} if writer else BOUNDED)}
    if writer:
        lines.insert(len(columns), TS)
    return ddl(table, lines, options)


@dataclass
class Table:
    name: str
    topic: str
    ddl: str
    primary_key: list[str] = field(default_factory=list)


@dataclass
class Write:
    table: str
    columns: list[tuple[str, str]]  # physical columns and kafka_timestamp, in table order
    changes: list[dict[str, Any]]  # {"kind", "row"}, canonical, kafka_timestamp included
    insert_only: bool = False


@dataclass
class Query:
    name: str
    statement: str
    key: list[str]  # to fold its changelog into a table
    config: dict[str, str] = field(default_factory=dict)
    plan_must_have: str = ""  # an operator the plan must show (checked)
    refused: bool = False  # Flink is expected to refuse it: its error is recorded


@dataclass
class Insert:
    name: str
    statement: str
    topic: str


@dataclass
class TablesCase:
    name: str
    topics: dict[str, int]  # logical name -> partitions
    tables: list[Table]
    writes: list[Write]
    queries: list[Query]
    inserts: list[Insert] = field(default_factory=list)
    producer_timestamps: tuple[str, ...] = ()  # topics whose record timestamps Flink leaves to the producer
    notes: list[str] = field(default_factory=list)
    check: Callable[[dict[str, Any]], list[str]] | None = None  # more notes, found in the file's content


def _changes(columns: list[tuple[str, str]], rows: list[tuple[str, tuple[Any, ...], int]]) -> list[dict[str, Any]]:
    """(kind, physical values, Kafka timestamp in epoch ms) -> canonical changes with kafka_timestamp (micros)."""
    names = [n for n, _ in columns if n != "kafka_timestamp"]
    out = []
    for kind, values, ts_ms in rows:
        row = dict(zip(names, values, strict=True))
        row["kafka_timestamp"] = ts_ms * 1000
        out.append({"kind": kind, "row": {n: row[n] for n, _ in columns}})
    return out


def _sequence(rows: list[tuple[str, tuple[Any, ...]]]) -> list[tuple[str, tuple[Any, ...], int]]:
    """Change n gets BASE_TS + n seconds as its Kafka timestamp (as the other cases)."""
    return [(kind, values, BASE_TS + 1000 * n) for n, (kind, values) in enumerate(rows)]


# ---------------------------------------------------------------------------------------------------------------
# tables_normalize

USERS = [("id", "INT"), ("name", "STRING"), ("region", "STRING"), ("score", "DOUBLE")]


def normalize_case() -> TablesCase:
    alice, bob, carol = (1, "alice", "eu-west", "1.5"), (2, "bob", "us-east", "2.0"), (3, "carol", None, None)
    rows = [
        ("+I", alice),  # a new key
        ("+I", bob),
        ("+I", carol),  # nulls in non-key columns
        ("+U", (1, "alice", "eu-west", "2.5")),  # an update of a known key
        ("+U", (1, "alice", "eu-west", "2.5")),  # an update equal to the current row: a duplicate
        ("-D", bob),  # a delete (tombstone) of a known key
        ("-D", (9, None, None, None)),  # a delete of a key never seen
        ("+I", (2, "bob", "us-west", "3.25")),  # the deleted key inserted again
        ("+U", (3, "carol", "ap-south", None)),  # several changes of one key in a row
        ("+U", (3, "carol", "ap-south", "0.75")),
        ("+U", (3, None, None, None)),  # every non-key column null
        ("+U", (3, None, None, None)),  # a duplicate, its nulls equal
        ("-D", (1, "alice", "eu-west", "2.5")),  # a key deleted ...
        ("-D", (1, "alice", "eu-west", "2.5")),  # ... twice
        ("+I", (4, "dave", "", "-4.0")),
        ("+U", (1, "alice", "eu-west", "5.0")),  # an upsert of a deleted key, given as an UPDATE_AFTER
    ]
    writer_cols = [*USERS, ("kafka_timestamp", "TIMESTAMP_LTZ(3)")]
    stream = "SELECT * FROM `users`"
    return TablesCase(
        "tables_normalize",
        {"users": 1},
        [
            Table("users_writer", "users", upsert_kafka("users_writer", USERS, ["id"], writer=True), ["id"]),
            Table("users", "users", upsert_kafka("users", USERS, ["id"]), ["id"]),
        ],
        [Write("users_writer", writer_cols, _changes(writer_cols, _sequence(rows)))],
        [
            Query("stream", stream, ["id"], plan_must_have="ChangelogNormalize"),
            Query("stream_state_ttl", stream, ["id"], {"table.exec.state.ttl": "1 h"}, "ChangelogNormalize"),
        ],
        notes=[
            "users_writer is users with a writable Kafka timestamp (its value bytes are the same: metadata is not "
            "in the value); every change is one record: -D a tombstone, +I and +U a value",
            "queries: `users` read as a stream through ChangelogNormalize (its keyed state holds each key's last "
            "row); stream_state_ttl is the same query with 'table.exec.state.ttl' = '1 h'",
        ],
    )


# ---------------------------------------------------------------------------------------------------------------
# tables_aggregate

ORDERS = [("order_id", "STRING"), ("category", "STRING"), ("price", "DOUBLE")]
SHOP_SALES = [
    ("category", "STRING"),
    ("num", "BIGINT"),
    ("total", "DOUBLE"),
    ("avg_price", "DOUBLE"),
    ("min_price", "DOUBLE"),
    ("max_price", "DOUBLE"),
]
AGGREGATE = (
    "SELECT category, COUNT(*) AS num, SUM(price) AS total, AVG(price) AS avg_price, MIN(price) AS min_price, "
    "MAX(price) AS max_price FROM orders GROUP BY category"
)


def aggregate_case() -> TablesCase:
    rows = [
        ("+I", ("o1", "books", "10.25")),
        ("+I", ("o2", "books", "5.5")),
        ("+I", ("o3", "toys", "7.75")),
        ("+U", ("o1", "books", "12.0")),  # a price updated
        ("+I", ("o4", "music", "3.25")),
        ("+I", ("o5", "music", "4.5")),
        ("+U", ("o2", "toys", "5.5")),  # an order moved from books to toys
        ("-D", ("o3", "toys", "7.75")),  # an order deleted
        ("-D", ("o4", "music", "3.25")),
        ("-D", ("o5", "music", "4.5")),  # music emptied: all its orders deleted
        ("+U", ("o1", "books", "12.0")),  # a duplicate of the current row
        ("+U", ("o1", "books", "12.5")),  # the price of the only order of books
        ("+I", ("o6", "music", "8.75")),  # music refilled
        ("+U", ("o1", "toys", "12.5")),  # books emptied by a move
        ("+I", ("o4", "music", "2.25")),  # a deleted order back
        ("+I", ("o7", "books", "0.25")),  # books refilled
        ("-D", ("o9", None, None)),  # a delete of an order never seen
    ]
    writer_cols, key = [*ORDERS, ("kafka_timestamp", "TIMESTAMP_LTZ(3)")], ["order_id"]
    return TablesCase(
        "tables_aggregate",
        {"orders": 1, "shop_sales": 1},
        [
            Table("orders_writer", "orders", upsert_kafka("orders_writer", ORDERS, key, writer=True), key),
            Table("orders", "orders", upsert_kafka("orders", ORDERS, key), key),
            Table("shop_sales", "shop_sales", upsert_kafka("shop_sales", SHOP_SALES, ["category"]), ["category"]),
        ],
        [Write("orders_writer", writer_cols, _changes(writer_cols, _sequence(rows)))],
        [Query("aggregate", AGGREGATE, ["category"], plan_must_have="GroupAggregate")],
        [Insert("shop_sales", f"INSERT INTO shop_sales {AGGREGATE}", "shop_sales")],
        producer_timestamps=("shop_sales",),
        notes=[
            "prices are multiples of 0.25: every SUM is exact in binary",
            "queries.aggregate: the GROUP BY's changelog to a collecting sink (retractions included); "
            "inserts.shop_sales: the same aggregate written by Flink's upsert-kafka sink, its records in "
            "topics.shop_sales",
            "topics.shop_sales: Flink's upsert-kafka sink sets no Kafka timestamp without a timestamp metadata "
            "column (the producer's clock): recorded as null",
        ],
    )


# ---------------------------------------------------------------------------------------------------------------
# tables_temporal_join

TJ_ORDERS = [("order_id", "STRING"), ("price", "DECIMAL(32, 2)"), ("currency", "STRING")]
TJ_ORDERS.append(("order_time", "TIMESTAMP(3)"))
TJ_RATES = [("currency", "STRING"), ("conversion_rate", "DECIMAL(32, 2)")]
DAY = "2024-01-01"
JOIN = (
    "SELECT o.order_id, o.price, o.currency, r.conversion_rate, o.order_time FROM {orders} AS o {join} "
    "currency_rates FOR SYSTEM_TIME AS OF o.{time} AS r ON o.currency = r.currency"
)
# One query setting for the joins: no periodic watermark while the (few) records are read, so that both sources'
# watermarks jump to the end at once when their input ends and the rows come out in an order that does not depend on
# when a periodic watermark happened to fire (the rows themselves do not depend on it: no record is late).
JOIN_CONFIG = {"pipeline.auto-watermark-interval": "1 h"}


def _at(clock: str) -> tuple[str, int]:
    """A TIMESTAMP(3) canonical value on DAY and its instant in epoch ms (UTC)."""
    text = f"{DAY}T{clock}" + ("" if "." in clock else ".000") + "000"
    return text, micros(text) // 1000


def temporal_join_case() -> TablesCase:
    rates = [  # (kind, currency, rate, version time): in time order, as one partition of a topic is
        ("+I", "EUR", "1.14", "09:00:00"),
        ("+I", "USD", "1.00", "09:15:00"),
        ("+I", "JPY", "0.01", "09:30:00"),
        ("+I", "GBP", "1.27", "11:49:00"),
        ("+U", "EUR", "1.10", "12:05:00"),
        ("-D", "JPY", "0.01", "12:30:00"),  # a rate deleted (a tombstone)
        ("+U", "USD", "1.05", "13:00:00"),
        ("+I", "JPY", "0.02", "14:00:00"),  # the deleted rate back
    ]
    orders = [  # (order_id, price, currency, order time): in time order
        ("o_003", "2.00", "EUR", "10:15:00"),
        ("o_004", "1.00", "USD", "10:30:00"),
        ("o_005", "50.00", "JPY", "10:32:00"),
        ("o_006", "3.00", "GBP", "10:52:00"),  # before any GBP rate
        ("o_007", "6.00", "CHF", "11:04:00"),  # a currency without any rate
        ("o_001", "11.11", "EUR", "12:00:00"),  # the docs' o_001 and o_002
        ("o_008", "4.00", "GBP", "12:01:00"),
        ("o_002", "12.51", "EUR", "12:06:00"),
        ("o_009", "7.50", "JPY", "12:45:00"),  # after the delete of JPY's rate
        ("o_010", "2.50", "USD", "12:59:59.999"),  # a millisecond before USD's new rate
        ("o_011", "5.00", "USD", "13:00:00"),  # exactly at USD's new rate's update time
        ("o_012", "8.00", "JPY", "14:30:00"),  # after JPY's rate is back
    ]
    order_cols = [*TJ_ORDERS, ("kafka_timestamp", "TIMESTAMP_LTZ(3)")]
    rate_cols = [*TJ_RATES, ("kafka_timestamp", "TIMESTAMP_LTZ(3)")]
    order_rows = []
    for oid, price, currency, clock in orders:
        text, ms = _at(clock)
        order_rows.append(("+I", (oid, price, currency, text), ms))
    rate_rows = [(kind, (cur, rate), _at(clock)[1]) for kind, cur, rate, clock in rates]
    kafka_json = {"connector": "kafka", "value.format": "json"}
    read = {"scan.startup.mode": "earliest-offset", **BOUNDED}
    order_lines = [f"{q(n)} {t}" for n, t in TJ_ORDERS]
    watermark = "WATERMARK FOR `order_time` AS `order_time`"
    update_time = "`update_time` TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL"
    rates_ddl = upsert_kafka("currency_rates", TJ_RATES, ["currency"], update_time,
                             "WATERMARK FOR `update_time` AS `update_time`")  # fmt: skip
    tables = [
        Table("orders_writer", "orders", ddl("orders_writer", [*order_lines, TS], kafka_json)),
        Table("currency_rates_writer", "currency_rates",
              upsert_kafka("currency_rates_writer", TJ_RATES, ["currency"], writer=True), ["currency"]),
        Table("orders", "orders", ddl("orders", [*order_lines, watermark], {**kafka_json, **read})),
        Table("currency_rates", "currency_rates", rates_ddl, ["currency"]),
        Table("orders_proctime", "orders",
              ddl("orders_proctime", [*order_lines, "`proc_time` AS PROCTIME()"], {**kafka_json, **read})),
    ]  # fmt: skip
    left = JOIN.format(orders="orders", join="LEFT JOIN", time="order_time")
    inner = JOIN.format(orders="orders", join="JOIN", time="order_time")
    proc = JOIN.format(orders="orders_proctime", join="LEFT JOIN", time="proc_time")
    return TablesCase(
        "tables_temporal_join",
        {"orders": 1, "currency_rates": 1},
        tables,
        [
            Write("orders_writer", order_cols, _changes(order_cols, order_rows), insert_only=True),
            Write("currency_rates_writer", rate_cols, _changes(rate_cols, rate_rows)),
        ],
        [
            Query("left_join", left, ["order_id"], dict(JOIN_CONFIG), "TemporalJoin"),
            Query("inner_join", inner, ["order_id"], dict(JOIN_CONFIG), "TemporalJoin"),
            Query("processing_time_left_join", proc, ["order_id"], dict(JOIN_CONFIG), refused=True),
        ],
        notes=[
            "the Kafka timestamp of each record is set by the writer tables: an order's is its order_time, a "
            "rate's is its version time (currency_rates.update_time, METADATA FROM 'timestamp'), UTC",
            "queries: the event-time temporal join of Flink's docs (Joins, Event Time Temporal Join), LEFT and "
            "inner; processing_time_left_join is the same join on a processing-time attribute "
            "(`proc_time` AS PROCTIME()) over the upsert-kafka table: Flink's error is recorded",
            "both sources are bounded: their watermarks reach the end when their input ends; "
            "'pipeline.auto-watermark-interval' = '1 h' keeps them from moving before that, so the rows come out "
            "in one deterministic order (each key's rows in arrival order, keys by their earliest timer); which "
            "rate an order gets does not depend on it (no record is late)",
        ],
        check=as_of_notes,
    )


def as_of_notes(doc: dict[str, Any]) -> list[str]:
    """Where a join's rows differ from the rate valid at each order's time, read from the records Flink wrote (each
    record a version from its Kafka timestamp on; a tombstone ends its currency's version at its own timestamp)."""
    writes = {w["table"]: w["changes"] for w in doc["writes"]}
    versions: dict[str, list[tuple[int, str | None]]] = {}
    for change in writes["currency_rates_writer"]:
        row = change["row"]
        rate = None if change["kind"] in ("-U", "-D") else row["conversion_rate"]
        versions.setdefault(row["currency"], []).append((row["kafka_timestamp"], rate))
    notes = []
    for query in doc["queries"]:
        if "rows" not in query:
            continue
        got = {r["row"]["order_id"]: r["row"]["conversion_rate"] for r in query["rows"]}
        for change in writes["orders_writer"]:
            order = change["row"]
            at = micros(order["order_time"])
            valid = [rate for ts, rate in versions.get(order["currency"], []) if ts <= at]
            want = valid[-1] if valid else None
            inner = "LEFT" not in query["statement"]
            if (order["order_id"] in got, got.get(order["order_id"])) != (not inner or want is not None, want):
                shown = json.dumps(got[order["order_id"]]) if order["order_id"] in got else "no row"
                notes.append(
                    f"{query['name']}: {order['order_id']} ({order['currency']} at {order['order_time']}): Flink gives "
                    f"{shown}; the rate valid then, read from the records' timestamps, is {json.dumps(want)}"
                )
    if notes:
        notes.append(
            "why they differ: the plan reads currency_rates through ChangelogNormalize, which turns a tombstone into a "
            "DELETE carrying the key's last row, its update_time included (the time of the version it deletes, not "
            "the tombstone's timestamp); TemporalJoin keeps one version per key and time, so that DELETE replaces "
            "the version it deletes: the deleted rate is gone from its own start time on"
        )
    return notes


def table_cases() -> list[TablesCase]:
    return [normalize_case(), aggregate_case(), temporal_join_case()]


# ---------------------------------------------------------------------------------------------------------------
# Running a case


def run_tables_case(flink: FlinkSession, bootstrap: str, case: TablesCase) -> dict[str, Any]:
    prefix = "golden-" + case.name.replace("_", "-")
    topics = {name: f"{prefix}-{name.replace('_', '-')}" for name in case.topics}
    for name, partitions in case.topics.items():
        create_topic(bootstrap, topics[name], partitions)

    def render(table: Table) -> str:
        return table.ddl.replace("{topic}", topics[table.topic]).replace("{bootstrap}", bootstrap)

    statements = [f"DROP TABLE IF EXISTS {q(t.name)}" for t in case.tables] + [render(t) for t in case.tables]
    flink.request("sql", statements=statements)
    writes = []
    for w in case.writes:
        columns = [{"name": n, "type": t} for n, t in w.columns]
        answer = flink.request("write", timeout=200, table=w.table, columns=columns, changes=w.changes,
                               insert_only=w.insert_only)  # fmt: skip
        log(f"  {case.name}: Flink wrote {len(w.changes)} changes into {w.table} in {answer['seconds']} s")
        writes.append({"table": w.table, "columns": columns, "changes": w.changes})
    inserts = []
    for ins in case.inserts:
        plan = flink.request("plan", statement=ins.statement)["plan"]
        answer = flink.request("execute", timeout=200, statement=ins.statement, timeout_s=150)
        log(f"  {case.name}: Flink ran {ins.name} in {answer['seconds']} s")
        inserts.append({"name": ins.name, "statement": ins.statement, "topic": ins.topic, "plan": plan})
    queries = [run_query(flink, case, query) for query in case.queries]
    recorded = {}
    for name, partitions in case.topics.items():
        records = consume_all(bootstrap, topics[name], partitions)
        if name in case.producer_timestamps:
            records = [{**r, "timestamp": None} for r in records]
        recorded[name] = {"partitions": partitions, "records": records}
    flink.request("sql", statements=[f"DROP TABLE {q(t.name)}" for t in case.tables])
    out: dict[str, Any] = {
        "flink": FLINK_VERSION,
        "case": case.name,
        "writer": "flink",
        "config": flink.request("settings")["settings"],
        "topics": recorded,
        "tables": [{"name": t.name, "topic": t.topic, "primary_key": t.primary_key, "ddl": t.ddl} for t in case.tables],
        "writes": writes,
    }
    if inserts:
        out["inserts"] = inserts
    out["queries"] = queries
    out["notes"] = case.notes + (case.check(out) if case.check else [])
    return out


def run_query(flink: FlinkSession, case: TablesCase, query: Query) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": query.name, "statement": query.statement, "config": query.config}
    try:
        plan = flink.request("plan", statement=query.statement, config=query.config)["plan"]
    except FlinkJobError as e:
        if not query.refused:
            raise
        log(f"  {case.name}: Flink refuses {query.name}: {e.answer['error'][:200]}")
        return entry | {"error": e.answer["error"], "causes": e.answer.get("causes", [])}
    if query.refused:
        raise AssertionError(f"{case.name}: Flink was expected to refuse {query.name}, and planned it")
    if query.plan_must_have and not any(query.plan_must_have in line for line in plan):
        raise AssertionError(f"{case.name}: no {query.plan_must_have} in the plan of {query.name}: {plan}")
    read = flink.request("read", timeout=200, query=query.statement, config=query.config, timeout_s=150)
    log(f"  {case.name}: {query.name} emitted {len(read['rows'])} rows in {read['seconds']} s")
    return entry | {
        "columns": read["columns"],
        "key": query.key,
        "plan": plan,
        "rows": read["rows"],
        "table": fold(read["rows"], query.key),
    }


# ---------------------------------------------------------------------------------------------------------------
# Output


def _expands(v: Any) -> bool:
    if isinstance(v, list):
        return len(v) > 1 or any(isinstance(x, (dict, list)) for x in v)
    return isinstance(v, dict) and any(_expands(x) for x in v.values())


def _render(v: Any, indent: int) -> str:
    pad = "  " * indent
    if isinstance(v, dict) and _expands(v):
        items = [f"{pad}  {json.dumps(k)}: {_render(x, indent + 1)}" for k, x in v.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(v, list) and _expands(v):
        return "[\n" + ",\n".join(f"{pad}  {_render(x, indent + 1)}" for x in v) + f"\n{pad}]"
    return json.dumps(v, ensure_ascii=False)


def dump_tree(doc: dict[str, Any]) -> str:
    """JSON with one record, change or row per line, containers spread over lines: small and diff-friendly."""
    return _render(doc, 0) + "\n"
