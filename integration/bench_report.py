"""The benchmark's report: a table of records/s with the ratios ours/JVM and ours/ceiling, latency and memory
lines, the figures as JSON, and the chart integration/results/README.md shows (throughput, latency, table mode
memory, each with its ratios). The chart is drawn again from a saved run with

    integration/dev python -m integration.bench_report integration/results/benchmark.json
"""

from __future__ import annotations

import json
import platform
import time
from argparse import Namespace
from pathlib import Path

from integration.bench_partitions import print_table

# (ours, JVM peer, raw client ceiling) per comparison.
COMPARISONS = [
    (
        "read json (changelog)",
        "read: ours json changelog",
        "read: JVM kafka + from_json",
        "read: raw confluent-kafka (no decode)",
    ),
    (
        "read json (table)",
        "read: ours json table",
        "read: JVM kafka + from_json",
        "read: raw confluent-kafka (no decode)",
    ),
    (
        "read avro-confluent",
        "read: ours avro-confluent changelog",
        "read: JVM kafka + from_avro",
        "read: raw confluent-kafka avro (no decode)",
    ),
    ("write json", "write: ours json", "write: JVM kafka + to_json", "produce: raw confluent-kafka"),
    ("stream AvailableNow json", "stream AvailableNow: ours json", "stream AvailableNow: JVM kafka + from_json", None),
]


def _rate(results: dict, name: str | None) -> float | None:
    return results[name]["median"] if name in results else None


def report(results: dict, args: Namespace, out: Path) -> None:
    rows = comparisons(results)
    print(f"\n{'comparison':<26} {'ours rec/s':>12} {'JVM rec/s':>12} {'ceiling':>12} {'ours/JVM':>9} {'ours/ceil':>9}")
    for row in rows:
        print(
            f"{row['comparison']:<26} {row['ours']:>12,.0f} {_num(row['jvm']):>12} {_num(row['ceiling']):>12} "
            f"{_ratio(row['ours_per_jvm']):>9} {_ratio(row['ours_per_ceiling']):>9}"
        )
    for rate, ours, jvm in _latencies(results):
        print(
            f"latency at {rate:,}/s: ours p50 {ours['p50_ms']:,.0f} / p99 {ours['p99_ms']:,.0f} ms, JVM p50 "
            f"{jvm['p50_ms']:,.0f} / p99 {jvm['p99_ms']:,.0f} ms (ours/JVM p50 "
            f"{ours['p50_ms'] / jvm['p50_ms']:.2f}, p99 {ours['p99_ms'] / jvm['p99_ms']:.2f})"
        )
    for tasks, found in _floors(results):
        print(f"python source -> python sink, {tasks}: micro-batch floor {found.get('triggerExecution', 0):,.0f} ms")
    for what, ours, jvm in _fixed_costs(results):
        o, j = ours["records"] / ours["median"], jvm["records"] / jvm["median"]  # seconds (median)
        print(f"a query's fixed cost, {what} of {ours['records']:,} records: ours {o:.2f} s, JVM {j:.2f} s "
              f"(time ours/JVM {o / j:.2f})")  # fmt: skip
    for budget, mem in _memory(results):
        print(
            f"table mode, {mem['distinct_keys']:,} keys, {budget}: peak Python worker {mem['peak_worker_mb']:,.0f} MB, "
            f"growth {mem['growth_mb']:,.0f} MB ({mem['growth_mb'] / mem['largest_partition_live_mb']:.2f}x the "
            f"largest partition's {mem['largest_partition_live_mb']:,.0f} MB live)"
        )
    print_table(results)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.machine()}, local[2]", **vars(args)}
    meta["out"] = str(meta["out"])
    only = getattr(args, "only", None)
    name = f"benchmark-{'-'.join(only)}.json" if only else "benchmark.json"
    (out / name).write_text(json.dumps({"run": meta, "comparisons": rows, "raw": results}, indent=2))
    if only:  # a partial run leaves the full run's chart alone
        print(f"\nfigures: {out / name}")
        return
    chart(results, out / "benchmark.png", args.records)
    print(f"\nfigures: {out / name}, chart: {out / 'benchmark.png'}")


def comparisons(results: dict) -> list[dict]:
    rows = []
    for label, ours, jvm, ceiling in COMPARISONS:
        o, j, c = _rate(results, ours), _rate(results, jvm), _rate(results, ceiling)
        if o is not None:
            rows.append(
                {
                    "comparison": label,
                    "ours": o,
                    "jvm": j,
                    "ceiling": c,
                    "ours_per_jvm": o / j if j else None,
                    "ours_per_ceiling": o / c if c else None,
                }
            )
    return rows


def _latencies(results: dict) -> list[tuple[int, dict, dict]]:
    rates = sorted({v["rate"] for k, v in results.items() if k.startswith("latency: ") and "rate" in v})
    found = [(r, results.get(f"latency: ours at {r}"), results.get(f"latency: JVM at {r}")) for r in rates]
    return [(r, o, j) for r, o, j in found if o and j]


def _fixed_costs(results: dict) -> list[tuple[str, dict, dict]]:
    """(the query, ours, the JVM's) of the fixed-cost step, when it ran."""
    found = [(what, f"small {key}: ours json", f"small {key}: JVM kafka + from_json")
             for what, key in (("batch read", "read"), ("AvailableNow stream", "stream AvailableNow"))]  # fmt: skip
    return [(what, results[o], results[j]) for what, o, j in found if o in results and j in results]


