"""normalized_changelog on a real broker: the records Flink wrote normalize as Flink's ChangelogNormalize does (a new
key inserts, a known key updates with its before-image, a delete carries the last row, a duplicate or a delete of an
unknown key gives nothing; with a state TTL, duplicates passed on), a key's state expires, values come out exactly,
keys sharing a state bucket stay apart, a checkpoint of an earlier state layout is refused, a checkpoint goes on only
in the operator form it started with, and the errors say what to change. A restart from the checkpoint:
tests/compat/test_tables_versions.py."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import re
import time
import zoneinfo
from pathlib import Path

import orjson
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark_upsert_kafka import OptionError, SchemaError
from pyspark_upsert_kafka.tables.aggregate import aggregate_changelog
from pyspark_upsert_kafka.tables.normalize import LATE_METRIC, normalized_changelog
from pyspark_upsert_kafka.tables.rows import CHANGELOG_CHECKPOINTING, GROUPS
from pyspark_upsert_kafka.tables.temporal_join import temporal_join

from tests.support.kafka_io import produce
from tests.support.read_helpers import Collector, collect_until, finish_available_now, run_available_now
from tests.tables.forms import OPERATOR_FORMS, OPERATOR_NAMES, ROW_FORM

SCHEMA = "id INT, name STRING"
UTC = dt.timezone.utc


def _record(i: int, name: str | None) -> tuple:
    value = None if name is None else orjson.dumps({"id": i, "name": name})
    return (orjson.dumps({"id": i}), value)


def _changes(spark, options: dict, schema: str = SCHEMA, metadata: str = "offset"):
    more = {"metadata.columns": metadata, "schema": schema, "scan.startup.mode": "earliest-offset"}
    return spark.readStream.format("upsert-kafka").options(**(options | more)).load()


def _per_key(rows: list) -> dict:
    """Each key's emitted (name, change kind) in emission order (keys are independent; a key's order is kept)."""
    by_key: dict = {}
    for r in rows:
        by_key.setdefault(r["id"], []).append((r["name"], r["_change_type"]))
    return by_key


COLUMNS = ("id", "name", "_change_type", "offset")


def _named(rows: list[tuple]) -> list[dict]:
    return [dict(zip(COLUMNS, r)) for r in rows]


@pytest.mark.compat  # Spark's per-entry TTL of a MapState: on every pyspark
def test_a_key_idle_longer_than_the_state_ttl_is_new_again(spark, rocksdb, new_topic, options, bootstrap, tmp_path):
    topic = new_topic()
    produce(bootstrap, topic, [_record(1, "a"), _record(2, "b")])
    # 1 ms: expired by the next micro-batch, whose processing time is later by far more than that
    normalized = normalized_changelog(_changes(spark, options(topic)), "id", state_ttl="1 ms").select(*COLUMNS)
    assert _per_key(_named(collect_until(normalized, tmp_path, 2))) == {1: [("a", "insert")], 2: [("b", "insert")]}
    # key 2's delete comes first: read in the batch of key 1's record or before it
    produce(bootstrap, topic, [_record(2, None), _record(1, "a2")])
    # key 1's row is forgotten: an insert, not an update; key 2's delete finds no row and gives nothing
    assert _per_key(_named(collect_until(normalized, tmp_path, 1))) == {1: [("a2", "insert")]}


def _versioned(spark, options: dict, checkpoint: Path) -> tuple[list, list]:
    """One AvailableNow run of the topic normalized in its records' timestamp order, a key's live rows counted behind
    it: (each micro-batch's normalized rows and counts, the late records each micro-batch dropped)."""
    changes = _changes(spark, options, metadata="offset, version=timestamp")
    normalized = normalized_changelog(changes, "id", version="version").drop("version")
    counted = aggregate_changelog(normalized.withColumn("all", F.lit(0)), "all", live="COUNT(*)")
    found, late = [], []
    for name, df in (("normalized", normalized), ("counted", counted)):
        sink = Collector()
        query = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint / name))
        query = query.trigger(availableNow=True).start()
        finish_available_now(query)
        found.append(sink.rows)
        if name == "normalized":  # (the query behind it observes the same metric)
            metrics = [p["observedMetrics"].get(LATE_METRIC) for p in query.recentProgress if p["numInputRows"]]
            late = [m["records"] for m in metrics if m is not None and m["records"]]
    return found, late


