"""Benchmarks: our connector next to Spark's JVM `kafka` connector and the raw confluent-kafka client, in one
run, on the same broker, topics, rows and output sink.

    integration/dev python -m integration.benchmark [--records 2000000] [--repeat 3]
    integration/dev python -m integration.benchmark --only latency --rate 2000 20000   # one step alone

Starts the embedded broker and schema registry unless KAFKA_BOOTSTRAP_SERVERS / SCHEMA_REGISTRY_URL name
yours; fetches the JVM connector's jars with Maven (integration/spark-kafka-pom.xml) into the cache. Prints
a table (median records/s, spread, ratios ours/JVM and ours/ceiling) and writes integration/results/
benchmark.json and benchmark.png. Every figure is measured in this run; the machine's noise shows in the
spread, so compare the ratios, not single numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from integration import bench_kafka as kb
from integration import bench_partitions
from integration.kafka import CACHE_DIR, run_command

RESULTS = Path(__file__).resolve().parent / "results"
SPARK_KAFKA_POM = Path(__file__).resolve().parent / "spark-kafka-pom.xml"
STEPS = ("reads", "avro", "writes", "streaming", "fixed", "latency", "memory", "partitions")
SMALL = 1_000  # records of the fixed-cost step
_PEER_JARS = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "kafka-clients", "commons-pool2", "spark-avro")


def ensure_spark_kafka_jars() -> list[str]:
    """The JVM connector's jars (fetched once into the cache), only those pyspark lacks."""
    folder = CACHE_DIR / f"spark-kafka-peer-{hashlib.sha1(SPARK_KAFKA_POM.read_bytes()).hexdigest()[:8]}"
    if not folder.is_dir():
        partial = folder.with_name(folder.name + ".partial")
        mvn = ["mvn", "-q", "-B", "-f", str(SPARK_KAFKA_POM), "dependency:copy-dependencies"]
        run_command([*mvn, f"-DoutputDirectory={partial}", "-DincludeScope=runtime"], "mvn fetching spark-sql-kafka")
        partial.rename(folder)
    return sorted(str(j) for j in folder.glob("*.jar") if j.name.startswith(_PEER_JARS))


