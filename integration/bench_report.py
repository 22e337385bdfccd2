"""The benchmark's report: a table of records/s with the ratios ours/JVM and ours/ceiling, the figures as
JSON, and a bar chart PNG (the one the README shows)."""

from __future__ import annotations

import json
import platform
import time
from argparse import Namespace
from pathlib import Path

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
    rows = []
    print(f"\n{'comparison':<26} {'ours rec/s':>12} {'JVM rec/s':>12} {'ceiling':>12} {'ours/JVM':>9} {'ours/ceil':>9}")
    for label, ours, jvm, ceiling in COMPARISONS:
        o, j, c = _rate(results, ours), _rate(results, jvm), _rate(results, ceiling)
        if o is None:
            continue
        row = {"comparison": label, "ours": o, "jvm": j, "ceiling": c}
        row["ours_per_jvm"] = o / j if j else None
        row["ours_per_ceiling"] = o / c if c else None
        rows.append(row)
        print(
            f"{label:<26} {o:>12,.0f} {_num(j):>12} {_num(c):>12} {_ratio(row['ours_per_jvm']):>9} "
            f"{_ratio(row['ours_per_ceiling']):>9}"
        )
    for rate in sorted({v["rate"] for k, v in results.items() if k.startswith("latency: ")}):
        ours, jvm = results.get(f"latency: ours at {rate}"), results.get(f"latency: JVM at {rate}")
        if ours and jvm:
            print(
                f"latency at {rate:,}/s: ours p50 {ours['p50_ms']:,.0f} / p99 {ours['p99_ms']:,.0f} ms, JVM p50 "
                f"{jvm['p50_ms']:,.0f} / p99 {jvm['p99_ms']:,.0f} ms (ours/JVM p50 "
                f"{ours['p50_ms'] / jvm['p50_ms']:.2f}, p99 {ours['p99_ms'] / jvm['p99_ms']:.2f})"
            )
    for name, found in results.items():
        if name.startswith("latency floor: "):
            print(f"{name[len('latency floor: ') :]}: micro-batch floor {found.get('triggerExecution', 0):,.0f} ms")
    mem = results.get("memory: ours table mode")
    if mem:
        print(f"table mode, {mem['distinct_keys']:,} keys: peak Python worker {mem['peak_worker_mb']:,.0f} MB")
    out.mkdir(parents=True, exist_ok=True)
    meta = {"when": time.strftime("%Y-%m-%d %H:%M"), "machine": f"{platform.machine()}, local[2]", **vars(args)}
    meta["out"] = str(meta["out"])
    only = getattr(args, "only", None)
    name = f"benchmark-{'-'.join(only)}.json" if only else "benchmark.json"
    (out / name).write_text(json.dumps({"run": meta, "comparisons": rows, "raw": results}, indent=2))
    if only:  # a partial run leaves the full run's chart alone
        print(f"\nfigures: {out / name}")
        return
    _chart(rows, out / "benchmark.png", args.records)
    print(f"\nfigures: {out / name}, chart: {out / 'benchmark.png'}")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _chart(rows: list[dict], path: Path, records: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["comparison"] for r in rows]
    series = [("ours", "#2b7bba"), ("jvm", "#e08a2c"), ("ceiling", "#9a9a9a")]
    width = 0.27
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for i, (key, color) in enumerate(series):
        xs = [x + (i - 1) * width for x in range(len(rows))]
        ys = [(r[key] or 0) / 1e6 for r in rows]
        name = {"ours": "upsert-kafka (ours)", "jvm": "Spark JVM kafka", "ceiling": "raw confluent-kafka"}[key]
        ax.bar(xs, ys, width, label=name, color=color)
    ax.set_xticks(range(len(rows)), labels, rotation=12)
    ax.set_ylabel("million records/s (median)")
    ax.set_title(f"{records:,} records, 4 partitions, local[2] on 2 cores")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
