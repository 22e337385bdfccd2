"""Importing a user's module (a generated protobuf module, a codec, a token provider, a partitioner) in whichever Spark
process needs it: the driver, the data source's planning process and the executors each import it themselves.

Spark's Python workers put SparkFiles' root (where every file `addFile`, `addPyFile` and `--py-files` ship lands) on
`sys.path`, so a shipped `.py` module imports everywhere. A shipped `.zip` / `.egg` is put on `sys.path` only when
it is among the data source's python includes, which Spark takes when the source is registered: the installed
source is registered as the session starts, before `addPyFile` (and, through its lookup, without the includes
`--py-files` gives), so its planning process and its tasks would not see the archive. When an import fails in a
Spark worker, the archives in SparkFiles' root go on `sys.path` (as Spark's own executors do with a UDF's includes)
and the import is tried once more. An object of a user's class that travels pickled (a `module:Class` codec in a
write's plan) is preceded by ShippedArchives, which does the same before its class is imported.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

#: Where a user's module must be importable, for errors.
WHERE = (
    "the module must be importable on the driver, in the data source's planning process and on every executor: pip "
    "install it there, or ship it with --py-files or SparkContext.addPyFile (a package as a zip of its folder)"
)
_ARCHIVES = (".zip", ".egg")  # what --py-files takes beside .py (an executor's folder holds jars too)


def import_user_module(name: str) -> ModuleType:
    """`importlib.import_module(name)`, retried with the shipped archives on `sys.path` in a Spark worker."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        if not add_shipped_archives():
            raise
    return importlib.import_module(name)


def shipped_files_root() -> Path | None:
    """SparkFiles' root in a Spark worker, where `addFile`, `addPyFile` and `--py-files` land; None elsewhere, or when
    unknown. Two PySpark internals, read here rather than in connector/spark_internals.py because the formats import
    nothing of the connector; tests/compat/test_spark_internals.py holds their contract on every pyspark."""
    try:
        from pyspark import SparkFiles
    except ImportError:  # a Spark Connect client only: no files of its own
        return None
    on_worker = getattr(SparkFiles, "_is_running_on_worker", None) is True
    root = getattr(SparkFiles, "_root_directory", None) if on_worker else None
    folder = Path(root).resolve() if isinstance(root, str) and root else None  # an executor's root is ".", its cwd
    return folder if folder is not None and folder.is_dir() else None


def add_shipped_archives() -> bool:
    """Put each archive in SparkFiles' root on `sys.path` (in a Spark worker: elsewhere `addPyFile` did already);
    whether `sys.path` changed."""
    folder = shipped_files_root()
    if folder is None:
        return False
    added = [str(p) for p in sorted(folder.iterdir()) if p.suffix.lower() in _ARCHIVES and str(p) not in sys.path]
    for archive in added:
        sys.path.insert(1, archive)  # after the script's own folder, as Spark's add_path
    if added:
        importlib.invalidate_caches()
    return bool(added)


class ShippedArchives:
    """Pickled ahead of an object of a user's class: unpickled, it puts the shipped archives on `sys.path` before
    that class's module is imported (pickle reads in order)."""

    def __reduce__(self) -> tuple[Callable[[], bool], tuple[()]]:
        return (add_shipped_archives, ())
