"""The README's support table says what CI runs: the versions of integration/compat-pysparks get the
compatibility tests, and the package's pyspark range covers every line in the table."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def _table() -> dict[str, str]:
    """The support table's rows: pyspark line (e.g. '4.2') -> its CI cell."""
    section = (ROOT / "README.md").read_text().split("## Spark versions", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (4\.\d)\.x \| [^|]* \| ([^|]*) \|", section, re.M)
    return dict(rows)


def test_the_support_table_names_the_versions_ci_runs():
    compat = [line.strip() for line in (ROOT / "integration/compat-pysparks").read_text().splitlines()]
    compat = [v for v in compat if v and not v.startswith("#")]
    table = _table()
    assert sorted(table) == ["4.0", "4.1", "4.2", "4.3"]
    for version in compat:
        assert table[version.rsplit(".", 1)[0]] == f"{version}: compatibility tests"
    assert table["4.3"].endswith(": every test")
    assert "integration/compat-pysparks" in (ROOT / ".ci/run").read_text()


def test_the_package_accepts_every_line_of_the_table():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "pyspark>=4.0,<4.4" in dependencies
    assert any(d.startswith("confluent-kafka>=2.6,<3") for d in dependencies)
