"""Fault suite: every format's decoder, for keys and values, fed random bytes, valid records truncated at every
length and valid records with mutated bytes. The only outcomes allowed are the documented ones: the record's
error naming topic, partition, offset, key or value and the format (RecordError), or with ignore-parse-errors
a counted skip. Never another exception, never a hang; and a record's outcome is a function of its own bytes
(decoded alone or among any others, it decodes to the same row or fails).

Decoding runs through the read side's decode step (connector/read/record_decoder.py) without Spark or Kafka; one test
reads mutated records end to end from the real broker. Each test prints how many cases it tried."""

from __future__ import annotations

import contextlib
import math
import random
import re
import signal
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.types import StructField, StructType
from pyspark_upsert_kafka.errors import RecordError
from pyspark_upsert_kafka.formats.codec import batch_from_records
from pyspark_upsert_kafka.options.ddl import parse_ddl
from pyspark_upsert_kafka.read.fetch import Records
from pyspark_upsert_kafka.read.range_calculator import PartitionRange
from pyspark_upsert_kafka.read.record_decoder import RecordRangeDecoder
from pyspark_upsert_kafka.read.spec import ReadSpec, parse_read_spec

from tests.support.kafka_io import produce

TOPIC, PARTITION, FIRST_OFFSET = "fuzzed", 3, 1000
HANG_LIMIT_S = 30  # one decode of a few records takes milliseconds
UTC = timezone.utc

# -- the formats and their tables ---------------------------------------------------------------------


def columns(ddl: str) -> list[StructField]:
    """Nullable columns, declared as a user declares them (option 'schema')."""
    return parse_ddl(ddl).fields


NESTED = columns("tags ARRAY<STRING>, scores MAP<STRING, DOUBLE>, ship STRUCT<city: STRING, zip: INT>")
FLAT = columns(
    "flag BOOLEAN, tiny TINYINT, small SMALLINT, n INT, big BIGINT, ratio FLOAT, score DOUBLE, price DECIMAL(5,2), "
    "wide DECIMAL(38,10), name STRING, blob BINARY, day DATE, at TIMESTAMP, local TIMESTAMP_NTZ"
)
RICH = FLAT + NESTED
KEY = columns("id BIGINT, region STRING")


AT = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
FULL = {
    "flag": True, "tiny": -128, "small": 32767, "n": -2147483648, "big": 2**63 - 1, "ratio": 1.5,
    "score": -2.25e300, "price": Decimal("-999.99"), "wide": Decimal("1234567890123456789012345678.0123456789"),
    "name": 'zü"r,\\ich\n', "blob": b"\x00\xff,\"", "day": date(1, 1, 1), "at": AT,
    "local": datetime(9999, 12, 31, 23, 59, 59, 999999), "tags": ["a", None, "b c"],
    "scores": {"x": 1.0, "y": None, "z": math.nan}, "ship": {"city": "Bern", "zip": 3000},
}  # fmt: skip
EMPTY = {
    "flag": False, "tiny": 0, "small": 0, "n": 0, "big": 0, "ratio": -0.0, "score": math.inf,
    "price": Decimal("0.00"), "wide": Decimal("0E-10"), "name": "", "blob": b"", "day": date(1970, 1, 1),
    "at": datetime(1970, 1, 1, tzinfo=UTC), "local": datetime(1970, 1, 1), "tags": [], "scores": {},
    "ship": {"city": None, "zip": None},
}  # fmt: skip
RICH_ROWS = [FULL, EMPTY, dict.fromkeys(FULL)]
# Key columns are never null: the writer refuses such a key, and avro-confluent registers them NOT NULL (Flink).
KEY_ROWS = [{"id": 1, "region": "eu"}, {"id": -(2**63), "region": ""}, {"id": 2**40, "region": 'zü\n,"'}]


