"""protobuf-confluent with a message type whose file imports others two levels deep (tests/formats/data/protobuf/
depot: order.proto imports item.proto, which imports money.proto; order.proto imports money.proto too, and a builtin
file), on the session's registry, against confluent-kafka's own ProtobufSerializer and ProtobufDeserializer: the
imported files are registered under their own names and reused, so a topic Confluent's serializer wrote takes the
connector's appends under the same schema id, and the connector writes a topic twice. Apicurio answers 422 to a
compatibility check of any Protobuf schema with references, even one it holds (3.3.3): the connector looks a schema
up first and asks the check only for one the registry does not hold. And the generated modules, shipped with
SparkContext.addPyFile, reach every process of the session."""

from __future__ import annotations

import base64
import datetime as dt
import importlib
import shutil
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from pyspark_upsert_kafka.formats.confluent.registry_errors import http_reason

from integration.protobuf_golden import protoc
from tests.support.kafka_io import consume_all, produce
from tests.support.write_helpers import write
from tests.workers import tsv_codec

SOURCES = Path(__file__).parent / "data" / "protobuf" / "depot"
COLUMNS = (
    "id INT, item STRUCT<sku: STRING, unit_price: STRUCT<currency: STRING, units: BIGINT>>, "
    "discount STRUCT<currency: STRING, units: BIGINT>, placed_at TIMESTAMP, notes ARRAY<STRING>"
)
AT = dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=dt.timezone.utc)  # an instant before the epoch
ROWS = [(1, ("book", ("EUR", 12)), ("EUR", -2), AT, ["gift", ""]), (2, None, None, None, [])]


@dataclass
class Depot:
    """The depot files compiled under a fresh name: an imported file's subject is its file name, registry-wide, so
    each test's imports are new to the registry (and its generated classes to this process's descriptor pool)."""

    name: str
    descriptor_set: str
    generated: Path  # holds the package <name> of generated modules
    order: type  # the generated <name>.order_pb2.Order

    @property
    def imported(self) -> list[str]:
        return [f"{self.name}/money.proto", f"{self.name}/item.proto"]

    def options(self, opts: dict, url: str, module: bool = False) -> dict:
        """Options writing Order values: defined by the descriptor set, or with `module` by the generated module."""
        fmt = "value.protobuf-confluent"
        option, value = (
            ("python-module", f"{self.name}.order_pb2") if module else ("descriptor-file", self.descriptor_set)
        )
        return opts | {
            "value.format": "protobuf-confluent",
            "value.fields-include": "ALL",
            f"{fmt}.url": url,
            f"{fmt}.message-class-name": f"{self.name}.Order",
            f"{fmt}.{option}": value,
        }

    def message(self, row: tuple) -> object:
        """The Order a row is written as."""
        id_, item, discount, at, notes = row
        order = self.order(id=id_, notes=notes)
        if item is not None:
            order.item.sku, (order.item.unit_price.currency, order.item.unit_price.units) = item[0], item[1]
        if discount is not None:
            order.discount.currency, order.discount.units = discount
        if at is not None:
            order.placed_at.FromDatetime(at)
        return order


@pytest.fixture
def depot(tmp_path: Path) -> Depot:
    name = f"depot{uuid.uuid4().hex[:8]}"
    sources, generated = tmp_path / "proto", tmp_path / "generated"
    (sources / name).mkdir(parents=True)
    generated.mkdir()
    for proto in SOURCES.glob("*.proto"):
        (sources / name / proto.name).write_text(proto.read_text().replace("depot", name))
    protoc(sources, sorted((sources / name).glob("*.proto")), tmp_path / "depot.desc", generated)
    sys.path.insert(0, str(generated))
    try:
        importlib.invalidate_caches()
        order = importlib.import_module(f"{name}.order_pb2").Order
    finally:
        sys.path.remove(str(generated))
    return Depot(name, str(tmp_path / "depot.desc"), generated, order)


def versions(client: SchemaRegistryClient, subjects: list[str]) -> dict[str, list[int]]:
    return {s: client.get_versions(s) for s in subjects}