def _floors(results: dict) -> list[tuple[str, dict]]:
    prefix = "latency floor: python source -> python sink, "
    return [(k[len(prefix) :], v) for k, v in results.items() if k.startswith(prefix)]


def _memory(results: dict) -> list[tuple[str, dict]]:
    """(the read, e.g. 'budget default', its figures) of the memory step."""
    prefix = "memory: ours table mode, "
    return [(k[len(prefix) :].split(": ", 1)[-1], v) for k, v in results.items() if k.startswith(prefix)]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


OURS, JVM, CEILING = "#2b7bba", "#e08a2c", "#9a9a9a"


def chart(results: dict, path: Path, records: int) -> None:
    """Three panels from one run: throughput (ours, the JVM connector, the raw client; ours/JVM over each pair),
    latency (p50 and p99 per rate, ours/JVM, the Python micro-batch floor) and table mode memory (growth of a
    Python worker per read, next to twice the largest partition's live bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    found = ((_throughput_panel, comparisons(results)), (_latency_panel, _latencies(results)),
             (_memory_panel, _memory(results)))  # fmt: skip
    panels = [(draw, data) for draw, data in found if data]  # a step not run draws no panel
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for (draw, data), ax in zip(panels, axes[0]):
        draw(ax, data, results, records)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _bars(ax, labels: list[str], series: list[tuple[str, str, list[float]]], ratios: list[str | None]) -> None:
    """Grouped bars, with a ratio written over each group."""
    width = 0.8 / len(series)
    for i, (name, color, ys) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, ys, width, label=name, color=color)
    for x, ratio in enumerate(ratios):
        if ratio:
            top = max(ys[x] for _, _, ys in series)
            ax.annotate(ratio, (x, top), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(range(len(labels)), labels, rotation=15, fontsize=8)
    ax.margins(y=0.15)
    ax.legend(fontsize=8)


def _throughput_panel(ax, rows: list[dict], results: dict, records: int) -> None:
    series = [
        ("upsert-kafka (ours)", OURS, [r["ours"] / 1e3 for r in rows]),
        ("Spark JVM kafka", JVM, [(r["jvm"] or 0) / 1e3 for r in rows]),
        ("raw confluent-kafka", CEILING, [(r["ceiling"] or 0) / 1e3 for r in rows]),
    ]
    ratios = [f"{r['ours_per_jvm']:.2f}x JVM" if r["ours_per_jvm"] else None for r in rows]
    _bars(ax, [r["comparison"] for r in rows], series, ratios)
    ax.set_ylabel("thousand records/s (median)")
    ax.set_title(f"Throughput: {records:,} records, 4 partitions", fontsize=10)


def _latency_panel(ax, found: list[tuple[int, dict, dict]], results: dict, records: int) -> None:
    labels, ours, jvm, ratios = [], [], [], []
    for rate, o, j in found:
        for q in ("p50", "p99"):
            labels.append(f"{rate:,}/s {q}")
            ours.append(o[f"{q}_ms"])
            jvm.append(j[f"{q}_ms"])
            ratios.append(f"{o[f'{q}_ms'] / j[f'{q}_ms']:.2f}x JVM")
    _bars(ax, labels, [("upsert-kafka (ours)", OURS, ours), ("Spark JVM kafka", JVM, jvm)], ratios)
    for tasks, floor in _floors(results)[:1]:
        ms = floor.get("triggerExecution", 0)
        ax.axhline(ms, color="black", linestyle=":", linewidth=1)
        ax.annotate(f"Python source -> sink micro-batch floor ({tasks}): {ms:,.0f} ms", (-0.4, ms), fontsize=7,
                    xytext=(0, 3), textcoords="offset points")  # fmt: skip
    ax.set_ylabel("ms from produce to the copy's append (median of runs)")
    ax.set_title("Latency: topic -> topic copy, default trigger", fontsize=10)


def _memory_panel(ax, found: list[tuple[str, dict]], results: dict, records: int) -> None:
    live = found[0][1]["largest_partition_live_mb"]
    growth = [m["growth_mb"] for _, m in found]
    ratios = [f"{g / live:.2f}x live" for g in growth]
    labels = [b.replace("budget changelog", "changelog (floor)").replace("budget ", "table, budget ") for b, _ in found]
    _bars(ax, labels, [("peak worker growth (ours)", OURS, growth)], ratios)
    ax.axhline(2 * live, color="black", linestyle=":", linewidth=1)
    ax.annotate(f"2x live bytes of the largest partition ({2 * live:,.0f} MB)", (-0.4, 2 * live), fontsize=7,
                xytext=(0, 3), textcoords="offset points")  # fmt: skip
    ax.set_ylabel("MB over a tiny read's worker")
    ax.set_title(f"Table mode memory: {found[0][1]['distinct_keys']:,} distinct keys", fontsize=10)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Draw the benchmark chart again from a saved run")
    parser.add_argument("figures", type=Path, help="a full run's benchmark.json")
    parser.add_argument("--chart", type=Path, help="where to write the PNG (default: next to the figures)")
    args = parser.parse_args(argv)
    saved = json.loads(args.figures.read_text())
    chart(saved["raw"], args.chart or args.figures.with_name("benchmark.png"), saved["run"]["records"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