@dataclass(frozen=True)
class Case:
    """A changelog read with a key and a value format, and rows to make valid records of."""

    name: str
    key_format: str
    key_columns: list[StructField]
    key_rows: list[dict]
    value_format: str
    value_columns: list[StructField]
    value_rows: list[dict]

    def options(self, ignore: bool, registry_url: str | None = None) -> dict[str, str]:
        opts = {
            "topic": TOPIC,
            "properties.bootstrap.servers": "127.0.0.1:9",  # never contacted: decoding only
            "read.mode": "changelog",
            "key.fields": ";".join(f.name for f in self.key_columns),
            "value.fields-include": "EXCEPT_KEY",
            "key.format": self.key_format,
            "value.format": self.value_format,
            "metadata.columns": "offset",
        }
        for role, fmt in (("key", self.key_format), ("value", self.value_format)):
            if fmt == "avro-confluent":
                opts[f"{role}.avro-confluent.url"] = registry_url or ""
            if ignore:
                opts[f"{role}.{fmt}.ignore-parse-errors"] = "true"
        return opts

    def table(self) -> StructType:
        return StructType([*self.key_columns, *self.value_columns, *columns("_change_type STRING, offset BIGINT")])


CASES = [
    Case("json", "json", KEY, KEY_ROWS, "json", RICH, RICH_ROWS),
    Case("csv", "csv", KEY, KEY_ROWS, "csv", RICH, RICH_ROWS),
    Case("avro", "avro", KEY, KEY_ROWS, "avro", RICH, RICH_ROWS),
    Case("avro-confluent", "avro-confluent", KEY, KEY_ROWS, "avro-confluent", RICH, RICH_ROWS),
    Case("raw-long", "raw", columns("id BIGINT"), [{"id": 1}, {"id": -1}], "raw", columns("v BIGINT"), [{"v": 7}]),
    Case(
        "raw-string", "raw", columns("id STRING"), [{"id": "k"}, {"id": ""}],
        "raw", columns("v STRING"), [{"v": "raw ✓"}, {"v": ""}],
    ),
    Case(
        "raw-double-and-bytes", "raw", columns("id DOUBLE"), [{"id": 1.5}, {"id": math.nan}],
        "raw", columns("v BINARY"), [{"v": b"\x00\x01"}, {"v": b""}],
    ),
    Case(
        "raw-key-json-value", "raw", columns("id SMALLINT"), [{"id": 3}],
        "json", columns("v BOOLEAN, w FLOAT"), [{"v": True, "w": 1e-45}, {"v": None, "w": None}],
    ),
    # Every column in the key: the value has no columns (`{}`, an empty csv line, an empty Avro record).
    Case("key-only-json", "json", KEY, KEY_ROWS, "json", [], [{}]),
    Case("key-only-csv", "csv", KEY, KEY_ROWS, "csv", [], [{}]),
    Case("key-only-avro", "avro", KEY, KEY_ROWS, "avro", [], [{}]),
]  # fmt: skip


@dataclass
class Prepared:
    case: Case
    spec: ReadSpec  # without ignore-parse-errors
    skipping: ReadSpec  # with
    keys: list[bytes]  # valid encoded keys
    values: list[bytes]  # valid encoded values
    key_rows: dict[bytes, dict]  # each valid key's bytes -> the columns it was made from
    value_rows: dict[bytes, dict]  # each valid value's bytes -> the columns it was made from


def prepare(case: Case, registry_url: str | None) -> Prepared:
    spec = parse_read_spec(case.options(False, registry_url), case.table(), streaming=False)
    skipping = parse_read_spec(case.options(True, registry_url), case.table(), streaming=False)
    layout = spec.layout
    # The columns as Arrow holds them (a FLOAT rounded to 32 bits), as the encoders were given them.
    key_batch = batch_from_records(case.key_rows, layout.key_schema)
    value_batch = batch_from_records(case.value_rows, layout.value_schema)
    keys = layout.key_codec.encoder(layout.key_schema).encode(key_batch)
    values = layout.value_codec.encoder(layout.value_schema).encode(value_batch)
    key_rows, value_rows = dict(zip(keys, key_batch.to_pylist())), dict(zip(values, value_batch.to_pylist()))
    assert len(key_rows) == len(keys) and len(value_rows) == len(values), "two rows encode to the same bytes"
    return Prepared(case, spec, skipping, keys, values, key_rows, value_rows)