def test_versions_order_upserts_and_tombstones_across_micro_batches_and_a_restart(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path
):
    """With the record's timestamp as each record's version: an older upsert after a newer one is dropped, in one
    micro-batch and after a restart; an older tombstone deletes nothing; an older upsert after a newer delete does not
    resurrect the key; the drops are counted in the query's progress; aggregate_changelog behind it counts the keys
    of the highest versions."""
    topic = new_topic()
    now = int(time.time() * 1000)  # versions as timestamps near now: ancient ones fall to the topic's retention
    k = lambda i, name, version: (*_record(i, name), None, now + version)  # noqa: E731
    produce(bootstrap, topic, [k(1, "a", 10), k(1, "old", 5), k(2, "x", 10), k(2, None, 20), k(3, "p", 10)])
    (rows, counts), late = _versioned(spark, options(topic), tmp_path)
    assert _per_key(_named(rows)) == {1: [("a", "insert")], 2: [("x", "insert"), ("x", "delete")], 3: [("p", "insert")]}
    assert counts[-1][1:] == (2, "insert") and late == [1]
    produce(bootstrap, topic, [k(2, "y", 15), k(1, None, 8), k(3, "q", 30), k(4, "n", 1)])
    (rows, counts), late = _versioned(spark, options(topic), tmp_path)
    assert _per_key(_named(rows)) == {3: [("p", "update_preimage"), ("q", "update_postimage")], 4: [("n", "insert")]}
    assert [c[1:] for c in counts] == [(2, "update_preimage"), (3, "update_postimage")] and late == [2]


# Where each zone's wall clock goes back an hour (its summer time ends), as an instant.
FALL_BACK = {
    "America/New_York": dt.datetime(2026, 11, 1, 6, tzinfo=UTC),
    "Europe/London": dt.datetime(2026, 10, 25, 1, tzinfo=UTC),
}


@pytest.mark.parametrize("zone", FALL_BACK)
def test_timestamp_versions_are_instants_where_the_session_zones_clock_goes_back(
    spark, rocksdb, session_time_zone, new_topic, options, bootstrap, tmp_path, zone
):
    """A record 40 minutes later than another shows an earlier wall-clock time in the session's zone across the end of
    its summer time: as a version it is still the later one, through normalized_changelog and a table read."""
    session_time_zone(zone)
    topic = new_topic(1, **{"retention.ms": "-1"})  # versions weeks old: kept
    earlier, later = FALL_BACK[zone] - dt.timedelta(minutes=30), FALL_BACK[zone] + dt.timedelta(minutes=10)
    local = zoneinfo.ZoneInfo(zone)
    assert later.astimezone(local).time() < earlier.astimezone(local).time(), "the wall clock goes back between them"
    ms = lambda t: int(t.timestamp() * 1000)  # noqa: E731
    produce(bootstrap, topic, [(*_record(1, "later"), None, ms(later)), (*_record(1, "earlier"), None, ms(earlier))])

    (rows, _), late = _versioned(spark, options(topic), tmp_path)
    assert _per_key(_named(rows)) == {1: [("later", "insert")]} and late == [1]
    by_version = options(topic) | {"schema": SCHEMA, "scan.upsert.version": "timestamp"}
    table = spark.read.format("upsert-kafka").options(**by_version).load().select("id", "name")
    assert [tuple(r) for r in table.collect()] == [(1, "later")]


