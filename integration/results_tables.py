"""The performance page's tables (integration/results/README.md), read from the results files the benchmarks
wrote into integration/results/, so that a figure on the page is the one a run measured. The page places them
with integration/readme_options.py (`integration/dev python -m integration.readme_options`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from integration.bench_report import _fixed_costs, _floors, _latencies, _memory, _num, _ratio
from integration.bench_tables_bounds import ONE_BATCH_STEPS

RESULTS = Path(__file__).resolve().parent / "results"
FULL_RUN = "benchmark.json"
STEPS = ("triggerExecution", "walCommit", "addBatch", "commitOffsets")  # a micro-batch's durations, as Spark reports


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def run_line() -> str:
    """Which run the full run's figures are from."""
    run = _load(FULL_RUN)["run"]
    return (
        f"Full run of {run['when']} on {run['machine']}: {run['records']:,} records, median of {run['repeat']} runs "
        f"each (`integration/results/{FULL_RUN}`)."
    )


def throughput_table() -> str:
    rows = []
    for row in _load(FULL_RUN)["comparisons"]:
        produce = " (produce)" if row["comparison"].startswith("write") and row["ceiling"] else ""
        rows.append(
            [
                row["comparison"],
                _num(row["ours"]),
                _num(row["jvm"]),
                _num(row["ceiling"]) + produce,
                _ratio(row["ours_per_jvm"]),
                _ratio(row["ours_per_ceiling"]),
            ]
        )
    return _table(["comparison", "ours rec/s", "JVM rec/s", "raw client", "ours/JVM", "ours/raw"], rows)


def fixed_cost_table() -> str:
    rows = []
    for what, ours, jvm in _fixed_costs(_load(FULL_RUN)["raw"]):
        o, j = ours["records"] / ours["median"], jvm["records"] / jvm["median"]
        rows.append([f"{what} ({ours['records']:,} records)", f"{o:.2f} s", f"{j:.2f} s", _ratio(o / j)])
    return _table(["a query's fixed cost", "ours", "JVM", "ours/JVM (time)"], rows)


def lookup_table() -> str:
    figures = _load("benchmark-lookup.json")
    rows = [[query, f"{seconds:.2f}"] for query, seconds in figures["seconds"].items()]
    speedups = [
        f"{value:.1f}x {what[len('look-up speed-up ') :]}" for what, value in figures.items() if "speed-up" in what
    ]
    return (
        f"{figures['records']:,} records over {figures['partitions']} partitions "
        f"(`integration/results/benchmark-lookup.json`):\n\n"
        + _table(["query", "seconds"], rows)
        + f"\n\nThe look-up with pushdown is faster: {', '.join(speedups)}."
    )


def _memory_runs() -> list[tuple[str, float, list[tuple[str, dict]]]]:
    """(results file, largest partition's live MB, [(read, figures)]) of every memory run."""
    full = [(f"after: {read}", figures) for read, figures in _memory(_load(FULL_RUN)["raw"])]
    runs = [(FULL_RUN, full[0][1]["largest_partition_live_mb"] if full else 0.0, full)]
    for name in sorted(p.name for p in RESULTS.glob("memory*.json")):
        figures = _load(name)
        reads = [(k, v | {"distinct_keys": figures["keys"]}) for k, v in figures.items() if ": " in k]
        runs.append((name, figures["largest_partition_live_mb"], reads))
    return [run for run in runs if run[2]]


def _read_label(read: str) -> str:
    """'after: budget 16mb' -> 'table, 16 MB budget'; the code before the bounded reducer held a dict of keys."""
    code, budget = read.split(": ", 1)[0], read.split(": ", 1)[1].removeprefix("budget ")
    if budget == "changelog":
        return "changelog (the floor)"
    if code == "before":
        return "table, before (a Python dict of every key)"
    return "table, default budget" if budget == "default" else f"table, {budget.replace('mb', ' MB')} budget"


def memory_table() -> str:
    rows = []
    for name, live, reads in _memory_runs():
        floor = next((f for read, f in reads if read.endswith("budget changelog")), None)
        for read, f in reads:
            over = "-" if floor is None or f is floor else f"{f['peak_worker_mb'] - floor['peak_worker_mb']:.0f} MB"
            keys = f"{f['distinct_keys'] / 1e6:g} M ({live:.0f} MB)"
            growth = f"{f['growth_mb']:.0f} MB ({f['growth_per_live']:.2f}x live)"
            rows.append(
                [keys, _read_label(read), f"{f['peak_worker_mb']:.0f}", growth, over, f"{f['seconds']:.1f}", name]
            )
    header = ["keys (largest partition's live bytes)", "read", "peak worker MB", "growth over baseline"]
    return _table([*header, "over the changelog floor", "seconds", "figures from"], rows)


