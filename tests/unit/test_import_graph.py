"""The package's import graph, read from the sources with `ast`: no cycle between modules, no arrow from
formats/ to the connector, none between read/ and write/ either way (nor through a module above both); and
`pyspark_upsert_kafka.formats` imports without Spark or the connector.

Every import counts: at module level, under `if TYPE_CHECKING`, and inside functions (a deferred import still
couples two modules; none is exempt today). A package's own __init__, which runs before any of its modules, is
covered by the fresh-interpreter tests, not by the graph."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "pyspark_upsert_kafka"
FORMATS = f"{PACKAGE}.formats"
# The folders of the card and the import names setuptools gives them (pyproject.toml's package-dir).
SOURCES = {ROOT / "connector": PACKAGE, ROOT / "formats": FORMATS}


def modules() -> dict[str, Path]:
    """Every module of the package by its import name (a package by its own name, for its __init__)."""
    found = {}
    for folder, name in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((name, *parts))] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """The package's modules `name` imports, with the line: `from . import x` is an arrow to the module x,
    `from .a import f` to the module a, `import a.b.c` to the deepest of ours among a.b.c, a.b, a."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
            base = ".".join(p for p in (base, node.module) if p)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno))
    return found


def graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: the first line that does}."""
    found = modules()
    edges: dict[str, dict[str, int]] = {m: {} for m in found}
    for name, path in found.items():
        for target, line in imports(name, path, set(found)):
            edges[name].setdefault(target, line)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def arrows(edges: dict[str, dict[str, int]], source: str, target: str, unless: str | None = None) -> list[str]:
    """The imports by modules in package `source` of modules in package `target` (and not in `unless`)."""
    return [
        f"{m} -> {t} (line {line})"
        for m, targets in sorted(edges.items())
        for t, line in sorted(targets.items())
        if inside(m, source) and inside(t, target) and not (unless and inside(t, unless))
    ]


def test_the_graph_resolves_every_kind_of_import_and_finds_a_cycle():
    """The reading itself, so that an empty answer below means something: modules of both folders found,
    `from . import x` and `from ..a import f` resolved, and a cycle among three found."""
    edges = graph()
    assert {f"{PACKAGE}.read.source", f"{PACKAGE}.write.sink", f"{FORMATS}.cdc.debezium"} <= set(edges)
    assert f"{PACKAGE}.spark_internals" in edges[f"{PACKAGE}.consumer_lag"]  # `from . import spark_internals`
    assert f"{FORMATS}.change_kind" in edges[f"{FORMATS}.cdc.debezium"]  # `from ..change_kind import ChangeKind`
    assert f"{PACKAGE}.write.producer" in edges[f"{PACKAGE}.overwrite"]  # `from .write.producer import Sender`
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_back_through_others():
    assert cycles(graph()) == []


def test_formats_import_nothing_of_the_connector():
    assert arrows(graph(), FORMATS, PACKAGE, unless=FORMATS) == []


def test_read_and_write_do_not_import_each_other():
    edges = graph()
    assert arrows(edges, f"{PACKAGE}.read", f"{PACKAGE}.write") == []
    assert arrows(edges, f"{PACKAGE}.write", f"{PACKAGE}.read") == []


def test_read_and_write_do_not_reach_each_other_through_the_modules_above_them():
    """A top-level module that imports read/ or write/ (overwrite, datasource, ...) is above both: neither side
    imports it, or it would reach the other side through it."""
    edges = graph()
    above = {
        m
        for m in edges
        if m.count(".") == 1 and any(inside(t, f"{PACKAGE}.read") or inside(t, f"{PACKAGE}.write") for t in edges[m])
    }
    assert f"{PACKAGE}.overwrite" in above
    for side in ("read", "write"):
        assert [a for m in above for a in arrows(edges, f"{PACKAGE}.{side}", m)] == []


def _fresh(script: str) -> dict:
    """Run `script` in a fresh interpreter; its last line printed, as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_formats_import_without_spark_or_the_connector():
    """Importing the formats loads no codec until one is asked for (a Python worker pays for the formats it uses);
    every built-in codec then loads, and neither pyspark nor a connector module comes with them."""
    loaded = _fresh(
        f"""
        import json, sys
        from {FORMATS} import ChangeKind, available_formats, codec_class
        before = sorted(m for m in sys.modules if m.startswith("{PACKAGE}."))
        classes = {{name: codec_class(name, "value.format").__name__ for name in available_formats()}}
        pyspark = sorted(m for m in sys.modules if m.split(".")[0] == "pyspark")
        ours = sorted(m for m in sys.modules if m.startswith("{PACKAGE}."))
        print(json.dumps({{"classes": classes, "before": before, "pyspark": pyspark, "ours": ours}}))
        """
    )
    assert {"json", "avro-confluent", "debezium-json", "protobuf-confluent"} <= set(loaded["classes"])
    assert not any("_codec" in m or ".cdc" in m for m in loaded["before"])
    assert loaded["pyspark"] == []
    assert [m for m in loaded["ours"] if not inside(m, FORMATS)] == []
    assert f"{FORMATS}.cdc.debezium" in loaded["ours"]


def test_the_connectors_public_names_load_on_first_use():
    """The package's __init__ imports nothing until a name is used; each name in __all__ then resolves, and none
    is also a module's name (the import system binds an imported submodule to its package, which would hide a
    public function of the same name: the module of `lag` is consumer_lag)."""
    loaded = _fresh(
        f"""
        import json, sys, types
        import {PACKAGE} as package
        before = sorted(m for m in sys.modules if m.split(".")[0] == "pyspark")
        import {PACKAGE}.consumer_lag
        names = {{n: type(getattr(package, n)).__name__ for n in package.__all__}}
        print(json.dumps({{"before": before, "names": names, "default": package.DefaultSource.name(),
                          "same": package.DefaultSource is package.UpsertKafkaDataSource}}))
        """
    )
    assert loaded["before"] == []
    assert loaded["names"]["lag"] == "function"
    assert loaded["default"] == "upsert-kafka" and loaded["same"]
    assert "module" not in loaded["names"].values()
    modules = {p.stem for p in (ROOT / "connector").glob("*.py")} | {
        p.name for p in (ROOT / "connector").iterdir() if p.is_dir()
    }
    assert set(loaded["names"]) & modules == set()