@pytest.mark.parametrize("carrier", ["the record's timestamp", "a DECIMAL value column"])
def test_a_version_is_part_of_the_row_and_comes_out_as_it_went_in(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, carrier
):
    """The version column comes out exactly, a before-image with its own row's version; a row equal to the one held
    and of its version gives nothing, of a higher version an update; a lower version is dropped."""
    topic = new_topic(1)
    now = int(time.time() * 1000)
    versions = [10, 10, 20, 15]  # of the records below, in order
    if carrier == "a DECIMAL value column":
        value = lambda v: orjson.dumps({"id": 1, "name": "a" if v != 15 else "b", "v": f"{v}.125"})  # noqa: E731
        produce(bootstrap, topic, [(orjson.dumps({"id": 1}), value(v)) for v in versions])
        changes = _changes(spark, options(topic), "id INT, name STRING, v DECIMAL(12,3)")
        shown = F.col("v").cast("string")
        expected = ["10.125", "10.125", "20.125"]
    else:
        produce(bootstrap, topic, [(*_record(1, "a" if v != 15 else "b"), None, now + v) for v in versions])
        changes = _changes(spark, options(topic), metadata="offset, v=timestamp")
        shown = F.unix_micros("v").cast("string")
        expected = [str((now + v) * 1000) for v in (10, 10, 20)]
    normalized = normalized_changelog(changes, "id", version="v").select("name", shown, "_change_type")
    rows = run_available_now(normalized, str(tmp_path)).rows
    kinds = ["insert", "update_preimage", "update_postimage"]
    assert [tuple(r) for r in rows] == [("a", v, k) for v, k in zip(expected, kinds)]


def test_a_record_without_a_version_fails_the_query_saying_where_to_take_one(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path
):
    topic = new_topic()
    produce(bootstrap, topic, [_record(1, "a"), _record(1, None)])
    changes = _changes(spark, options(topic), "id INT, name STRING, v BIGINT")
    with pytest.raises(
        StreamingQueryException, match=r"a record without a version in column 'v' .* timestamp or a header"
    ):
        run_available_now(normalized_changelog(changes, "id", version="v"), str(tmp_path))
    with pytest.raises(SchemaError, match=r"version column 'name' is string; a version is an integer, timestamp"):
        normalized_changelog(changes, "id", version="name")


GOLDEN = json.loads((Path(__file__).parents[1] / "formats/golden/flink/tables_normalize.json").read_text())
FLINK_KINDS = {"+I": "insert", "-U": "update_preimage", "+U": "update_postimage", "-D": "delete"}
USERS = "id INT, name STRING, region STRING, score DOUBLE"


def _flinks_changes(query: str) -> dict:
    """Each key's changes as Flink's ChangelogNormalize emitted them (Flink's canonical DOUBLE is text)."""
    (rows,) = [q["rows"] for q in GOLDEN["queries"] if q["name"] == query]
    by_key: dict = {}
    for change in rows:
        row = change["row"]
        score = None if row["score"] is None else float(row["score"])
        by_key.setdefault(row["id"], []).append((row["name"], row["region"], score, FLINK_KINDS[change["kind"]]))
    return by_key


@pytest.mark.parametrize("operator_form", OPERATOR_FORMS)
@pytest.mark.parametrize(("query", "state_ttl"), [("stream", None), ("stream_state_ttl", "1 h")])
def test_flinks_records_normalize_as_flinks_changelog_normalize_does(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, query, state_ttl, operator_form
):
    """The records Flink 2.2.1's upsert-kafka sink wrote (an update, a duplicate, deletes of known and unknown keys, a
    re-insert, nulls), normalized here, give what Flink's ChangelogNormalize gave for `SELECT * FROM users` (a key's
    changes in order; keys are independent), with and without 'table.exec.state.ttl', in every operator form."""
    topic = new_topic()
    records = GOLDEN["topics"]["users"]["records"]
    produce(bootstrap, topic, [(bytes.fromhex(r["key"]), r["value"] and bytes.fromhex(r["value"])) for r in records])
    changes = _changes(spark, options(topic), USERS)
    normalized = normalized_changelog(changes, "id", state_ttl=state_ttl, operator_form=operator_form).drop("offset")
    expected = _flinks_changes(query)
    if state_ttl is None:
        rows = run_available_now(normalized, str(tmp_path)).rows
    else:
        rows = collect_until(normalized, tmp_path, sum(map(len, expected.values())))
    got: dict = {}
    for id_, *rest in rows:
        got.setdefault(id_, []).append(tuple(rest))
    assert got == expected


EXACT = (
    "id BIGINT, d DOUBLE, f FLOAT, big BIGINT, dec DECIMAL(38, 18), ts TIMESTAMP, ntz TIMESTAMP_NTZ, day DATE, "
    "bin BINARY, s STRING, arr ARRAY<DOUBLE>, m MAP<STRING, BIGINT>, st STRUCT<x: DOUBLE, y: STRING>"
)