def _latency_runs() -> list[tuple[str, dict]]:
    """(results file, its raw figures) of every run that measured latency, the full run first."""
    names = [FULL_RUN, *sorted(p.name for p in RESULTS.glob("benchmark-latency*.json"))]
    return [(name, _load(name)) for name in names]


def latency_table() -> str:
    rows = []
    for name, figures in _latency_runs():
        for rate, ours, jvm in _latencies(figures["raw"]):
            rows.append(
                [
                    f"{figures['run']['when']} (`{name}`)",
                    f"{rate:,} rec/s",
                    f"{ours['p50_ms']:,.0f} / {ours['p99_ms']:,.0f} ms",
                    f"{jvm['p50_ms']:,.0f} / {jvm['p99_ms']:,.0f} ms",
                    _ratio(ours["p50_ms"] / jvm["p50_ms"]),
                    _ratio(ours["p99_ms"] / jvm["p99_ms"]),
                ]
            )
    header = ["run (figures from)", "rate", "ours p50 / p99", "JVM p50 / p99", "ours/JVM p50", "ours/JVM p99"]
    return _table(header, rows)


def _span(values: list[float]) -> str:
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return f"{low} ms" if low == high else f"{low}\u2013{high} ms"  # an en dash, as the page writes ranges


def steps_table() -> str:
    """A micro-batch's steps (medians of each latency run, over every rate) next to the do-nothing floor's."""
    raw = _load(FULL_RUN)["raw"]
    found = _latencies(raw)
    batches = {
        side: [run["batch_ms"] for _, *pair in found for run in pair[i]["runs"]]
        for i, side in enumerate(("ours", "JVM"))
    }
    floors = _floors(raw)
    tasks = [f"{f['tasks']} task" + ("s" if f["tasks"] > 1 else "") for _, f in floors]
    header = ["step", "ours", *(f"do-nothing Python floor ({t})" for t in tasks), "JVM connector"]
    rows = [
        [
            f"`{step}`",
            _span([b[step] for b in batches["ours"]]),
            *(_span([f[step]]) for _, f in floors),
            _span([b[step] for b in batches["JVM"]]),
        ]
        for step in STEPS
    ]
    return _table(header, rows)


def partitions_table() -> str:
    """The same 100,000 records on 4 to 512 partitions (and skewed), before and after reads were planned by
    records: seconds, ours and the JVM connector's, and ours over the 4-partition time."""
    from integration.bench_partitions import table  # the benchmark step's own reading of its figures

    rows = []
    for label, name in (("before", "benchmark-partitions-before.json"), ("after", "benchmark-partitions.json")):
        found = table(_load(name)["raw"])
        base = found[0]
        for row in found:
            cells = [label, row["shape"]]
            for what in ("batch", "available_now"):
                ours, jvm = row[f"ours_{what}"], row[f"jvm_{what}"]
                cells += [f"{ours:.2f} s", f"{jvm:.2f} s", f"{ours / base[f'ours_{what}']:.2f}"]
            rows.append(cells)
    header = ["run", "partitions", "ours batch", "JVM batch", "x 4 partitions", "ours AvailableNow", "JVM AvailableNow"]
    return _table([*header, "x 4 partitions"], rows)


def formats_table() -> str:
    """The codecs alone (integration/bench_formats.py), each next to its bare library loop and to json."""
    figures = _load("formats.json")
    run = figures["run"]
    json_row = next(f for f in figures["formats"] if f["format"] == "json")
    rows = [
        [
            f"{f['format']} ({f['bytes_per_record']:.0f})",
            _num(f["decode"]),
            _ratio(f["decode_ratio"]),
            _ratio(f["decode"] / json_row["decode"]),
            _num(f["encode"]),
            _ratio(f["encode_ratio"]),
            _ratio(f["encode"] / json_row["encode"]),
        ]
        for f in figures["formats"]
    ]
    header = ["format (bytes per record)", "decode rec/s", "/ bare", "/ json", "encode rec/s", "/ bare", "/ json"]
    return (
        f"Run of {run['when']} ({run['machine']}, one core): {run['records']:,} records, median of {run['repeat']} "
        f"(`integration/results/formats.json`):\n\n" + _table(header, rows)
    )


