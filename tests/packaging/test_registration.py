"""Both ways to make format("upsert-kafka") known to Spark: explicit register, and pip install alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

from pyspark_upsert_kafka import UpsertKafkaDataSource

ROOT = Path(__file__).resolve().parents[2]


def test_explicit_register_makes_the_format_usable_under_any_case(spark, new_topic, options):
    spark.dataSource.register(UpsertKafkaDataSource)
    opts = options(new_topic())
    spark.createDataFrame([(1, "a")], "id INT, name STRING").write.format("Upsert-Kafka").options(**opts).mode(
        "append"
    ).save()
    rows = spark.read.format("UPSERT-KAFKA").options(**opts).schema("id INT, name STRING").load().collect()
    assert [tuple(r) for r in rows] == [(1, "a")]


def test_installed_wheel_registers_the_format_with_no_user_code(bootstrap, new_topic, tmp_path):
    """Build the wheel, pip-install it into a fresh interpreter that cannot see this source tree, and use
    format("upsert-kafka") there without registering anything. The wheel is typed (PEP 561's py.typed)."""
    wheels, site = tmp_path / "wheels", tmp_path / "venv-site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", wheels, ROOT], check=True)
    subprocess.run([*pip, "install", "--no-deps", "--target", site, *wheels.glob("*.whl")], check=True)
    # PEP 561: the wheel carries the marker that lets users' type checkers read the package's hints
    assert (site / "pyspark_upsert_kafka" / "py.typed").is_file()

    # A venv whose only view of our packages is the installed wheel: its site dir (.pth processed, as
    # after `pip install`) plus the test venv's dependencies as a plain path (whose .pth files, such
    # as our editable install's, are not processed).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    venv_site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (venv_site / "zz-deps.pth").write_text(f"{site}\n{sysconfig.get_paths()['purelib']}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    out = _format_used_without_registering(python, env, tmp_path, bootstrap, new_topic())
    assert out["module"].startswith(str(site)), "the installed wheel, not the source tree"


def test_editable_install_registers_the_format_outside_the_repository(bootstrap, new_topic, tmp_path):
    """integration/dev's editable install, used from a directory outside the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = _format_used_without_registering(Path(sys.executable), env, tmp_path, bootstrap, new_topic())
    assert out["module"].startswith(str(ROOT)), "the editable install: the sources of this tree"


def _format_used_without_registering(python: Path, env: dict, cwd: Path, bootstrap: str, topic: str) -> dict:
    """In a fresh interpreter: neither `connector` nor `formats` is importable, and format("upsert-kafka") writes
    and reads without any user code registering it. Returns where pyspark_upsert_kafka was imported from."""
    script = textwrap.dedent(
        f"""
        import importlib.util, json, pyspark_upsert_kafka
        assert importlib.util.find_spec("connector") is None and importlib.util.find_spec("formats") is None
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        opts = {{"topic": "{topic}", "properties.bootstrap.servers": "{bootstrap}", "key.fields": "id"}}
        spark.createDataFrame([(1, "auto")], "id INT, name STRING").write.format("upsert-kafka") \\
            .options(**opts).mode("append").save()
        rows = spark.read.format("upsert-kafka").options(**opts).schema("id INT, name STRING").load().collect()
        print(json.dumps({{"rows": [list(r) for r in rows], "module": pyspark_upsert_kafka.__file__}}))
        """
    )
    result = subprocess.run([python, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["rows"] == [[1, "auto"]]
    return out