@pytest.mark.parametrize("operator_form", OPERATOR_FORMS)
def test_values_come_out_exactly_as_they_went_in(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, operator_form
):
    """The row crosses Python as Spark's JSON text: NaN stays NaN and null null (pandas makes one of them), -0.0 keeps
    its sign, integers past 2**53 and 38-digit decimals every digit, timestamps their microseconds, in every
    operator form."""
    rows = [
        (1, math.nan, -0.0, 2**62 + 1, decimal.Decimal("12345678901234567890.123456789012345678"),
         dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), dt.datetime(9999, 12, 31, 23, 59, 59, 123456),
         dt.date(1, 1, 1), b"\x00\xff", "", [math.nan, None, -math.inf], {"k": None}, (None, "")),
        (2, None, None, None, None, None, None, None, None, None, None, None, None),
        (3, math.inf, 1.5, -(2**63), decimal.Decimal("-0.000000000000000001"),
         dt.datetime(2038, 1, 19, 3, 14, 8, 1, tzinfo=UTC), dt.datetime(1582, 10, 4, 0, 0, 0, 1),
         dt.date(2024, 2, 29), b"", "\U0001f600 \"q\"\n", [], {}, (math.nan, None)),
    ]  # fmt: skip
    topic = new_topic()
    given = spark.createDataFrame(rows, EXACT)
    given.write.format("upsert-kafka").options(**options(topic)).mode("append").save()
    normalized = normalized_changelog(_changes(spark, options(topic), EXACT), "id", operator_form=operator_form)
    sink = run_available_now(normalized.drop("offset"), str(tmp_path))
    got = spark.createDataFrame([r[:-1] for r in sink.rows], EXACT)
    assert {r[-1] for r in sink.rows} == {"insert"}
    # compared as text of every value: Spark's = would take NaN = NaN but also 0.0 = -0.0
    text = "to_json(struct(*), map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX'))"
    texts = [sorted(r[0] for r in df.selectExpr(text).collect()) for df in (got, given)]
    assert texts[0] == texts[1]
    assert "-0.0" in next(r[0] for r in got.selectExpr(text).collect() if '"id":1' in r[0])


def test_keys_that_share_a_bucket_each_keep_their_own_row(spark, rocksdb, new_topic, options, bootstrap, tmp_path):
    """The state is grouped by a hash bucket of the key: with more keys than buckets, keys share one, and each still
    inserts, updates, repeats and deletes on its own row, across micro-batches."""
    keys = range(2 * GROUPS + 1)  # more keys than groups: some group holds two or more
    topic = new_topic()
    produce(bootstrap, topic, [_record(i, f"a{i}") for i in keys])
    normalized = normalized_changelog(_changes(spark, options(topic)), "id").select(*COLUMNS)
    first = _per_key(_named(run_available_now(normalized, str(tmp_path)).rows))
    assert first == {i: [(f"a{i}", "insert")] for i in keys}
    # key i % 3 == 0: deleted; == 1: updated; == 2: the same row again (nothing); plus a delete of an unknown key
    produce(bootstrap, topic, [_record(i, [None, f"b{i}", f"a{i}"][i % 3]) for i in keys] + [_record(-1, None)])
    second = _per_key(_named(run_available_now(normalized, str(tmp_path)).rows))
    expected = {i: [(f"a{i}", "delete")] for i in keys if i % 3 == 0} | {
        i: [(f"a{i}", "update_preimage"), (f"b{i}", "update_postimage")] for i in keys if i % 3 == 1
    }
    assert second == expected


class _PerKeyLayout(StatefulProcessor):
    """The first state layout of normalized_changelog: grouped by the key, a ValueState `last_row`."""

    def init(self, handle) -> None:
        self._last = handle.getValueState("last_row", "row STRING, offset BIGINT")

    def handleInputRows(self, key, rows, timerValues):
        for frame in rows:
            self._last.update((frame["uk_row"].iloc[-1], int(frame["offset"].iloc[-1])))
        return iter(())

    def close(self) -> None:
        pass