def tables_table() -> str:
    """Tables in streams (integration/bench_tables.py): each step next to the plain changelog read of the same run;
    with Flink's side when the run had it (Flink 2.2.1's own queries on the same topics, interleaved)."""
    figures = _load("benchmark-tables.json")
    run, keys = figures["run"], figures["keys"]
    if "steps" in figures.get("flink", {}):
        return _tables_side_by_side(figures)
    rows = []
    for step, f in figures["steps"].items():
        state = f["state"]
        per_key = f"{sum(state['sst_bytes']) / keys:.0f}" if state["sst_bytes"] else "-"
        rows.append([step, f"{f['median_s']:.1f} s", _num(f["records_per_s"]), _ratio(f["ratio_to_read"]), per_key])
    header = ["step", "wall", "records/s", "x read", "state bytes per key"]
    return (
        f"Run of {run['when']} ({run['machine']}, local[2]): {keys:,} keys, one record each, median of "
        f"{figures['repeat']} (`integration/results/benchmark-tables.json`):\n\n" + _table(header, rows)
    )


def _tables_side_by_side(figures: dict) -> str:
    run, keys, flink = figures["run"], figures["keys"], figures["flink"]
    slope = figures.get("slope", {})

    def cells(f: dict, own_slope: float | None) -> list[str]:
        own = "-" if f["own_us_per_record"] is None else f"{f['own_us_per_record']:.1f}"
        if own_slope is not None:
            own += f" ({own_slope:.1f})"
        per_key = "-" if f["bytes_per_key"] is None else f"{f['bytes_per_key']:.0f}"
        return [f"{f['median_s']:.1f} s", _num(f["records_per_s"]), _ratio(f["ratio_to_read"]), own, per_key]

    rows = []
    for step, f in figures["steps"].items():
        ours = slope.get("spark", {}).get(step, {}).get("own_us_per_record")
        theirs = slope.get("flink", {}).get(step, {}).get("own_us_per_record")
        peer = flink["steps"][step]
        rows.append([step, *cells(f, ours), *cells(peer, theirs), _ratio(f["records_per_s"] / peer["records_per_s"])])
    side = ["wall", "records/s", "x read", "own us/record", "state B/key"]
    header = ["step", *(f"Spark {h}" for h in side), *(f"Flink {h}" for h in side), "Spark/Flink records/s"]
    small = f", and {figures['small']['keys']:,} keys for the slope (in brackets)" if "small" in figures else ""
    return (
        f"Run of {run['when']} ({run['machine']}): Spark local[2] and Flink {flink['settings']['version']} "
        f"(parallelism {flink['settings']['parallelism']}) side by side, {keys:,} keys, one record each{small}; "
        f"median of {figures['repeat']} (`integration/results/benchmark-tables.json`):\n\n" + _table(header, rows)
    )


