"""A real Apache Flink 2.2.1 table session, driven line by line by integration/flink_golden.py (through
integration/flink_session.py's FlinkSession).

Runs under the Flink venv's python (PyFlink 2.2.1, never the project's venv):

    <flink venv>/bin/python integration/flink/golden_job.py <config.json>

config.json: {"jars": [jar paths for pipeline.jars], "canonical": "<path of tests/support/flink_golden.py>"}.
Each request is one JSON object on stdin; each answer one line on stdout prefixed with `@@golden@@ ` (the JVM
may print to stdout too). Requests ("op"):

- `sql`: {"statements": [...]} runs DDL statements (execute_sql).
- `explain`: {"statement": "INSERT ..."} translates a statement down to Flink's job graph without running it
  (ExplainDetail.JSON_EXECUTION_PLAN: the formats' runtime encoders are built, so a type a format refuses fails here).
- `write`: {"table", "columns": [{"name", "type"}], "changes": [{"kind", "row"}], "timeout_s", "insert_only"}
  writes the changes into the table with Flink SQL: a changelog stream carrying each change's RowKind and sequence
  number (`from_changelog_stream`) and an `INSERT INTO table SELECT CASE seq WHEN n THEN <typed literal> ... END, ...`.
  With "insert_only" (every change "+I") the stream is an insert-only table (`from_data_stream`: what a `kafka`
  sink with a plain format takes); else a changelog that may carry every RowKind.
  Values are typed SQL literals rendered from the canonical form, except FLOAT/DOUBLE columns, whose values travel
  as DOUBLE fields of the stream: Flink's planner folds float literals through BigDecimal, which loses -0.0 and
  refuses NaN/Infinity as FLOAT.
- `read`: {"query", "columns": [{"name", "type"}], "timeout_s", "config"} runs a bounded query and returns every
  row it emits with its RowKind, in emission order, in the canonical form (converted from Flink's Java values, not
  PyFlink's collect(), which loses TIMESTAMP micros and fails on TIMESTAMP_LTZ, MAP and arrays with nulls). Without
  "columns" they are the query's resolved output columns, returned as "columns" ({"name", "type"}, the type as
  Flink prints it, VARCHAR(2147483647) as STRING). "config" {key: value}: table settings for this query only (e.g.
  'table.exec.state.ttl'), put back afterwards as they were, or set to Flink's default (CONFIG_DEFAULTS).
- `plan`: {"statement", "config"} Flink's EXPLAIN (ExplainDetail.CHANGELOG_MODE) of an INSERT, or of a query as
  `read` runs it (into Flink's collecting sink: TableEnvironmentInternal.explainInternal of a CollectModifyOperation),
  with "config" applied as in `read`: the lines of its "== Optimized Physical Plan ==" section (the collecting sink's
  session-wide number left out of its name).
- `execute`: {"statement", "timeout_s", "config"} runs an INSERT INTO ... SELECT ... (bounded sources) to its end.
- `settings`: the session's own settings (TABLE_CONFIG) as its table configuration holds them.
- `row_types`: {"table", "key": [...], "value": [...]} Flink's resolved physical row type of a table, projected
  on the key fields and on the value fields (a primary key's columns are NOT NULL there).
- `avro_schema`: {"type": "<Flink type text>", "legacy": bool} AvroSchemaConverter.convertToSchema(type, legacy).
- `quit`.

The session's time zone is UTC ('table.local-time-zone'), parallelism 1 (one writer, records in change order),
'table.exec.sink.upsert-materialize' NONE (no SinkUpsertMaterializer between the changes and the sink).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import importlib.util
import json
import re
import struct
import sys
import threading
import time
import traceback
from typing import Any

import py4j.java_gateway
import py4j.protocol
from pyflink.common import Configuration, Row, RowKind, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.java_gateway import get_gateway
from pyflink.table import ExplainDetail, StreamTableEnvironment

MARK = "@@golden@@ "
KINDS = {"+I": RowKind.INSERT, "-U": RowKind.UPDATE_BEFORE, "+U": RowKind.UPDATE_AFTER, "-D": RowKind.DELETE}
TABLE_CONFIG = {
    "table.local-time-zone": "UTC",
    "table.exec.sink.upsert-materialize": "NONE",
    "parallelism.default": "1",
}
# Flink 2.2.1's defaults of the settings a request may change for itself (see Session._config).
CONFIG_DEFAULTS = {"table.exec.state.ttl": "0 ms", "pipeline.auto-watermark-interval": "200 ms"}


def _load_canonical(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("flink_golden_canonical", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def java_error(e: BaseException) -> dict[str, Any]:
    """The Java exception chain of a Py4JJavaError (top first, root last), else the Python error."""
    j = getattr(e, "java_exception", None)
    if j is None:
        return {"error": f"{type(e).__name__}: {e}", "causes": [f"{type(e).__name__}: {e}"]}
    causes, seen, root = [], 0, j
    while j is not None and seen < 20:
        text = f"{j.getClass().getName()}: {j.getMessage()}"
        if text not in causes:
            causes.append(text)
        root, j, seen = j, j.getCause(), seen + 1
    frames = [str(f.toString()) for f in list(root.getStackTrace())[:12]]
    return {"error": causes[-1], "causes": causes, "root_frames": frames}


@contextlib.contextmanager
def raw_java_errors() -> Any:
    """Py4J's own errors (Py4JJavaError, its Java exception attached) instead of PyFlink's conversion of them, whose
    text is the top message with the stack trace and whose Java exception is gone: java_error() gets the chain."""
    patched = py4j.java_gateway.get_return_value
    py4j.java_gateway.get_return_value = py4j.protocol.get_return_value
    try:
        yield
    finally:
        py4j.java_gateway.get_return_value = patched


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class Session:
    def __init__(self, jars: list[str], canonical_path: str) -> None:
        self.cg = _load_canonical(canonical_path)
        conf = Configuration()
        conf.set_string("pipeline.jars", ";".join("file://" + j for j in jars))
        self.env = StreamExecutionEnvironment.get_execution_environment(conf)
        self.env.set_parallelism(1)
        self.tenv = StreamTableEnvironment.create(self.env)
        for key, value in TABLE_CONFIG.items():
            self.tenv.get_config().set(key, value)
        self.jvm = get_gateway().jvm
        self.views = 0

    # ---- SQL literals from the canonical form ----
    def type_text(self, t: Any, top: bool = True) -> str:
        """A Flink type text for CAST targets (the top level's NOT NULL left out: CAST cannot take it)."""
        nn = "" if (t.nullable or top) else " NOT NULL"
        r = t.root
        if r == "DECIMAL":
            return f"DECIMAL({t.precision}, {t.scale}){nn}"
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME") or (r in ("CHAR", "BINARY") and t.precision):
            return f"{r}({t.precision}){nn}"
        if r == "VARCHAR":
            return f"VARCHAR({t.precision}){nn}" if t.precision else f"STRING{nn}"
        if r == "VARBINARY":
            return f"VARBINARY({t.precision}){nn}" if t.precision else f"BYTES{nn}"
        if r == "ARRAY":
            return f"ARRAY<{self.type_text(t.element, False)}>{nn}"
        if r == "MAP":
            return f"MAP<{self.type_text(t.key, False)}, {self.type_text(t.value, False)}>{nn}"
        if r == "ROW":
            return "ROW<" + ", ".join(f"{q(n)} {self.type_text(ft, False)}" for n, ft in t.fields) + f">{nn}"
        return r + nn

    def _zero(self, t: Any) -> str:
        zeros = {"VARCHAR": "''", "CHAR": "''", "VARBINARY": "X''", "BINARY": "X''", "BOOLEAN": "FALSE"}
        if t.root in ("TINYINT", "SMALLINT", "INT", "BIGINT", "DECIMAL", "FLOAT", "DOUBLE"):
            return f"CAST(0 AS {self.type_text(t)})"
        if t.root in zeros:
            return f"CAST({zeros[t.root]} AS {self.type_text(t)})"
        raise ValueError(f"no empty ARRAY/MAP of {t.root} elements here")

    def _empty_array(self, t: Any) -> str:
        z = self._zero(t)
        return f"ARRAY_REMOVE(ARRAY[{z}], {z})"  # Flink SQL has no empty ARRAY[] literal

    def literal(self, v: Any, t: Any) -> str:
        """A Flink SQL expression of type `t` for the canonical value `v`."""
        cast = self.type_text(t)
        if v is None:
            return f"CAST(NULL AS {cast})"
        r = t.root
        if r == "BOOLEAN":
            return "TRUE" if v else "FALSE"
        if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
            return f"CAST({int(v)} AS {cast})"
        if r in ("FLOAT", "DOUBLE"):
            f = float(v)
            if f != f or f in (float("inf"), float("-inf")) or (f == 0 and str(v).startswith("-")):
                raise ValueError(f"{v} inside a nested value cannot be a Flink SQL literal")
            return f"CAST({f!r}E0 AS {cast})" if "e" not in repr(f) else f"CAST({f!r} AS {cast})"
        if r == "DECIMAL":
            return f"CAST('{v}' AS {cast})"
        if r in ("VARCHAR", "CHAR"):
            return "CAST('" + str(v).replace("'", "''") + f"' AS {cast})"
        if r in ("VARBINARY", "BINARY"):
            return f"CAST(X'{v}' AS {cast})"
        if r == "DATE":
            return f"DATE '{v}'"
        if r == "TIME":  # the fraction as short as it goes: a TIME '...' literal's precision is its digits'
            whole, _, fraction = str(v).partition(".")
            fraction = fraction.rstrip("0")
            return f"CAST(TIME '{whole}{'.' + fraction if fraction else ''}' AS {cast})"
        if r == "TIMESTAMP":
            return f"CAST(TIMESTAMP '{v.replace('T', ' ')}' AS {cast})"
        if r == "TIMESTAMP_LTZ":
            wall = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(v))  # the instant's UTC wall clock
            return f"CAST(TIMESTAMP '{wall:%Y-%m-%d %H:%M:%S}.{wall.microsecond:06d}' AS {cast})"
        if r == "ARRAY":
            if not v:
                return f"CAST({self._empty_array(t.element)} AS {cast})"
            return f"CAST(ARRAY[{', '.join(self.literal(x, t.element) for x in v)}] AS {cast})"
        if r == "MAP":
            if not v:
                return f"CAST(MAP_FROM_ARRAYS({self._empty_array(t.key)}, {self._empty_array(t.value)}) AS {cast})"
            items = ", ".join(f"{self.literal(k, t.key)}, {self.literal(x, t.value)}" for k, x in v)
            return f"CAST(MAP[{items}] AS {cast})"
        if r == "ROW":
            fields = ", ".join(self.literal(v.get(n), ft) for n, ft in t.fields)
            return f"CAST(ROW({fields}) AS {cast})"
        raise ValueError(f"no SQL literal for {r}")

    # ---- Flink's Java values to Python values ----
    def py(self, v: Any, t: Any) -> Any:
        if v is None:
            return None
        r, jvm = t.root, self.jvm
        if r == "FLOAT":
            return struct.unpack(">f", struct.pack(">i", jvm.java.lang.Float.floatToRawIntBits(v)))[0]
        if r == "DOUBLE":
            return struct.unpack(">d", struct.pack(">q", jvm.java.lang.Double.doubleToRawLongBits(v)))[0]
        if r == "DECIMAL":  # py4j hands a BigDecimal over as decimal.Decimal (exact)
            return v if isinstance(v, decimal.Decimal) else decimal.Decimal(v.toPlainString())
        if r in ("VARBINARY", "BINARY"):
            return bytes(v)
        if r == "DATE":
            return dt.date(v.getYear(), v.getMonthValue(), v.getDayOfMonth())
        if r == "TIME":
            return dt.time(v.getHour(), v.getMinute(), v.getSecond(), v.getNano() // 1000)
        if r == "TIMESTAMP":
            return dt.datetime(
                v.getYear(), v.getMonthValue(), v.getDayOfMonth(), v.getHour(), v.getMinute(), v.getSecond(),
                v.getNano() // 1000,
            )  # fmt: skip
        if r == "TIMESTAMP_LTZ":
            return v.getEpochSecond() * 1_000_000 + v.getNano() // 1000  # epoch microseconds
        if r == "ARRAY":
            return [self.py(v[i], t.element) for i in range(len(v))]
        if r == "MAP":
            return [(self.py(k, t.key), self.py(v.get(k), t.value)) for k in list(v.keySet().toArray())]
        if r == "ROW":
            return {n: self.py(v.getField(i), ft) for i, (n, ft) in enumerate(t.fields)}
        return v  # BOOLEAN, integers, strings: py4j's own conversion is exact

    # ---- requests ----
    def op_sql(self, req: dict[str, Any]) -> dict[str, Any]:
        for stmt in req["statements"]:
            self.tenv.execute_sql(stmt)
        return {"ok": True}

    def op_explain(self, req: dict[str, Any]) -> dict[str, Any]:
        self.tenv.explain_sql(req["statement"], ExplainDetail.JSON_EXECUTION_PLAN)
        return {"ok": True}

    def op_write(self, req: dict[str, Any]) -> dict[str, Any]:
        columns = [(c["name"], self.cg.parse_type(c["type"])) for c in req["columns"]]
        changes = req["changes"]
        floats = [n for n, t in columns if t.root in ("FLOAT", "DOUBLE")]
        rows = []
        for seq, change in enumerate(changes):
            row = Row(seq, *(None if change["row"].get(n) is None else float(change["row"][n]) for n in floats))
            row.set_row_kind(KINDS[change["kind"]])
            rows.append(row)
        names = ["seq", *(f"f{i}" for i in range(len(floats)))]
        types = [Types.INT()] + [Types.DOUBLE()] * len(floats)
        stream = self.env.from_collection(rows, type_info=Types.ROW_NAMED(names, types))
        self.views += 1
        view = f"golden_changes_{self.views}"
        convert = self.tenv.from_data_stream if req.get("insert_only") else self.tenv.from_changelog_stream
        self.tenv.create_temporary_view(view, convert(stream))
        select = []
        for name, t in columns:
            if name in floats:
                slot = q(f"f{floats.index(name)}")
                select.append(f"CAST({slot} AS FLOAT)" if t.root == "FLOAT" else slot)
                continue
            whens = " ".join(
                f"WHEN {seq} THEN {self.literal(change['row'].get(name), t)}" for seq, change in enumerate(changes)
            )
            select.append(f"CASE seq {whens} END")
        sql = f"INSERT INTO {q(req['table'])} SELECT {', '.join(select)} FROM {q(view)}"
        started = time.monotonic()
        result = self.tenv.execute_sql(sql)
        self._await(result._j_table_result, req.get("timeout_s", 120))
        self.tenv.drop_temporary_view(view)
        return {"ok": True, "seconds": round(time.monotonic() - started, 1)}

    def _await(self, j_result: Any, timeout_s: float) -> None:
        unit = self.jvm.java.util.concurrent.TimeUnit.MILLISECONDS
        try:
            getattr(j_result, "await")(int(timeout_s * 1000), unit)  # `await` is a Python keyword
        except Exception:
            self._cancel(j_result)
            raise

    def _cancel(self, j_result: Any) -> None:
        client = j_result.getJobClient()
        if client.isPresent():
            with contextlib.suppress(Exception):
                client.get().cancel().get()

    def _config(self, config: dict[str, str] | None) -> Any:
        return table_settings(self.tenv, config, CONFIG_DEFAULTS)

    def _columns(self, j_table: Any) -> list[dict[str, str]]:
        out = []
        for column in list(j_table.getResolvedSchema().getColumns()):
            text = column.getDataType().getLogicalType().asSerializableString()
            text = text.replace("VARCHAR(2147483647)", "STRING").replace("VARBINARY(2147483647)", "BYTES")
            out.append({"name": column.getName(), "type": text})
        return out

    def op_read(self, req: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        with self._config(req.get("config")):
            j_table = self.tenv.sql_query(req["query"])._j_table
            names_types = req.get("columns") or self._columns(j_table)
            columns = [(c["name"], self.cg.parse_type(c["type"])) for c in names_types]
            j_result = j_table.execute()
        timer = threading.Timer(req.get("timeout_s", 120), self._cancel, [j_result])
        timer.start()
        out = []
        try:
            it = j_result.collect()
            while it.hasNext():
                jrow = it.next()
                row = {n: self.cg.canonical(self.py(jrow.getField(i), t), t) for i, (n, t) in enumerate(columns)}
                out.append({"kind": jrow.getKind().shortString(), "row": row})
            it.close()
        finally:
            timer.cancel()
        return {"rows": out, "columns": names_types, "seconds": round(time.monotonic() - started, 1)}

    def op_plan(self, req: dict[str, Any]) -> dict[str, Any]:
        """EXPLAIN with the changelog modes, of the job Flink runs: an INSERT as written; a query as `read` runs it,
        into a collecting sink (explain_sql of a bare query plans no sink, and so differs: no ChangelogNormalize)."""
        jvm, statement = self.jvm, req["statement"]
        with self._config(req.get("config")), raw_java_errors():
            if statement.lstrip().upper().startswith("INSERT"):
                text = self.tenv.explain_sql(statement, ExplainDetail.CHANGELOG_MODE)
            else:
                query = self.tenv.sql_query(statement)._j_table.getQueryOperation()
                operations = jvm.java.util.ArrayList()
                operations.add(jvm.org.apache.flink.table.operations.CollectModifyOperation(query))
                details = get_gateway().new_array(jvm.org.apache.flink.table.api.ExplainDetail, 1)
                details[0] = jvm.org.apache.flink.table.api.ExplainDetail.CHANGELOG_MODE
                text_format = jvm.org.apache.flink.table.api.ExplainFormat.TEXT
                text = self.tenv._j_tenv.explainInternal(operations, text_format, details)
        lines = text.splitlines()
        start = lines.index("== Optimized Physical Plan ==") + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("== ")), len(lines))
        # the collecting sink's name counts the session's collects: its number is left out
        plan = [re.sub(r"anonymous_collect\$\d+", "anonymous_collect", line.rstrip()) for line in lines[start:end]]
        return {"plan": [line for line in plan if line.strip()]}

    def op_execute(self, req: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        with self._config(req.get("config")):
            result = self.tenv.execute_sql(req["statement"])
        self._await(result._j_table_result, req.get("timeout_s", 120))
        return {"ok": True, "seconds": round(time.monotonic() - started, 1)}

    def op_settings(self, req: dict[str, Any]) -> dict[str, Any]:
        held = self.tenv.get_config()._j_table_config.getConfiguration().toMap()
        return {"settings": {key: held.get(key) for key in TABLE_CONFIG}}

    def op_row_types(self, req: dict[str, Any]) -> dict[str, Any]:
        schema = self.tenv.from_path(req["table"])._j_table.getResolvedSchema()
        row = schema.toPhysicalRowDataType().getLogicalType()
        fields = {f.getName(): f for f in row.getFields()}
        not_null = "" if row.isNullable() else " NOT NULL"  # the formats get the row NOT NULL: a record, no union
        out = {}
        for part in ("key", "value"):
            out[part] = "ROW<" + ", ".join(fields[n].asSerializableString() for n in req[part]) + ">" + not_null
        return out

    def op_avro_schema(self, req: dict[str, Any]) -> dict[str, Any]:
        jvm = self.jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        logical = jvm.org.apache.flink.table.types.logical.utils.LogicalTypeParser.parse(req["type"], loader)
        converter = jvm.org.apache.flink.formats.avro.typeutils.AvroSchemaConverter
        return {"schema": json.loads(converter.convertToSchema(logical, bool(req["legacy"])).toString())}


@contextlib.contextmanager
def table_settings(tenv: Any, config: dict[str, str] | None, defaults: dict[str, str]) -> Any:
    """Table settings for one request, each put back afterwards: to its value before, or to Flink's default (in
    `defaults`), set explicitly. Removing the key is not enough: running a job copies the table settings into the
    execution environment's configuration (StreamExecutionEnvironment.configure), where they would stay. Shared with
    bench_job.py."""
    j_conf = tenv.get_config()._j_table_config.getConfiguration()
    before = {k: j_conf.toMap().get(k) for k in (config or {})}
    for key, value in before.items():
        if value is None and key not in defaults:
            raise ValueError(f"no default known for {key}: add it to the job's CONFIG_DEFAULTS")
    try:
        for key, value in (config or {}).items():
            tenv.get_config().set(key, value)
        yield
    finally:
        for key, value in before.items():
            tenv.get_config().set(key, defaults[key] if value is None else value)


def main() -> int:
    with open(sys.argv[1]) as f:
        config = json.load(f)
    return serve(Session(config["jars"], config["canonical"]))


def serve(session: Any) -> int:
    """The protocol with integration/flink_session.py: one JSON request a line in, `MARK` + one JSON answer a line out
    (bench_job.py serves its own session the same way)."""
    print(MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if req["op"] == "quit":
            break
        try:
            answer = getattr(session, "op_" + req["op"])(req)
        except Exception as e:
            answer = java_error(e)
            answer["traceback"] = traceback.format_exc()[-3000:]
        print(MARK + json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