_prepared: dict[str, Prepared] = {}


@pytest.fixture
def prepared(request: pytest.FixtureRequest) -> Iterator[Prepared]:
    case: Case = request.param
    confluent = "avro-confluent" in (case.key_format, case.value_format)
    registry_url = request.getfixturevalue("registry_url") if confluent else None
    if case.name not in _prepared:
        _prepared[case.name] = prepare(case, registry_url)
    yield _prepared[case.name]


TRIED: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_cases(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print how many records each case tried, past pytest's output capture."""
    yield
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        for name, n in sorted(TRIED.items()):
            print(f"\ndecoder fuzzing: {n} records tried for {name}", end="")
        print(f"\ndecoder fuzzing: {sum(TRIED.values())} records tried in all")


# -- the contract -----------------------------------------------------------------------------------------


@contextlib.contextmanager
def hang_limit(seconds: float) -> Iterator[None]:
    def expired(*_: object) -> None:
        raise TimeoutError(f"decoding hung for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_WHERE = re.compile(
    rf"cannot decode the (key|value) of the record at topic '{TOPIC}' partition {PARTITION} offset (\d+) "
    r"with format '([a-z-]+)': (.+); \1 bytes: b'"
)


def decode(
    spec: ReadSpec, keys: list[bytes | None], values: list[bytes | None], first: int = FIRST_OFFSET
) -> tuple[list[dict], RecordRangeDecoder]:
    """The changelog rows the read side makes of these records (offsets from `first`)."""
    offsets = list(range(first, first + len(keys)))
    decoder = RecordRangeDecoder(spec, PartitionRange(TOPIC, PARTITION, offsets[0], offsets[-1] + 1))
    with hang_limit(HANG_LIMIT_S):
        batches = list(decoder.changelog([Records(list(keys), list(values), offsets)]))
    return [row for batch in batches for row in batch.to_pylist()], decoder


def alone(spec: ReadSpec, key: bytes | None, value: bytes | None, offset: int) -> dict | None:
    """The row of one record decoded by itself, or None when it is skipped."""
    rows, _ = decode(spec, [key], [value], first=offset)
    return rows[0] if rows else None


def made_row(prepared: Prepared, key: bytes | None, value: bytes | None, offset: int) -> dict | None:
    """The changelog row a record of valid bytes reads as: the columns its key and value were made from (a
    tombstone's value columns null), or None when either part is not valid bytes."""
    if key not in prepared.key_rows or (value is not None and value not in prepared.value_rows):
        return None
    columns = dict.fromkeys(f.name for f in prepared.case.value_columns)
    if value is not None:
        columns.update(prepared.value_rows[value])
    kind = "delete" if value is None else "upsert"
    return {**prepared.key_rows[key], **columns, "_change_type": kind, "offset": offset}


def check(prepared: Prepared, keys: list[bytes | None], values: list[bytes | None]) -> None:
    """Decode with and without ignore-parse-errors: only the documented outcomes, each record's outcome the one
    it has alone, and a record of valid bytes read as the row they were made from (a decoder refusing what it
    should read, or reading it wrong, fails here)."""
    TRIED[prepared.case.name] += len(keys)
    offsets = list(range(FIRST_OFFSET, FIRST_OFFSET + len(keys)))
    rows, decoder = decode(prepared.skipping, keys, values)  # anything but RecordError fails the test here
    expected = [alone(prepared.skipping, k, v, o) for k, v, o in zip(keys, values, offsets)]
    made = [(row, made_row(prepared, k, v, o)) for row, k, v, o in zip(expected, keys, values, offsets)]
    wrong = [(r, m) for r, m in made if m is not None and (r is None or _comparable([r]) != _comparable([m]))]
    assert not wrong, f"valid bytes skipped or read otherwise (read, made from): {wrong[:2]}"
    assert _comparable(rows) == _comparable([r for r in expected if r is not None])
    skipped = [o for o, r, k in zip(offsets, expected, keys) if r is None and k is not None]
    assert decoder.bad_records == len(skipped), "every skip is counted"
    assert decoder.null_keys == keys.count(None)
    assert len(rows) + decoder.bad_records + decoder.null_keys == len(keys)

    try:
        strict_rows, strict = decode(prepared.spec, keys, values)
    except RecordError as e:
        match = _WHERE.search(str(e))
        assert match, f"the error names the record: {e}"
        role, offset, fmt = match.group(1), int(match.group(2)), match.group(3)
        assert offset in skipped, f"offset {offset} is a record that fails alone"
        assert fmt == (prepared.case.key_format if role == "key" else prepared.case.value_format)
        assert f"'{role}.{fmt}.ignore-parse-errors'" in str(e)
    else:
        assert not skipped, "a record that fails alone fails the read without ignore-parse-errors"
        assert _comparable(strict_rows) == _comparable(rows) and strict.bad_records == 0


def _comparable(rows: list[dict]) -> list[str]:
    """Rows as text: NaN equal to NaN (row dicts compare NaN unequal)."""
    return [repr(sorted(r.items())).replace("nan", "NaN") for r in rows]


# -- the inputs -------------------------------------------------------------------------------------------

INTERESTING = st.sampled_from(list(b'\x00\x01\x02\x7f\x80\xfe\xff"\\{}[],:;\n\r 9-.eE#')) | st.integers(0, 255)


@st.composite
def mutated(draw: st.DrawFn, valid: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(valid)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "repeat"]))
        if op == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and at < len(data):
            data[at] = draw(INTERESTING)
        elif op == "insert":
            data[at:at] = bytes(draw(st.lists(INTERESTING, min_size=1, max_size=4)))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