def tables_steady_table() -> str:
    """Tables at stream cadence (integration/bench_tables_steady.py): freshness per pipeline and rate, and the cost
    per record and checkpoint growth per update at micro-batches of 2,000 records, next to Spark's JVM stateful
    aggregation; figures of its partial runs (`--only cost`, `--only default`) merged in when present, and a run of
    `--only freshness` with other pipelines (aggregate, join) shown as its own table."""
    figures = _load("benchmark-tables-steady.json")
    for part in ("cost", "helpers", "default", "bounds"):
        if (RESULTS / f"benchmark-tables-steady-{part}.json").exists():
            extra = _load(f"benchmark-tables-steady-{part}.json")
            kept = ("cost:", "helpers:", "default", "bounds:")
            figures |= {k: v for k, v in extra.items() if k.startswith(kept) and k not in figures}
    fresh = _fresh_rows(figures)
    sizes = sorted(int(n.split()[1]) for n in figures if n.startswith("cost: "))
    costs = [_cost_row(keys, figures[f"cost: {keys} keys"]) for keys in sizes]
    run = figures.get("run")
    fresh_header = ["rate", "pipeline", "freshness p50 ms", "p99 ms", "micro-batch ms (median)"]
    cost_header = ["keys", "read ms", "normalize ms", "normalize own us/record", "JVM latest row ms",
                   "JVM own us/record", "normalize checkpoint B/update", "JVM checkpoint B/update",
                   "normalize changelogs B/update", "JVM changelogs B/update"]  # fmt: skip
    text = (
        (f"Run of {run['when']} ({run['machine']}, " if run else "A run (")
        + f"Spark local[2], {figures['partitions']} shuffle partitions, {_checkpointing(figures)}): "
        f"{figures['keys']:,} keys preloaded, "
        f"updates for {figures['seconds']:.0f} s (`integration/results/benchmark-tables-steady.json`):\n\n"
        + _table(fresh_header, fresh)
        + "\n\nMicro-batches of 2,000 updates, after the keys were read in one micro-batch:\n\n"
        + _table(cost_header, costs)
    )
    text += _freshness_part("freshness-warm", "The same pipelines after a warm-up", "`--warm-s`")
    text += _freshness_part(
        "jvm-latest",
        "Spark's JVM stateful aggregation in normalize's place",
        "`--only freshness --warm-s 10 --pipelines plain,jvm-latest,normalize`: the latest row per key in update "
        "mode, written through foreachBatch, since Spark's Python sinks take no update mode",
    )
    text += _freshness_part(
        "jvm-dedup",
        "Spark's JVM streaming deduplication in normalize's place",
        "`--only freshness --warm-s 10 --pipelines plain,jvm-dedup,floor-rows`: on (id, offset), a state read and "
        "write per update like normalize's, in append mode straight into the upsert-kafka sink",
    )
    helpers = sorted(int(n.split()[1]) for n in figures if n.startswith("helpers: "))
    if helpers:
        helper_header = ["keys", "normalize ms", "+ aggregate ms", "aggregate own us/record",
                         "aggregate checkpoint B/update", "aggregate changelogs B/update", "read ms",
                         "latest-value join ms", "join own us/record", "join checkpoint B/update",
                         "join changelogs B/update"]  # fmt: skip
        helpers_file = RESULTS / "benchmark-tables-steady-helpers.json"
        when = _load(helpers_file.name)["run"]["when"] if helpers_file.exists() else "an earlier run"
        text += (
            "\n\nThe other helpers, micro-batches of 2,000 updates: aggregate_changelog behind normalized_changelog "
            "(a group per key: as many groups as keys), temporal_join's latest-value join of the updates (a second "
            f"read of the topic) with the table (`benchmark-tables-steady-helpers.json`, run of {when}, "
            f"{_checkpointing(_load(helpers_file.name))}):\n\n"
            + _table(helper_header, [_helper_row(keys, figures[f"helpers: {keys} keys"]) for keys in helpers])
        )
    text += _freshness_part(
        "freshness",
        "Freshness of the other helpers",
        "`--pipelines`): aggregate_changelog behind normalized_changelog "
        "(a group per key), temporal_join's latest-value join of a second read of the topic with the normalized table, "
        "next to the plain and normalize pipelines of the same run and the floor (normalize's Python stateful operator "
        "keeping nothing: the same groups and columns, no state call",
    )
    default = next((f for n, f in figures.items() if n.startswith("default")), None)
    if default:
        unset = ", ".join(f"{k.split(': ')[1]} {v.split(':')[0]}" for k, v in default.items() if k.startswith("unset"))
        text += (
            f"\n\nSpark's default shuffle partitions, 20,000 keys: left unset, {unset}; normalize with 200 set "
            f"explicitly, {default['set_200_batch_ms_p50']:,.0f} ms a micro-batch of 2,000 updates (run of "
            f"{_load('benchmark-tables-steady-default.json')['run']['when']})."
        )
    return text + _bounds_text(figures)


def _freshness_part(part: str, title: str, what: str) -> str:
    """A `--only freshness` run's own table (`benchmark-tables-steady-{part}.json`), when there is one."""
    name = f"benchmark-tables-steady-{part}.json"
    if not (RESULTS / name).exists():
        return ""
    run = _load(name)
    warm = f"updates for {run['warm_s']:.0f} s not measured, then " if run.get("warm_s") else "updates for "
    return (
        f"\n\n{title}, run of {run['run']['when']} ({run['keys']:,} keys preloaded, {warm}{run['seconds']:.0f} s "
        f"measured, {_checkpointing(run)}, `{name}`, {what}):\n\n"
        + _table(["rate", "pipeline", "freshness p50 ms", "p99 ms", "micro-batch ms (median)"], _fresh_rows(run))
    )


def _checkpointing(figures: dict) -> str:
    """A run's RocksDB checkpointing: changelogs (the helpers' choice) or Spark's default, from before that choice."""
    if figures.get("changelog_checkpointing") == "true":
        return "RocksDB changelog checkpointing"
    return "RocksDB snapshot checkpointing, Spark's default: a run before the helpers chose changelogs"