class Bench:
    def __init__(self, spark, bootstrap: str, registry_url: str, records: int, repeat: int) -> None:
        self.spark, self.bootstrap, self.registry_url = spark, bootstrap, registry_url
        self.records, self.repeat = records, repeat
        self.results: dict[str, dict] = {}

    # -- measuring ----------------------------------------------------------------------------------

    def measure(self, name: str, run: Callable[[], float], records: int | None = None, repeat: int = 0) -> None:
        """Run `run` (returns seconds) `repeat` times (default: the run's); keep records/s median, min and max."""
        n = records or self.records
        rates = []
        for _ in range(repeat or self.repeat):
            rates.append(n / run())
        self.results[name] = {
            "records": n,
            "median": statistics.median(rates),
            "min": min(rates),
            "max": max(rates),
            "runs": rates,
        }
        print(f"  {name:<40} {statistics.median(rates):>12,.0f} rec/s  ({min(rates):,.0f} .. {max(rates):,.0f})")

    def fresh_topic(self, what: str, **config: str) -> str:
        return kb.create_topic(self.bootstrap, f"bench-{what}-{uuid.uuid4().hex[:8]}", **config)

    def timed(self, action: Callable[[], object]) -> float:
        started = time.perf_counter()
        action()
        return time.perf_counter() - started

    def ours(self, topic: str, **more: str):
        base = {"topic": topic, "properties.bootstrap.servers": self.bootstrap, "key.fields": "id"}
        return self.spark.read.format("upsert-kafka").options(**base, **more)

    def jvm(self, topic: str):
        return (
            self.spark.read.format("kafka")
            .option("kafka.bootstrap.servers", self.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
        )

    @staticmethod
    def jvm_json(df):
        """The JVM peer's rows, as ours: the key's id and the value's fields, each decoded with from_json."""
        df = df.selectExpr(
            "from_json(CAST(key AS STRING), 'id BIGINT') AS k",
            f"from_json(CAST(value AS STRING), '{kb.VALUE_DDL}') AS v",
        )
        return df.selectExpr("k.id AS key_id", "v.*")

    @staticmethod
    def noop(df) -> None:
        df.write.format("noop").mode("overwrite").save()

    # -- the scenarios ------------------------------------------------------------------------------

    def json_reads(self) -> str:
        topics: list[str] = []

        def raw_produce() -> float:
            topics.append(self.fresh_topic("json"))
            return kb.produce_parallel(self.bootstrap, topics[-1], self.records)

        self.measure("produce: raw confluent-kafka", raw_produce)
        topic = topics[0]
        self.measure("read: raw confluent-kafka (no decode)", lambda: kb.consume_parallel(self.bootstrap, topic))
        for mode in ("changelog", "table"):
            df = self.ours(topic, **{"read.mode": mode}).schema(kb.VALUE_DDL + _change_column(mode)).load()
            self.measure(f"read: ours json {mode}", lambda df=df: self.timed(lambda: self.noop(df)))
        jvm = self.jvm_json(self.jvm(topic).load())
        self.measure("read: JVM kafka + from_json", lambda: self.timed(lambda: self.noop(jvm)))
        return topic

    def avro_reads(self) -> None:
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

        topic = self.fresh_topic("avro")
        schema_id = SchemaRegistryClient({"url": self.registry_url}).register_schema(
            f"{topic}-value", Schema(json.dumps(kb.AVRO_VALUE_SCHEMA), "AVRO")
        )
        kb.produce(self.bootstrap, topic, kb.confluent_avro_records(self.records, schema_id))
        self.measure("read: raw confluent-kafka avro (no decode)", lambda: kb.consume_parallel(self.bootstrap, topic))
        df = self.ours(
            topic,
            **{
                "read.mode": "changelog",
                "value.format": "avro-confluent",
                "value.avro-confluent.url": self.registry_url,
            },
        )
        df = df.schema(kb.VALUE_DDL + ", _change_type STRING").load()
        self.measure("read: ours avro-confluent changelog", lambda: self.timed(lambda: self.noop(df)))
        from pyspark.sql.avro.functions import from_avro
        from pyspark.sql.functions import col, expr

        # Spark has no Confluent wire format: skip the 5-byte header, then plain Avro.
        jvm = (
            self.jvm(topic)
            .load()
            .select(
                expr("from_json(CAST(key AS STRING), 'id BIGINT')").alias("k"),
                from_avro(expr("substring(value, 6)"), json.dumps(kb.AVRO_VALUE_SCHEMA)).alias("v"),
            )
        )
        jvm = jvm.select(col("k.id").alias("key_id"), "v.*")
        self.measure("read: JVM kafka + from_avro", lambda: self.timed(lambda: self.noop(jvm)))

    def writes(self) -> None:
        rows = self.spark.range(self.records).selectExpr(
            "id",
            "format_string('customer-name-%010d-of-the-shop', id) AS name",
            "format_string('category-%04d-general-goods', id % 97) AS category",
            "round((id % 100000) / 7, 2) AS price",
            "CAST(id % 13 AS INT) AS quantity",
            "1790000000000 + id AS ts",
        )
        rows = rows.repartition(kb.PARTITIONS).cache()
        rows.count()

        def ours() -> float:
            topic = self.fresh_topic("write-ours")
            options = {"topic": topic, "properties.bootstrap.servers": self.bootstrap, "key.fields": "id"}
            return self.timed(lambda: rows.write.format("upsert-kafka").options(**options).mode("append").save())

        def jvm() -> float:
            topic = self.fresh_topic("write-jvm")
            out = rows.selectExpr("to_json(named_struct('id', id)) AS key", "to_json(struct(*)) AS value")
            writer = out.write.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
            return self.timed(lambda: writer.option("topic", topic).save())

        self.measure("write: ours json", ours)
        self.measure("write: JVM kafka + to_json", jvm)
        rows.unpersist()

    def streaming(
        self,
        topic: str,
        tmp: Path,
        name: str = "stream AvailableNow",
        records: int | None = None,
        repeat: int = 0,
        peer: bool = True,
    ) -> None:
        """A Trigger.AvailableNow query reading the topic into noop; both sides decode key and value."""

        def ours() -> float:
            stream = self.spark.readStream.format("upsert-kafka").options(
                topic=topic, **{"properties.bootstrap.servers": self.bootstrap, "key.fields": "id"}
            )
            return self._available_now(stream.schema(kb.VALUE_DDL + ", _change_type STRING").load(), tmp)

        def jvm() -> float:
            stream = self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
            stream = stream.option("subscribe", topic).option("startingOffsets", "earliest").load()
            return self._available_now(self.jvm_json(stream), tmp)

        self.measure(f"{name}: ours json", ours, records, repeat)
        if peer:
            self.measure(f"{name}: JVM kafka + from_json", jvm, records, repeat)

    def fixed_costs(self, tmp: Path) -> None:
        """A query's fixed cost: the same reads of a topic of SMALL records, where planning, starting the query
        and its Python processes, and the first fetch are nearly all of the time."""
        topic = self.fresh_topic("small")
        kb.produce(self.bootstrap, topic, kb.json_records(SMALL))
        ours = self.ours(topic, **{"read.mode": "changelog"}).schema(kb.VALUE_DDL + ", _change_type STRING").load()
        jvm = self.jvm_json(self.jvm(topic).load())
        self.measure("small read: ours json", lambda: self.timed(lambda: self.noop(ours)), SMALL)
        self.measure("small read: JVM kafka + from_json", lambda: self.timed(lambda: self.noop(jvm)), SMALL)
        self.streaming(topic, tmp, "small stream AvailableNow", SMALL)

    def _available_now(self, df, tmp: Path) -> float:
        checkpoint = tmp / uuid.uuid4().hex
        query = df.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
        return self.timed(lambda: query.trigger(availableNow=True).start().awaitTermination())

    def latency(self, tmp: Path, rate: int, seconds: float) -> None:
        """Produce at a fixed rate while a query copies each record to an output topic; the latency of a
        record is the output's LogAppendTime minus its produce time. Ours and the JVM connector take turns,
        `repeat` times each; the figures kept are the medians of the runs' p50 and p99."""
        runs: dict[str, list[dict]] = {"ours": [], "JVM": []}
        for _ in range(self.repeat):
            for who in runs:
                runs[who].append(self._latency_run(who, tmp, rate, seconds))
        for who, done in runs.items():
            p50 = statistics.median(r["p50_ms"] for r in done)
            p99 = statistics.median(r["p99_ms"] for r in done)
            self.results[f"latency: {who} at {rate}"] = {
                "rate": rate,
                "p50_ms": p50,
                "p99_ms": p99,
                "runs": done,
            }
        ours, jvm = self.results[f"latency: ours at {rate}"], self.results[f"latency: JVM at {rate}"]
        print(
            f"  latency at {rate:,}/s, median of {self.repeat}: ours p50 {ours['p50_ms']:,.0f} / p99 "
            f"{ours['p99_ms']:,.0f} ms, JVM p50 {jvm['p50_ms']:,.0f} / p99 {jvm['p99_ms']:,.0f} ms; ours/JVM p50 "
            f"{ours['p50_ms'] / jvm['p50_ms']:.2f}, p99 {ours['p99_ms'] / jvm['p99_ms']:.2f}"
        )

    def python_floor(self, seconds: float) -> None:
        """The micro-batch floor of a Python source -> Python sink query (integration/bench_floor.py), with one
        task per micro-batch (ours, coalesced) and with one per partition."""
        from integration.bench_floor import floor

        for tasks in (1, kb.PARTITIONS):
            found = floor(self.spark, tasks, seconds)
            self.results[f"latency floor: python source -> python sink, {tasks} task(s)"] = found
            print(
                f"  floor of a do-nothing Python source -> Python sink micro-batch, {tasks} task(s): "
                f"{found.get('triggerExecution', 0):,.0f} ms (addBatch {found.get('addBatch', 0):,.0f} ms, "
                f"median of {found['batches']})"
            )

    def _latency_run(self, who: str, tmp: Path, rate: int, seconds: float) -> dict:
        source = self.fresh_topic(f"lat-in-{who}")
        sink = self.fresh_topic(f"lat-out-{who}", **{"message.timestamp.type": "LogAppendTime"})
        started = time.monotonic()
        query = self._copy_query(who, source, sink, tmp)
        try:
            producer = kb.RateProducer(self.bootstrap, source, rate, seconds)
            # The first micro-batch (planning, Python workers starting) is the query's start, not its steady
            # state: records are produced once it is done (its duration is kept apart).
            deadline = started + 120
            while query.lastProgress is None and time.monotonic() < deadline:
                time.sleep(0.05)
            first_batch_s = time.monotonic() - started
            producer.start().join()
            found = sorted(kb.latencies(self.bootstrap, sink, producer.sent))
            progress = list(query.recentProgress)
        finally:
            query.stop()
        q = statistics.quantiles(found, n=100) if len(found) > 1 else found * 99
        batches = _batch_durations(progress)
        print(
            f"\n    {who:<5} at {rate:,}/s: p50 {q[49]:,.0f} ms, p99 {q[98]:,.0f} ms ({len(found)} of "
            f"{producer.sent} records; first batch done {first_batch_s:.1f} s after start); per batch (median of "
            f"{batches.pop('batches')}): " + ", ".join(f"{k} {v:,.0f}" for k, v in batches.items())
        )
        return {
            "records": producer.sent,
            "arrived": len(found),
            "p50_ms": q[49],
            "p99_ms": q[98],
            "first_batch_s": first_batch_s,
            "batch_ms": batches,
        }

    def _copy_query(self, who: str, source: str, sink: str, tmp: Path):
        checkpoint = str(tmp / uuid.uuid4().hex)
        if who == "ours":
            options = {"properties.bootstrap.servers": self.bootstrap, "key.fields": "id"}
            df = self.spark.readStream.format("upsert-kafka").options(topic=source, **options)
            df = df.option("scan.startup.mode", "earliest-offset").option("metadata.columns", "produced=timestamp")
            df = df.schema(kb.VALUE_DDL + ", _change_type STRING, produced TIMESTAMP").load()
            out = df.selectExpr("id", "unix_millis(produced) AS produced_ms")
            writer = out.writeStream.format("upsert-kafka").options(topic=sink, **options)
        else:
            df = self.spark.readStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
            df = df.option("subscribe", source).option("startingOffsets", "earliest").load()
            out = df.selectExpr("key", "to_json(named_struct('produced_ms', unix_millis(timestamp))) AS value")
            writer = out.writeStream.format("kafka").option("kafka.bootstrap.servers", self.bootstrap)
            writer = writer.option("topic", sink)
        return writer.option("checkpointLocation", checkpoint).start()

    def table_memory(self, keys: int, tmp: Path) -> None:
        """Peak Python worker memory of table-mode reads of `keys` distinct keys, with the default budget and a
        16 MB one, next to the live bytes of the largest partition: integration/bench_memory.py, in a Spark
        session of its own (a fresh Python worker per task, so that no read inherits another's memory)."""
        out = tmp / "memory.json"
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": self.bootstrap}
        command = [sys.executable, "-m", "integration.bench_memory", "--keys", str(keys), "--out", str(out)]
        subprocess.run(command, check=True, env=env)
        figures = json.loads(out.read_text())
        for name, value in figures.items():
            if isinstance(value, dict):
                self.results[f"memory: ours table mode, {name}"] = {
                    "distinct_keys": figures["keys"],
                    "largest_partition_live_mb": figures["largest_partition_live_mb"],
                    "baseline_worker_mb": figures["baseline_worker_mb"],
                    **value,
                }


def _batch_durations(progress: list) -> dict:
    """Median milliseconds per step of the micro-batches that had rows (Spark's durationMs)."""
    with_rows = [p for p in progress if p.numInputRows > 0]
    steps = ("triggerExecution", "latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")
    out: dict = {"batches": len(with_rows)}
    for step in steps:
        values = [p.durationMs.get(step, 0) for p in with_rows]
        if values:
            out[step] = statistics.median(values)
    rows = [p.numInputRows for p in with_rows]
    if rows:
        out["rows"] = statistics.median(rows)
    return out


def _change_column(mode: str) -> str:
    return ", _change_type STRING" if mode == "changelog" else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rate", type=int, nargs="+", default=[2000, 20000], help="records/s of the latency test(s)")
    parser.add_argument("--latency-seconds", type=float, default=20)
    parser.add_argument("--memory-keys", type=int, default=1_000_000)
    parser.add_argument("--partition-records", type=int, default=bench_partitions.RECORDS)
    parser.add_argument("--no-peer", action="store_true", help="partitions step: leave the JVM connector out")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--only",
        choices=STEPS,
        nargs="+",
        help="run only these steps (figures then go to benchmark-<steps>.json, the chart is left as it is)",
    )
    args = parser.parse_args(argv)

    from integration.bench_report import report

    with ExitStack() as stack:
        bootstrap, registry_url = _infrastructure(stack)
        spark = bench_session(
            "upsert-kafka-benchmark", **{"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "4"}
        )
        tmp = Path(stack.enter_context(_tempdir()))
        bench = Bench(spark, bootstrap, registry_url, args.records, args.repeat)
        print(f"{args.records:,} records, {kb.PARTITIONS} partitions, {args.repeat} runs each, local[2]")
        steps = args.only or STEPS
        topic = bench.json_reads() if "reads" in steps else None
        if "avro" in steps:
            bench.avro_reads()
        if "writes" in steps:
            bench.writes()
        if "streaming" in steps and topic is None:
            topic = bench.fresh_topic("json")
            kb.produce_parallel(bootstrap, topic, args.records)
        if "streaming" in steps:
            bench.streaming(topic, tmp)
        if "fixed" in steps:
            bench.fixed_costs(tmp)
        if "latency" in steps:
            for rate in args.rate:
                bench.latency(tmp, rate, args.latency_seconds)
            bench.python_floor(args.latency_seconds)
        if "memory" in steps:
            bench.table_memory(args.memory_keys, tmp)
        if "partitions" in steps:
            bench_partitions.run(bench, tmp, args.partition_records, peer=not args.no_peer)
        spark.stop()
    report(bench.results, args, args.out)
    return 0


def bench_session(app: str, master: str = "local[2]", **config: str):
    """The benchmarks' SparkSession: the JVM Kafka connector's jars (its peer), this connector registered."""
    from integration.spark_session import local_session

    return local_session(app, master, config, jars=ensure_spark_kafka_jars())


def _infrastructure(stack: ExitStack) -> tuple[str, str]:
    from integration.kafka import KafkaBroker
    from integration.registry import SchemaRegistryServer

    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        broker = KafkaBroker()
        broker.start()
        stack.callback(broker.stop)
        bootstrap = broker.bootstrap_servers
    registry_url = os.environ.get("SCHEMA_REGISTRY_URL")
    if not registry_url:
        registry = SchemaRegistryServer()
        registry.start()
        stack.callback(registry.stop)
        registry_url = registry.url
    return bootstrap, registry_url


def _tempdir():
    import tempfile

    return tempfile.TemporaryDirectory(prefix="upsert-kafka-bench-")


def checkpoint_dir(prefix: str):
    """A stateful query's checkpoint folder for a benchmark, removed afterwards as far as it can be: Spark's state
    store maintenance may still write a snapshot into it after the query stopped (a run failed on it once)."""
    import tempfile

    return tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