def payloads(valid: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.sampled_from(valid),
        mutated(valid),
        st.binary(max_size=64),
        st.sampled_from(valid).flatmap(lambda v: st.integers(0, len(v)).map(lambda n: v[:n])),
    )


@st.composite
def records(draw: st.DrawFn, prepared: Prepared) -> tuple[list[bytes | None], list[bytes | None]]:
    """A batch of records: keys and values each valid, mutated, random or truncated; a few null keys and
    tombstones."""
    n = draw(st.integers(1, 6))
    keys = draw(st.lists(st.none() | payloads(prepared.keys), min_size=n, max_size=n))
    values = draw(st.lists(st.none() | payloads(prepared.values), min_size=n, max_size=n))
    return keys, values


# A case of the avro-confluent format takes the session's Schema Registry (the `prepared` fixture asks for it).
CASE_PARAMS = [
    pytest.param(c, id=c.name, marks=[pytest.mark.broker] if "avro-confluent" in (c.key_format, c.value_format) else [])
    for c in CASES
]


# -- the tests ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("prepared", CASE_PARAMS, indirect=True)
def test_valid_records_decode_to_the_rows_they_were_made_from(prepared):
    """Every valid key with every valid value, and as a tombstone: the oracle that a decoder refusing every
    record, or reading one wrong, cannot pass (the fuzz tests below hold only that a record fails as documented)."""
    pairs = [(k, v) for k in prepared.keys for v in [*prepared.values, None]]
    keys, values = [k for k, _ in pairs], [v for _, v in pairs]
    rows, decoder = decode(prepared.spec, keys, values)
    made = [made_row(prepared, k, v, FIRST_OFFSET + i) for i, (k, v) in enumerate(pairs)]
    assert decoder.bad_records == 0 and _comparable(rows) == _comparable(made)