class _MapPerBucketLayout(StatefulProcessor):
    """The second: grouped by an INT bucket, each key's row an entry of a MapState `last_row`."""

    def init(self, handle) -> None:
        self._last = handle.getMapState("last_row", "key STRING", "row STRING, offset BIGINT")

    def handleInputRows(self, key, rows, timerValues):
        for frame in rows:
            self._last.updateValue(
                (frame["uk_key"].iloc[-1],), (frame["uk_row"].iloc[-1], int(frame["offset"].iloc[-1]))
            )
        return iter(())

    def close(self) -> None:
        pass


class _BucketValueLayout(StatefulProcessor):
    """The third: grouped by a BIGINT bucket, a bucket's rows one ValueState `last_row` (an Arrow stream)."""

    def init(self, handle) -> None:
        self._last = handle.getValueState("last_row", "rows BINARY")

    def handleInputRows(self, key, rows, timerValues):
        for _ in rows:
            self._last.update((b"rows",))
        return iter(())

    def close(self) -> None:
        pass


class _VersionInTextLayout(StatefulProcessor):
    """The first with versions: as today's, the version last in a key's entry (and in the row's text)."""

    def init(self, handle) -> None:
        self._last = handle.getMapState("last_row", "key STRING", "row STRING, offset BIGINT, version BIGINT")

    def handleInputRows(self, key, rows, timerValues):
        for frame in rows:
            self._last.updateValue((frame["uk_key"].iloc[-1],), (frame["uk_row"].iloc[-1], 1, 1))
        return iter(())

    def close(self) -> None:
        pass


class _KeyInTextLayout(StatefulProcessor):
    """The entry per key before its key's columns left the row's text: the text first, then the order values (a
    versioned query's, the version before them)."""

    def __init__(self, versioned: bool) -> None:
        self._value = "version BIGINT, " * versioned + "row STRING, offset BIGINT"
        self._versioned = versioned

    def init(self, handle) -> None:
        self._last = handle.getMapState("last_row", "key STRING", self._value)

    def handleInputRows(self, key, rows, timerValues):
        for frame in rows:
            entry = (frame["uk_row"].iloc[-1], 1)
            self._last.updateValue((frame["uk_key"].iloc[-1],), (1, *entry) if self._versioned else entry)
        return iter(())

    def close(self) -> None:
        pass


EARLIER_LAYOUTS = {
    "per key": ("CAST(id AS STRING) AS uk_group", _PerKeyLayout, "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"),
    "a map per bucket": (
        "CAST(pmod(xxhash64(id), 1024) AS INT) AS uk_group",
        _MapPerBucketLayout,
        "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
    ),
    # the layout before the entry per key (a MapState's entries are keyed by the group and the user key)
    "a value per bucket": (
        "pmod(xxhash64(id), 1024) AS uk_group",
        _BucketValueLayout,
        "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE",
    ),
    # a versioned query's (its rows compared by a text holding the version: they would never equal a record's now)
    "versioned, the version in the row's text": (
        f"pmod(xxhash64(id), {GROUPS}) AS uk_group",
        _VersionInTextLayout,
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    ),
    # the entry per key with the key's columns in the row's text (a row held would never equal a record's now)
    "the key in the row's text": (
        f"pmod(xxhash64(id), {GROUPS}) AS uk_group",
        lambda: _KeyInTextLayout(versioned=False),
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    ),
    "versioned, the key in the row's text": (
        f"pmod(xxhash64(id), {GROUPS}) AS uk_group",
        lambda: _KeyInTextLayout(versioned=True),
        "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE",
    ),
}


