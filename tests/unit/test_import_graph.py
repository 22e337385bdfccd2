"""The package's import graph, read from the sources with `ast`: no cycle between modules; the kernel
(connector/kernel/) at the bottom, importing nothing of the package above it; no arrow from formats/ to the connector
but to the kernel; no cycle between the format families (formats/avro/, json/, ...); none between read/ and write/
either way (nor through a module above both); the wings (connector/kafka/, connector/flink/) below read/, write/ and
tables/, and apart from each other; no cycle between the connector's packages (each folder one node); no private
`_name` imported from another package or family; and `pyspark_upsert_kafka.formats` and `.kernel` import without
Spark or the connector.

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
KERNEL = f"{PACKAGE}.kernel"
# The connector's wings: what read/ and write/ build on (the Kafka clients) or stand beside (Flink's DDL).
WINGS = (f"{PACKAGE}.kafka", f"{PACKAGE}.flink")
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


def imports(name: str, path: Path, known: set[str], nodes: list[ast.AST] | None = None) -> list[tuple[str, int]]:
    """The package's modules `name` imports, with the line: `from . import x` is an arrow to the module x,
    `from .a import f` to the module a, `import a.b.c` to the deepest of ours among a.b.c, a.b, a. `nodes`: only
    these import statements of the module (default: every one)."""
    if nodes is None:
        nodes = list(ast.walk(ast.parse(path.read_text(), str(path))))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in nodes:
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


def private_imports(name: str, path: Path, known: dict[str, Path]) -> list[str]:
    """The private names (`_name`) module `name` imports from a module of another package or family: each package
    (connector/options/, formats/avro/, ..., a folder's top-level modules) keeps its private names to itself."""

    def home(module: str) -> str:  # a package is its own home; a module's is the package holding it
        return module if known[module].name == "__init__.py" else module.rpartition(".")[0]

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if not alias.name.startswith("_"):
                continue
            single = ast.ImportFrom(module=node.module, names=[alias], level=node.level, lineno=node.lineno)
            for target, line in imports(name, path, set(known), [single]):
                if home(target) != home(name):
                    found.append(f"{name} line {line}: {alias.name} from {target}")
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


def arrows(edges: dict[str, dict[str, int]], source: str, target: str, *unless: str) -> list[str]:
    """The imports by modules in package `source` of modules in package `target` (and in none of `unless`)."""
    return [
        f"{m} -> {t} (line {line})"
        for m, targets in sorted(edges.items())
        for t, line in sorted(targets.items())
        if inside(m, source) and inside(t, target) and not any(inside(t, u) for u in unless)
    ]


def families(edges: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The graph of the formats' packages: each family (formats/avro/, formats/cdc/, ...) and the formats' own
    top-level modules as one node each."""

    def family(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:3]) if len(parts) > 2 and (ROOT / "formats" / parts[2]).is_dir() else FORMATS

    nodes = {family(m) for m in edges if inside(m, FORMATS)}
    collapsed: dict[str, dict[str, int]] = {n: {} for n in nodes}
    for m, targets in edges.items():
        for t, line in targets.items():
            if inside(m, FORMATS) and inside(t, FORMATS) and family(m) != family(t):
                collapsed[family(m)].setdefault(family(t), line)
    return collapsed


def packages(edges: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The graph of the connector's packages: each folder of connector/ (kernel/, options/, kafka/, read/, ...) and
    the formats as one node each, each top-level module of connector/ a node of its own."""

    def package(module: str) -> str:
        if inside(module, FORMATS):
            return FORMATS
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 2 and (ROOT / "connector" / parts[1]).is_dir() else module

    collapsed: dict[str, dict[str, int]] = {package(m): {} for m in edges}
    for m, targets in edges.items():
        for t, line in targets.items():
            if package(m) != package(t):
                collapsed[package(m)].setdefault(package(t), line)
    return collapsed


def test_the_graph_resolves_every_kind_of_import_and_finds_a_cycle():
    """The reading itself, so that an empty answer below means something: modules of both folders found,
    `from . import x`, `from ..a import f` and `from ...a.b import f` resolved, the families collapsed, and a cycle
    among three found."""
    edges = graph()
    assert {f"{PACKAGE}.read.source", f"{PACKAGE}.write.sink", f"{FORMATS}.cdc.debezium", f"{KERNEL}.errors"} <= set(
        edges
    )
    assert f"{PACKAGE}.spark_internals" in edges[f"{PACKAGE}.consumer_lag"]  # `from . import spark_internals`
    assert f"{FORMATS}.codec" in edges[f"{FORMATS}.cdc.debezium"]  # `from ..codec import ...`
    assert f"{KERNEL}.change_kind" in edges[f"{FORMATS}.cdc.debezium"]  # `from ...kernel.change_kind import ...`
    assert f"{PACKAGE}.write.producer" in edges[f"{PACKAGE}.overwrite"]  # `from .write.producer import Sender`
    assert f"{FORMATS}.confluent" in families(edges)[f"{FORMATS}.avro"]  # avro-confluent's registry
    assert f"{PACKAGE}.kafka" in packages(edges)[f"{PACKAGE}.read"]  # read/ borrows its consumers from the wing
    assert f"{PACKAGE}.errors" in packages(edges)[f"{PACKAGE}.kafka"]  # a top-level module: a node of its own
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_back_through_others():
    assert cycles(graph()) == []


def test_the_kernel_imports_nothing_of_the_package_above_it():
    assert arrows(graph(), KERNEL, PACKAGE, KERNEL) == []


def test_formats_import_nothing_of_the_connector_but_the_kernel():
    assert arrows(graph(), FORMATS, PACKAGE, FORMATS, KERNEL) == []


def test_the_format_families_import_each_other_without_a_cycle():
    """avro/, json/, protobuf/ and cdc/ build on confluent/ and on the formats' shared modules, csv/ and cdc/ on
    json/: never back."""
    assert cycles(families(graph())) == []


def test_no_private_name_crosses_a_package_or_family_border():
    known = modules()
    assert [c for name, path in sorted(known.items()) for c in private_imports(name, path, known)] == []


def test_the_private_name_check_sees_every_kind_of_import(tmp_path):
    """The check itself: a private name from the module's own package passes, one from another package or family
    (relative, absolute, or a private module of another package) is found."""
    files = {
        f"{FORMATS}": "__init__.py",
        f"{FORMATS}.codec": "codec.py",
        f"{FORMATS}.avro": "avro/__init__.py",
        f"{FORMATS}.avro.schema": "avro/schema.py",
        f"{FORMATS}.avro._private": "avro/_private.py",
        f"{FORMATS}.json": "json/__init__.py",
        f"{FORMATS}.json.codec": "json/codec.py",
    }
    known = {}
    for name, file in files.items():
        known[name] = tmp_path / file
        known[name].parent.mkdir(parents=True, exist_ok=True)
        known[name].write_text("")
    known[f"{FORMATS}.json.codec"].write_text(
        "from ..avro.schema import _collect, deref\n"
        f"from {FORMATS}.codec import _helper\n"
        "from ..avro import _private\n"
        "from . import _own\n"
    )
    known[f"{FORMATS}.avro.schema"].write_text("from ._private import _fine\nfrom .. import _top\n")
    found = {n: private_imports(n, known[n], known) for n in (f"{FORMATS}.json.codec", f"{FORMATS}.avro.schema")}
    assert [c.split(": ")[1] for c in found[f"{FORMATS}.json.codec"]] == [
        f"_collect from {FORMATS}.avro.schema",
        f"_helper from {FORMATS}.codec",
        f"_private from {FORMATS}.avro._private",
    ]
    assert [c.split(": ")[1] for c in found[f"{FORMATS}.avro.schema"]] == [f"_top from {FORMATS}"]


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


def test_save_mode_overwrite_reads_through_one_entry_point_of_read():
    """overwrite.py, above read/ and write/, reads the topic's live keys through read/live_keys.py alone, never
    read/'s fetch, reducer or ranges themselves."""
    read = [t for t in graph()[f"{PACKAGE}.overwrite"] if inside(t, f"{PACKAGE}.read")]
    assert read == [f"{PACKAGE}.read.live_keys"]


def test_the_wings_import_neither_read_write_nor_tables():
    """kafka/ (librdkafka's clients, the brokers, errors, token providers) is what read/ and write/ build on, and
    flink/ (flink_table) builds on the options only: neither imports read/, write/ or tables/, so either side can use
    them without reaching the other."""
    edges = graph()
    for wing in WINGS:
        for side in ("read", "write", "tables"):
            assert arrows(edges, wing, f"{PACKAGE}.{side}") == []


def test_the_wings_do_not_import_each_other():
    edges = graph()
    assert arrows(edges, f"{PACKAGE}.kafka", f"{PACKAGE}.flink") == []
    assert arrows(edges, f"{PACKAGE}.flink", f"{PACKAGE}.kafka") == []


def test_the_connectors_packages_import_each_other_without_a_cycle():
    """A folder of connector/ is a layer: options/ below kafka/ (KafkaSpec is the wing's, kafka/spec.py), both below
    read/ and write/, never back (no module cycle can hide one: two packages may import each other module by module
    without one)."""
    assert cycles(packages(graph())) == []


def _fresh(script: str) -> dict:
    """Run `script` in a fresh interpreter; its last line printed, as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_formats_import_without_spark_or_the_connector():
    """Importing the formats loads no codec until one is asked for (a Python worker pays for the formats it uses);
    every built-in codec then loads, and neither pyspark nor a connector module but the kernel comes with them."""
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
    family_folders = [f"{FORMATS}.{p.name}" for p in (ROOT / "formats").iterdir() if (p / "__init__.py").exists()]
    assert {f"{FORMATS}.avro", f"{FORMATS}.cdc", f"{FORMATS}.confluent"} <= set(family_folders)
    assert [m for m in loaded["before"] if any(inside(m, f) for f in family_folders) or "_codec" in m] == []
    assert loaded["pyspark"] == []
    assert [m for m in loaded["ours"] if not (inside(m, FORMATS) or inside(m, KERNEL))] == []
    assert {f"{FORMATS}.cdc.debezium", f"{FORMATS}.avro.confluent_codec", f"{KERNEL}.errors"} <= set(loaded["ours"])


def test_the_kernel_imports_without_spark_or_anything_above_it():
    """Every kernel module loads by itself: no pyspark, and nothing of the package but the kernel."""
    loaded = _fresh(
        f"""
        import importlib, json, pkgutil, sys
        import {KERNEL} as kernel
        names = [f"{KERNEL}.{{m.name}}" for m in pkgutil.iter_modules(kernel.__path__)]
        for name in names:
            importlib.import_module(name)
        pyspark = sorted(m for m in sys.modules if m.split(".")[0] == "pyspark")
        ours = sorted(m for m in sys.modules if m.startswith("{PACKAGE}."))
        print(json.dumps({{"names": names, "pyspark": pyspark, "ours": ours}}))
        """
    )
    assert {f"{KERNEL}.errors", f"{KERNEL}.option_kinds", f"{KERNEL}.clock"} <= set(loaded["names"])
    assert loaded["pyspark"] == []
    assert [m for m in loaded["ours"] if not inside(m, KERNEL)] == []


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
