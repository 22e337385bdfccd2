"""`spark-submit --py-files` on a real standalone cluster: Spark's `local-cluster[2,1,1024]` master runs a
standalone master and two workers inside the driver's JVM and launches two executors as separate JVMs, whose
Python has the dependencies but not this project; the project reaches the driver and the executors only as the
wheel renamed to a zip, the way the README says. (Separate master and worker daemons would prove nothing more
here and cost three JVM starts.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent


def deps_only_python(tmp_path: Path) -> Path:
    """A venv that sees the test venv's packages as a plain path (whose .pth files, such as the editable
    install of this project, are not processed): the dependencies, without pyspark_upsert_kafka."""
    venv = tmp_path / "deps-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = subprocess.check_output(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    )
    Path(site.strip(), "zz-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    check = subprocess.run([python, "-c", "import pyspark_upsert_kafka"], capture_output=True)
    assert check.returncode != 0, "the cluster's Python must not have the project"
    return python


APP = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    from pyspark_upsert_kafka import UpsertKafkaDataSource

    bootstrap, topic = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.appName("py-files").getOrCreate()
    spark.dataSource.register(UpsertKafkaDataSource)
    opts = {"topic": topic, "properties.bootstrap.servers": bootstrap, "key.fields": "id"}
    rows = spark.range(0, 2000, 1, numPartitions=4).selectExpr("cast(id as int) as id", "concat('n', id) as name")
    rows.write.format("upsert-kafka").options(**opts).mode("append").save()
    back = spark.read.format("upsert-kafka").options(**opts).schema("id INT, name STRING").load()
    print(json.dumps({"count": back.count(), "distinct": back.select("id").distinct().count(),
                      "executors": spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1}))
    spark.stop()
    """
)


def test_py_files_wheel_as_zip_runs_reads_and_writes_on_a_standalone_cluster(bootstrap, new_topic, tmp_path):
    python = deps_only_python(tmp_path)
    # The README's commands: build the wheel and ship it renamed to .zip (Spark adds .zip files to sys.path).
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, ROOT], check=True)
    (wheel,) = dist.glob("pyspark_upsert_kafka-*.whl")
    shipped = shutil.copy(wheel, tmp_path / "pyspark_upsert_kafka.zip")
    app = tmp_path / "app.py"
    app.write_text(APP)

    topic = new_topic(partitions=3)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    result = subprocess.run(
        [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master",
            "local-cluster[2,1,1024]",
            "--py-files",
            str(shipped),
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            "spark.ui.enabled=false",
            str(app),
            bootstrap,
            topic,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads([line for line in result.stdout.splitlines() if re.match(r"^\{", line)][-1])
    print(f"--py-files on a standalone cluster: {out}")
    assert out == {"count": 2000, "distinct": 2000, "executors": 2}