def confluent_reads(depot: Depot, bootstrap: str, topic: str) -> list:
    """Every record's value as Confluent's ProtobufDeserializer reads it (with the generated class: on Apicurio it
    cannot fetch a Protobuf writer schema, test_format_protobuf.py says why)."""
    deserialize = ProtobufDeserializer(depot.order, {"use.deprecated.format": False})
    return [deserialize(v, SerializationContext(topic, MessageField.VALUE)) for *_, v in consume_all(bootstrap, topic)]


def schema_ids(bootstrap: str, topic: str) -> set[int]:
    return {int.from_bytes(v[1:5], "big") for *_, v in consume_all(bootstrap, topic)}


def test_a_topic_confluents_serializer_wrote_takes_the_connectors_appends_under_the_same_schemas(
    spark, new_topic, options, bootstrap, registry_url, depot
):
    topic = new_topic()
    client = SchemaRegistryClient({"url": registry_url, "timeout": 20})
    serialize = ProtobufSerializer(depot.order, client, {"use.deprecated.format": False})
    first = depot.order(id=0, notes=["first"])
    produce(bootstrap, topic, [(b'{"id":0}', serialize(first, SerializationContext(topic, MessageField.VALUE)))])
    subjects = [*depot.imported, f"{topic}-value"]
    registered = versions(client, subjects)
    assert registered == {s: [1] for s in subjects}
    references = client.get_latest_version(f"{topic}-value").schema.references
    assert sorted((r.name, r.subject) for r in references) == sorted((f, f) for f in depot.imported)

    opts = depot.options(options(topic), registry_url)
    write(spark, opts, ROWS[:1], COLUMNS)
    write(spark, opts, ROWS[1:], COLUMNS)

    assert versions(client, subjects) == registered  # nothing registered again: every schema was found
    assert schema_ids(bootstrap, topic) == {client.get_latest_version(f"{topic}-value").schema_id}
    assert confluent_reads(depot, bootstrap, topic) == [first, *map(depot.message, ROWS)]


def test_the_connector_writes_a_topic_twice_and_confluents_serializer_appends_under_the_same_schemas(
    spark, new_topic, options, bootstrap, registry_url, depot
):
    topic = new_topic()
    client = SchemaRegistryClient({"url": registry_url, "timeout": 20})
    opts = depot.options(options(topic), registry_url)
    write(spark, opts, ROWS[:1], COLUMNS)
    subjects = [*depot.imported, f"{topic}-value"]
    assert versions(client, subjects) == {s: [1] for s in subjects}
    # The imported files as confluent-kafka registers them from the generated module (a look-up finds them).
    for file in (depot.order.DESCRIPTOR.file.dependencies[1], depot.order.DESCRIPTOR.file.dependencies[2]):
        held = client.get_latest_version(file.name).schema.schema_str
        assert base64.b64decode(held) == file.serialized_pb

    write(spark, opts, ROWS[1:], COLUMNS)  # the write that met HTTP 422 from the compatibility check
    serialize = ProtobufSerializer(depot.order, client, {"use.deprecated.format": False})
    last = depot.order(id=3, notes=["last"])
    produce(bootstrap, topic, [(b'{"id":3}', serialize(last, SerializationContext(topic, MessageField.VALUE)))])

    assert versions(client, subjects) == {s: [1] for s in subjects}
    assert len(schema_ids(bootstrap, topic)) == 1
    assert confluent_reads(depot, bootstrap, topic) == [*map(depot.message, ROWS), last]
    back = spark.read.format("upsert-kafka").options(**opts, **{"read.mode": "table"}).schema(COLUMNS).load()
    assert sorted(back.selectExpr("id", "item", "discount", "unix_micros(placed_at)", "notes").collect()) == [
        (1, ("book", ("EUR", 12)), ("EUR", -2), -1_500_000, ["gift", ""]),
        (2, None, None, None, []),
        (3, None, None, None, ["last"]),
    ]