@pytest.mark.parametrize("prepared", CASE_PARAMS, indirect=True)
def test_valid_records_truncated_at_every_length_fail_only_as_documented(prepared):
    keys, values = prepared.keys, prepared.values
    for payload in values:
        cut = [payload[:n] for n in range(len(payload) + 1)]
        check(prepared, [keys[0]] * len(cut), cut)
    for payload in keys:
        cut = [payload[:n] for n in range(len(payload) + 1)]
        check(prepared, cut, [values[0]] * len(cut))


@pytest.mark.parametrize("prepared", CASE_PARAMS, indirect=True)
def test_random_mutated_and_truncated_records_fail_only_as_documented(prepared):
    @settings(max_examples=150)
    @given(records(prepared))
    def run(batch: tuple[list[bytes | None], list[bytes | None]]) -> None:
        check(prepared, *batch)

    run()


@pytest.mark.parametrize("prepared", CASE_PARAMS, indirect=True)
def test_a_batch_of_many_mutated_records_fails_only_as_documented(prepared):
    """Larger batches than hypothesis draws: the bulk paths (Arrow's JSON / CSV readers, one Avro buffer)
    meet bad records among many good ones."""
    rng = random.Random(f"{prepared.case.name}-batch")  # fixed: the same records on every run
    for _ in range(4):
        keys, values = [], []
        for _ in range(200):
            key, value = rng.choice(prepared.keys), rng.choice(prepared.values)
            keys.append(_mutate(rng, key) if rng.random() < 0.1 else key)
            values.append(_mutate(rng, value) if rng.random() < 0.2 else value)
        check(prepared, keys, values)


def _mutate(rng: random.Random, payload: bytes) -> bytes:
    data = bytearray(payload)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        choice = rng.random()
        if choice < 0.4 and at < len(data):
            data[at] = rng.randrange(256)
        elif choice < 0.7:
            data[at:at] = bytes([rng.randrange(256)])
        else:
            del data[at : at + rng.randint(1, 3)]
    return bytes(data)


# -- end to end, through the real broker ----------------------------------------------------------------


@pytest.mark.parametrize("case", [c for c in CASES if c.name in ("json", "avro", "csv")], ids=lambda c: c.name)
def test_mutated_records_read_end_to_end_are_skipped_or_named(spark, new_topic, bootstrap, case):
    topic = new_topic()
    prep = prepare(case, None)
    rng = random.Random(f"{case.name}-e2e")  # fixed: the same records on every run
    keys, values = [], []
    for i in range(60):
        key, value = prep.keys[i % len(prep.keys)], prep.values[i % len(prep.values)]
        keys.append(_mutate(rng, key) if i % 7 == 3 else key)
        values.append(_mutate(rng, value) if i % 3 == 1 else value)
    produce(bootstrap, topic, list(zip(keys, values)))
    expected = [alone(prep.skipping, k, v, offset) for offset, (k, v) in enumerate(zip(keys, values))]
    bad = [offset for offset, row in enumerate(expected) if row is None]
    assert bad, "some mutated records must fail, or this test proves nothing"
    TRIED[f"{case.name} (end to end)"] += len(keys)
    columns = ("offset", "id", "region", "name", "price")

    def read(ignore: bool) -> list[dict]:
        opts = {**case.options(ignore), "topic": topic, "properties.bootstrap.servers": bootstrap}
        df = spark.read.format("upsert-kafka").options(**opts).schema(case.table()).load()
        return [r.asDict() for r in df.select(*columns).orderBy("offset").collect()]

    assert read(ignore=True) == [{c: row[c] for c in columns} for row in expected if row is not None]

    with pytest.raises(Exception) as err:
        read(ignore=False)
    where = f"cannot decode the (key|value) of the record at topic '{topic}' partition 0 offset (\\d+)"
    found = re.search(where, str(err.value))
    assert found and int(found.group(2)) in bad