@pytest.mark.compat  # Spark's own schema check refuses it: on every pyspark
@pytest.mark.parametrize("layout", EARLIER_LAYOUTS)
def test_a_checkpoint_of_an_earlier_state_layout_is_refused(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, layout
):
    """A query that normalized with an earlier layout cannot go on with this one: its keys' rows would not be found
    and every key would be new again. The state variable keeps its name (`last_row`) with another key schema (the
    group is a BIGINT, and a MapState's entry is keyed by the group and the key), or another value schema (the
    version, the order values and the row's text, in that order), so Spark refuses the checkpoint at once."""
    group, processor, refusal = EARLIER_LAYOUTS[layout]
    topic = new_topic()
    produce(bootstrap, topic, [_record(1, "a")])
    old = (
        _changes(spark, options(topic))
        .selectExpr(group, "to_json(struct(id)) AS uk_key", "to_json(struct(id, name)) AS uk_row", "offset")
        .groupBy("uk_group")
        .transformWithStateInPandas(processor(), "uk_row STRING, offset BIGINT, uk_kind STRING", "Append", "None")
    )
    run_available_now(old, str(tmp_path))
    produce(bootstrap, topic, [_record(1, "b")])
    versioned = layout.startswith("versioned")
    changes = _changes(spark, options(topic), metadata="offset, version=timestamp" if versioned else "offset")
    # in the form it was written in (the default, pandas): its state refused
    with pytest.raises(StreamingQueryException, match=refusal):
        version = "version" if versioned else None
        normalized = normalized_changelog(changes, "id", version=version)
        run_available_now(normalized, str(tmp_path))


@pytest.mark.parametrize("started", OPERATOR_FORMS)
def test_a_checkpoint_goes_on_in_the_operator_form_it_started_with_and_the_other_is_refused(
    spark, rocksdb, new_topic, options, bootstrap, tmp_path, started
):
    """Spark names the operator after its form in the checkpoint's state metadata: a query goes on in the form it
    started with, its keys' rows found, and Spark refuses the other form when the query starts, naming the form the
    checkpoint has (so no key is new again). Unset, the form is pandas."""
    topic = new_topic()
    produce(bootstrap, topic, [_record(1, "a")])

    def normalized(form: str | None):
        chosen = {} if form is None else {"operator_form": form}
        return normalized_changelog(_changes(spark, options(topic)), "id", **chosen).drop("offset")

    first = run_available_now(normalized(None if started == "pandas" else started), str(tmp_path)).rows
    assert first == [(1, "a", "insert")]
    produce(bootstrap, topic, [_record(1, "b")])
    if ROW_FORM:
        other = {"rows": "pandas", "pandas": "rows"}[started]
        named = re.escape(f"in the metadata: [(OperatorId: 0 -> OperatorName: {OPERATOR_NAMES[started]})]")
        refusal = f"(?s)STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA.*{named}"
        with pytest.raises(StreamingQueryException, match=refusal):
            run_available_now(normalized(other), str(tmp_path))
    second = run_available_now(normalized(started), str(tmp_path)).rows
    assert second == [(1, "a", "update_preimage"), (1, "b", "update_postimage")]


def test_an_operator_form_this_pyspark_does_not_have_is_refused_before_a_query_starts(
    spark, rocksdb, new_topic, options
):
    changes = _changes(spark, options(new_topic()))
    with pytest.raises(OptionError, match=r"operator_form is 'pandas' \(the default\) or 'rows', not 'arrow'"):
        normalized_changelog(changes, "id", operator_form="arrow")
    if ROW_FORM:
        assert normalized_changelog(changes, "id", operator_form="rows").columns == changes.columns
    else:
        lacking = r"operator_form 'rows' runs on Spark's transformWithState, which pyspark 4\.0\.\d+ does not have"
        with pytest.raises(
            OptionError, match=lacking + r" \(4\.1 and later do\): leave operator_form unset \('pandas'\)"
        ):
            normalized_changelog(changes, "id", operator_form="rows")


@pytest.mark.parametrize(
    ("schema", "key"),
    [
        ("name STRING, region STRING, id INT, note STRING", ["region", "id"]),  # a key's columns amid the others
        ("id INT, region STRING", ["region", "id"]),  # a row of key columns only
    ],
)
def test_a_key_held_apart_from_its_row_comes_out_in_its_columns(spark, rocksdb, schema, key):
    """A key's entry holds the text of its columns but the key's (the entry's key holds those): every change, a
    delete's too, gives the key's values back in their own columns and the others from the row."""
    columns = [c.split()[0] for c in schema.split(", ")]
    row = {"name": "a", "region": "eu", "id": 1, "note": None}
    updated, other = row | {"name": "b", "note": "n"}, row | {"region": "us", "name": "c"}
    changes = [(row, "upsert"), (other, "upsert"), (updated, "upsert"), (updated, "upsert"), (row, "delete")]
    given = [(*[r[c] if c in key or kind != "delete" else None for c in columns], kind, offset)
             for offset, (r, kind) in enumerate(changes)]  # fmt: skip
    df = spark.createDataFrame(given, f"{schema}, _change_type STRING, offset BIGINT")
    got = [r.asDict() for r in normalized_changelog(df, key).drop("offset").collect()]
    expected = [(row, "insert"), (other, "insert")]
    if "name" in columns:
        expected += [(row, "update_preimage"), (updated, "update_postimage"), (updated, "delete")]
    else:  # an update of a row of key columns only equals it: nothing, and its delete carries the key
        expected += [(row, "delete")]
    by_key = sorted(expected, key=lambda e: (e[0]["region"], e[0]["id"]))  # a key's changes in order; keys apart
    assert sorted(got, key=lambda g: (g["region"], g["id"])) == [
        {c: r[c] for c in columns} | {"_change_type": kind} for r, kind in by_key
    ]