def test_an_imported_file_its_subject_refuses_fails_the_write_naming_that_subject_and_what_to_do(
    spark, new_topic, options, bootstrap, registry_url, depot
):
    """An imported file whose subject holds an incompatible version: refused before any task, naming the file's
    subject (not the topic's) and a change that helps (the format's 'subject' option cannot: it names the topic's)."""
    from confluent_kafka.schema_registry import ServerConfig
    from confluent_kafka.schema_registry.common.schema_registry_client import ConfigCompatibilityLevel

    topic = new_topic()
    client = SchemaRegistryClient({"url": registry_url, "timeout": 20})
    money = f"{depot.name}/money.proto"
    other = descriptor_pb2.FileDescriptorProto()
    depot.order.DESCRIPTOR.file.dependencies[2].CopyToProto(other)
    other.message_type[0].field[1].type = descriptor_pb2.FieldDescriptorProto.TYPE_STRING  # units: int64 -> string
    client.register_schema(money, Schema(base64.b64encode(other.SerializeToString()).decode(), "PROTOBUF"))
    client.set_config(money, ServerConfig(compatibility=ConfigCompatibilityLevel.BACKWARD))

    with pytest.raises(Exception) as err:
        write(spark, depot.options(options(topic), registry_url), ROWS[:1], COLUMNS)

    message = str(err.value)
    assert f"refuses the imported file under subject '{money}'" in message
    assert "make the change compatible, or rename the changed file" in message
    assert "'subject' option" not in message
    assert consume_all(bootstrap, topic) == []
    assert client.get_versions(money) == [1]
    assert f"{topic}-value" not in client.get_subjects()


def test_generated_modules_and_a_codec_shipped_in_a_zip_after_the_session_started_reach_its_every_process(
    spark, new_topic, options, bootstrap, registry_url, depot, tmp_path
):
    """Option python-module and a `module:Class` codec, shipped with SparkContext.addPyFile as a zip once the session
    runs: the source (installed, registered as the session started) has no python includes, so Spark puts the zip
    on neither its planning process's sys.path nor its tasks' (issue 51); the connector's import finds it in
    SparkFiles' root (formats/user_modules.py)."""
    topic = new_topic()
    # The generated package (protoc writes no __init__.py: a zip of its folder records the folder, as `zip -r`
    # does, or Python finds no package in it) and a codec module beside it.
    shutil.copy(tsv_codec.__file__, depot.generated / f"{depot.name}_tsv.py")
    shipped = shutil.make_archive(str(tmp_path / depot.name), "zip", depot.generated)
    spark.sparkContext.addPyFile(shipped)
    opts = depot.options(options(topic), registry_url, module=True) | {"key.format": f"{depot.name}_tsv:TsvCodec"}

    write(spark, opts, ROWS, COLUMNS)

    assert [k for *_, k, _ in consume_all(bootstrap, topic)] == [b"1", b"2"]
    assert confluent_reads(depot, bootstrap, topic) == [depot.message(r) for r in ROWS]
    back = spark.read.format("upsert-kafka").options(**opts, **{"read.mode": "table"}).schema(COLUMNS).load()
    assert sorted(back.selectExpr("id", "item", "notes").collect()) == [
        (1, ("book", ("EUR", 12)), ["gift", ""]),
        (2, None, []),
    ]


@pytest.mark.parametrize(
    ("status", "code", "says"),
    [
        (422, 42201, "e.g. one that holds schemas of another type: rename the imported file"),
        (409, 409, "compatibility rule rejects this schema: make the change compatible, or rename the imported file"),
        (404, 40401, "has no schema: write with auto.register.schemas=true first)"),
        (404, 40403, "the schema is not registered under subject 'depot/item.proto' (an imported file"),
    ],
)
def test_a_refusal_of_an_imported_files_subject_names_it_and_a_step_the_subject_option_cannot_be(status, code, says):
    """The format's 'subject' option names the topic's subject; an imported file's subject is its file name."""
    imported = http_reason(status, code, "refused", "depot/item.proto", imported=True)
    assert "subject 'depot/item.proto' (an imported file, registered under its own name)" in imported
    assert says in imported and "'subject'" not in imported
    own = http_reason(status, code, "refused", "orders-value")
    assert "subject 'orders-value'" in own and "imported" not in own
