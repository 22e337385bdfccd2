"""integration/bench_tables.py's figures from its timings: per side and step the median, records/s, the ratio to the
same side's read, the step's own cost per record, the slope over two sizes, state bytes per key, and Spark against
Flink. Test/dev tooling only: the product never imports this package."""

from __future__ import annotations

import statistics
from typing import Any

Runs = dict[str, dict[str, list[float]]]  # size suffix ("" the full size) -> step -> seconds per round


def records(step: str, keys: int) -> int:
    return 2 * keys if step == "join" else keys  # the join reads the orders and the keyed topic


def _us(seconds: float, records: int) -> float:
    return round(seconds / records * 1e6, 3)


def side(runs: dict[str, list[float]], keys: int) -> dict[str, dict[str, Any]]:
    """One side's steps at one size: median s, records/s, ratio to its read, own cost per record (us)."""
    read_s = statistics.median(runs["read"])
    out = {}
    for step, seconds in runs.items():
        n, median = records(step, keys), statistics.median(seconds)
        ratios = [(n / s) / (keys / r) for r, s in zip(runs["read"], seconds)]  # records/s against the read's
        out[step] = {
            "records": n,
            "median_s": round(median, 2),
            "records_per_s": round(n / median),
            "ratio_to_read": round(statistics.median(ratios), 3),
            "own_us_per_record": None if step == "read" else round(_us(median, n) - _us(read_s, keys), 3),
        }
    return out


def slope(big: dict[str, list[float]], small: dict[str, list[float]], keys: int, small_keys: int) -> dict[str, Any]:
    """Per record without the fixed costs: (median at keys - median at small_keys) / the records between; the read's
    slope subtracted gives the step's own; `fixed_s` the intercept (a query's or job's start)."""
    out: dict[str, Any] = {}
    for step in big:
        n, m = records(step, keys), records(step, small_keys)
        per = (statistics.median(big[step]) - statistics.median(small[step])) / (n - m)
        out[step] = {"us_per_record": round(per * 1e6, 3), "fixed_s": round(statistics.median(big[step]) - per * n, 2)}
    for step in out:
        out[step]["own_us_per_record"] = (
            None if step == "read" else round(out[step]["us_per_record"] - out["read"]["us_per_record"], 3)
        )
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    """a / b; None unless both are positive (an own cost at or below zero is noise: no ratio means anything)."""
    return round(a / b, 2) if a is not None and b is not None and a > 0 and b > 0 else None


def summarize(
    sizes: dict[str, int],
    spark: Runs,
    spark_state: dict[str, dict],
    flink: Runs | None,
    flink_state: dict[str, dict],
) -> dict[str, Any]:
    keys = sizes[""]
    small = next((s for s in sizes if s), None)
    out: dict[str, Any] = {"steps": side(spark[""], keys)}
    for step, entry in out["steps"].items():
        entry["state"] = spark_state.get(step, {})
        sst = entry["state"].get("sst_bytes") or []
        entry["bytes_per_key"] = round(sum(sst) / keys, 1) if sst else None
    if small:
        out["small"] = {"keys": sizes[small], "median_s": {"spark": _medians(spark[small])}}
        out["slope"] = {"spark": slope(spark[""], spark[small], keys, sizes[small])}
    if flink is None:
        return out
    out["flink"] = {"steps": side(flink[""], keys)}
    for step, entry in out["flink"]["steps"].items():
        state = flink_state.get(step) or {"not_measured": "no state: a stateless read"}
        entry["state"] = state
        entry["bytes_per_key"] = round(state["bytes"] / keys, 1) if "bytes" in state else None
    if small:
        out["small"]["median_s"]["flink"] = _medians(flink[small])
        out["slope"]["flink"] = slope(flink[""], flink[small], keys, sizes[small])
    comparison = {}
    for step in out["steps"]:
        s, f = out["steps"][step], out["flink"]["steps"][step]
        row: dict[str, Any] = {
            "spark_records_per_s": s["records_per_s"],
            "flink_records_per_s": f["records_per_s"],
            "spark_per_flink": _ratio(s["records_per_s"], f["records_per_s"]),
            "ratio_to_read": {"spark": s["ratio_to_read"], "flink": f["ratio_to_read"]},
            "own_us_per_record": _pair(s["own_us_per_record"], f["own_us_per_record"]),
            "bytes_per_key": {"spark": s["bytes_per_key"], "flink": f["bytes_per_key"]},
        }
        if small:
            sl = (out["slope"]["spark"][step]["own_us_per_record"], out["slope"]["flink"][step]["own_us_per_record"])
            row["slope_own_us_per_record"] = _pair(*sl)
        comparison[step] = row
    out["comparison"] = comparison
    return out


def _medians(runs: dict[str, list[float]]) -> dict[str, float]:
    return {step: round(statistics.median(seconds), 2) for step, seconds in runs.items()}


def _pair(spark: float | None, flink: float | None) -> dict[str, float | None]:
    return {"spark": spark, "flink": flink, "spark_per_flink": _ratio(spark, flink)}


def show(results: dict[str, Any]) -> None:
    """The figures as a table on stdout."""
    flink = results.get("flink", {}).get("steps")
    print(f"\n{results['keys']:,} keys, median of {results['repeat']}")
    header = f"{'step':14} {'spark s':>8} {'rec/s':>9} {'x read':>7} {'own us':>8} {'B/key':>6}"
    print(header + (f" | {'flink s':>8} {'rec/s':>9} {'x read':>7} {'own us':>8} {'B/key':>6}" if flink else ""))
    for step, s in results["steps"].items():
        line = _cells(s)
        if flink:
            line += " | " + _cells(flink[step])
        print(f"{step:14} {line}")
    for who, steps in results.get("slope", {}).items():
        own = ", ".join(f"{st} {v['own_us_per_record']} us" for st, v in steps.items() if v["own_us_per_record"])
        print(f"slope {who}: read {steps['read']['us_per_record']} us/record (fixed {steps['read']['fixed_s']} s); "
              f"own per record: {own}")  # fmt: skip


def _cells(f: dict[str, Any]) -> str:
    own = "-" if f["own_us_per_record"] is None else f"{f['own_us_per_record']:.1f}"
    per_key = "-" if f["bytes_per_key"] is None else f"{f['bytes_per_key']:.0f}"
    return f"{f['median_s']:8.1f} {f['records_per_s']:9,} {f['ratio_to_read']:7.3f} {own:>8} {per_key:>6}"