def test_an_unknown_change_kind_fails_the_query_naming_the_kinds(spark, rocksdb, tmp_path):
    rows = [(1, "a", "upsert"), (1, "b", "replace")]
    changes = spark.createDataFrame(rows, "id INT, name STRING, _change_type STRING")
    normalized = normalized_changelog(changes.withColumn("offset", changes.id.cast("bigint")), "id")
    with pytest.raises(Exception, match="has the change kind 'replace'; use insert, update_preimage"):
        normalized.collect()


def test_the_helper_says_what_to_change_before_a_query_starts(spark, new_topic, options):
    changes = _changes(spark, options(new_topic()))
    with pytest.raises(OptionError, match="RocksDBStateStoreProvider"):
        normalized_changelog(changes, "id")
    with pytest.raises(SchemaError, match=r"key column 'user' not among the columns"):
        normalized_changelog(changes, "user")
    with pytest.raises(SchemaError, match=r"order_by column 'name' is string; .* must be an integer column"):
        normalized_changelog(changes, "id", order_by="name")
    with pytest.raises(SchemaError, match=r"order_by 'offset' not among the columns"):
        without_offsets = spark.readStream.format("upsert-kafka").options(**options(new_topic()))
        normalized_changelog(without_offsets.option("schema", SCHEMA).load(), "id")
    with pytest.raises(OptionError, match=r"state_ttl .*a duration"):
        normalized_changelog(changes, "id", state_ttl="soon")


def test_sparks_default_shuffle_partitions_are_refused_before_a_query_starts(spark, rocksdb, new_topic, options):
    """Spark's default of 200 would run 200 stateful tasks a micro-batch (about 21 s each on 2 cores): the helper says
    what to set; 200 set by the user is the user's choice."""
    partitions = "spark.sql.shuffle.partitions"
    before = spark.conf.get(partitions)
    changes = _changes(spark, options(new_topic()))
    try:
        spark.conf.unset(partitions)
        with pytest.raises(OptionError, match=r"Spark's default \(200\).*spark\.conf\.set\('spark\.sql\.shuffle"):
            normalized_changelog(changes, "id")
        spark.conf.set(partitions, "200")
        assert normalized_changelog(changes, "id").columns == changes.columns
    finally:
        spark.conf.set(partitions, before)


def test_every_helper_chooses_rocksdbs_changelog_checkpointing_unless_the_session_has_a_value(
    spark, rocksdb, new_topic, options
):
    """Spark's default snapshots the state store at every commit; the helpers turn on the changelog (only the changed
    entries written) before the query starts, and keep a value the user set, either one."""
    changes = _changes(spark, options(new_topic()))
    table = changes.drop("offset")
    helpers = {
        "normalize": lambda: normalized_changelog(changes, "id"),
        "aggregate": lambda: aggregate_changelog(table, "id", n="COUNT(*)"),
        "join": lambda: temporal_join(changes.select("id"), changes, "id", stream_time=None),
    }
    for helper, build in helpers.items():
        spark.conf.unset(CHANGELOG_CHECKPOINTING)
        build()
        assert spark.conf.get(CHANGELOG_CHECKPOINTING, None) == "true", helper
        for chosen in ("false", "true"):
            spark.conf.set(CHANGELOG_CHECKPOINTING, chosen)
            build()
            assert spark.conf.get(CHANGELOG_CHECKPOINTING) == chosen, helper