def _bounds_text(figures: dict) -> str:
    """What the operator lets normalize reach at best (integration/bench_tables_bounds.py): worker affinity and one
    big micro-batch with its CPU seconds."""
    affinity = figures.get("bounds: worker affinity")
    batch = next(((n, f) for n, f in figures.items() if n.startswith("bounds: one batch")), None)
    if not affinity or not batch:
        return ""
    name, one = batch
    keys = int(name.split(" of ")[1].split()[0])
    steps = [step for step in ONE_BATCH_STEPS if step in one]  # a run from before a step was added has fewer
    rows = [[step, f"{one[step]['wall_s']:.1f}", f"{one[step]['cpu_s']:.1f}"] for step in steps]
    return (
        f"\n\nThe operator's bounds (`--only bounds`): a state group ran in the Python worker of its previous "
        f"micro-batch {affinity['kept_share']:.0%} of the time ({affinity['micro_batches']} micro-batches, "
        f"{affinity['workers']} workers). One micro-batch of {keys:,} keys ({one['partitions']} shuffle partitions, "
        "medians of 3), wall seconds and the machine's CPU seconds:\n\n"
        + _table(["step", "wall s", "CPU s (all processes)"], rows)
    )


def _fresh_rows(figures: dict) -> list[list[str]]:
    rows = []
    for name, f in figures.items():
        if name.startswith("freshness: "):
            who, rate = name.removeprefix("freshness: ").split(" at ")
            batch = f.get("batch_ms", f.get("batch_ms_p50"))
            shown = "-" if batch is None else f"{batch:,.0f}"
            rows.append([f"{int(rate):,}/s", who, f"{f['p50_ms']:,.0f}", f"{f['p99_ms']:,.0f}", shown])
    return rows


def _cost_row(keys: int, f: dict) -> list[str]:
    ms = [f[step]["batch_ms_p50"] for step in ("read", "normalize")]
    return [
        f"{keys:,}",
        *(f"{m:,.0f}" for m in ms),
        f"{f['normalize_own_us_per_record']:,.0f}",
        f"{f['jvm']['batch_ms_p50']:,.0f}",
        f"{f['jvm_own_us_per_record']:,.0f}",
        f"{f['normalize']['bytes_per_update']:,.0f}",
        f"{f['jvm']['bytes_per_update']:,.0f}",
        *(_changelogs(f[step]) for step in ("normalize", "jvm")),
    ]


def _changelogs(step: dict) -> str:
    """What the commits wrote with RocksDB's changelog checkpointing ("-": a run without that figure)."""
    return "-" if "changelog_bytes_per_update" not in step else f"{step['changelog_bytes_per_update']:,.0f}"


def _helper_row(keys: int, f: dict) -> list[str]:
    return [
        f"{keys:,}",
        f"{f['normalize']['batch_ms_p50']:,.0f}",
        f"{f['aggregate']['batch_ms_p50']:,.0f}",
        f"{f['aggregate_own_us_per_record']:,.0f}",
        f"{f['aggregate']['bytes_per_update']:,.0f}",
        _changelogs(f["aggregate"]),
        f"{f['read']['batch_ms_p50']:,.0f}",
        f"{f['join']['batch_ms_p50']:,.0f}",
        f"{f['join_own_us_per_record']:,.0f}",
        f"{f['join']['bytes_per_update']:,.0f}",
        _changelogs(f["join"]),
    ]


def versions_table() -> str:
    """What ordering by version costs (integration/bench_versions.py): each pair, its medians and its ratio."""
    f = _load("benchmark-versions.json")
    rows = [
        [step, f"{f[step]['median_s']:,.1f}", f"{f[step + ' by version']['median_s']:,.1f}",
         f"x{f[step + ': by version / plain']:.2f}"]
        for step in ("table read", "normalize")
    ]  # fmt: skip
    return (
        f"Run of {f['run']['when']} ({f['run']['machine']}): {f['keys']:,} keys, two records each, medians of "
        f"{f['repeat']} rounds, each pair's sides in turn first (`integration/results/benchmark-versions.json`):\n\n"
        + _table(["step", "plain s", "by version s", "by version / plain (median of rounds)"], rows)
    )


BLOCKS: dict[str, Callable[[], str]] = {
    "run": run_line,
    "throughput": throughput_table,
    "fixed-cost": fixed_cost_table,
    "partitions": partitions_table,
    "lookup": lookup_table,
    "memory": memory_table,
    "latency": latency_table,
    "latency-steps": steps_table,
    "formats": formats_table,
    "tables": tables_table,
    "tables-steady": tables_steady_table,
    "versions": versions_table,
}
