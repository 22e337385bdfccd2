"""Counts the cases of the generated bad-input suite (test_bad_options.py, test_bad_format_options.py,
test_bad_schemas.py, test_bad_types.py) for the session's summary line."""

from __future__ import annotations

_SUITE = ("test_bad_options.py::", "test_bad_format_options.py::", "test_bad_schemas.py::", "test_bad_types.py::")
_counts = {"passed": 0, "failed": 0, "skipped": 0, "spark": 0, "seconds": 0.0}


def pytest_runtest_logreport(report) -> None:
    if not any(s in report.nodeid for s in _SUITE) or (report.when != "call" and not report.skipped):
        return
    _counts[report.outcome] += 1
    _counts["seconds"] += report.duration
    if "through_spark" in report.nodeid:
        _counts["spark"] += 1


def pytest_terminal_summary(terminalreporter) -> None:
    tried = _counts["passed"] + _counts["failed"]
    if tried:
        terminalreporter.write_line(
            f"bad-input suite: {tried} cases tried ({_counts['spark']} through Spark, the rest on the driver's "
            f"spec building alone): {_counts['passed']} passed, {_counts['failed']} failed, "
            f"{_counts['skipped']} skipped; {_counts['seconds']:.1f} s in the cases"
        )
