"""Avro in the Confluent wire format (magic byte 0, 4-byte big-endian schema id, Avro body), with a Schema
Registry, as Flink's `avro-confluent` format: what Confluent's KafkaAvroSerializer writes and its
KafkaAvroDeserializer reads.

Writing registers (or, with auto.register.schemas=false, looks up) the table's schema, or the one given
with option `schema`, under the subject `<topic>-key` / `<topic>-value` of every topic written (or option
`subject`; required with `topic-pattern`). Reading fetches each record's writer schema by its id and
resolves it to the table's columns. Ids and schemas are cached per process (per executor).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from .avro_codec import TIMESTAMP_MAPPING_LEGACY, AvroBodyReader, AvroEncoder, AvroSchema
from .avro_schema import AVRO_TYPES, arrow_schema, table_avro_schema
from .avro_vector import Layout
from .codec import (
    IGNORE_PARSE_ERRORS,
    Codec,
    CodecContext,
    Decoded,
    Decoder,
    Encoder,
    FormatOptionError,
    empty_batch,
)
from .confluent_wire import HEADER, framed_ids, header, not_framed
from .option_kinds import FORMAT, Choice, Flag, Option, OptionValues, Text
from .schema_registry import (
    RegistryError,
    RegistrySettings,
    SchemaNotUsable,
    SchemaRegistry,
    registry_client,
    split_credentials,
)

NOT_FRAMED = not_framed("the Avro body")
# Flink's name for a schema derived from a table, so both write compatible versions of one subject.
FLINK_NAMESPACE = "org.apache.flink.avro.generated"


#: The registry options of every Confluent-registry format (avro-confluent, protobuf-confluent): Flink's names.
REGISTRY_OPTIONS = (
    # `schema-registry.url` / `.subject`: Flink's older spellings (its 1.13 release notes; Flink keeps them).
    Option(
        "url",
        None,
        FORMAT,
        "The schema registry's address.",
        ("schema-registry.url",),
        kind=Text(),
        note="required",
    ),
    Option(
        "subject",
        None,
        FORMAT,
        "The subject the schema is registered under (required with `topic-pattern`).",
        ("schema-registry.subject",),
        kind=Text(),
        note="`<topic>-key` / `<topic>-value`",
    ),
    Option("auto.register.schemas", "true", FORMAT, "Register the write schema when missing.", kind=Flag()),
    Option(
        "basic-auth.credentials-source",
        None,
        FORMAT,
        "Where the registry's basic credentials come from: `USER_INFO` (`basic-auth.user-info`) or `URL`.",
        kind=Choice(("USER_INFO", "URL")),
    ),
    Option("basic-auth.user-info", None, FORMAT, "`<user>:<password>` for the registry.", kind=Text()),
    Option(
        "bearer-auth.credentials-source",
        None,
        FORMAT,
        "Where the registry's bearer token comes from: `STATIC_TOKEN` (`bearer-auth.token`).",
        kind=Choice(("STATIC_TOKEN",)),
    ),
    Option("bearer-auth.token", None, FORMAT, "The registry's bearer token.", kind=Text()),
    Option("ssl.keystore.location", None, FORMAT, "A PEM file with this client's certificate and key.", kind=Text()),
    Option("ssl.keystore.password", None, FORMAT, "The password of the key in the key store.", kind=Text()),
    Option("ssl.truststore.location", None, FORMAT, "A PEM file with the registry's CA certificates.", kind=Text()),
    Option("ssl.truststore.password", None, FORMAT, "Needs `ssl.truststore.location`.", kind=Text()),
)


class RegistryCodec(Codec):
    """A format whose records name their writer schema by a Schema Registry id: the registry's settings and the
    subjects written under, shared by avro-confluent, json-confluent and protobuf-confluent."""

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        values = self.option_values
        self.auto_register = values.value("auto.register.schemas")
        self.subject = (values.value("subject") or "").strip() or None
        self.settings = _settings(values, self.prefix)

    def __repr__(self) -> str:  # the options hold credentials: show only what is safe
        return f"{type(self).__name__}({self.context.role}, {self.settings!r}, subject={self.subject!r})"

    @property
    def registry(self) -> SchemaRegistry:
        return registry_client(self.settings)

    def subjects(self) -> tuple[str, ...]:
        """The subjects the table's schema lives under: option `subject`, else Flink's TopicNameStrategy,
        `<topic>-key` / `<topic>-value` for every topic of a topic list."""
        if self.subject:
            return (self.subject,)
        if not self.context.topics:
            raise FormatOptionError(
                f"option '{self.prefix}subject' is required here: the topics are given by a pattern, so "
                "there is no default '<topic>-key' / '<topic>-value' subject"
            )
        return tuple(f"{topic}-{self.context.role}" for topic in self.context.topics)


class AvroConfluentCodec(RegistryCodec):
    name = "avro-confluent"
    declared_options = (
        *REGISTRY_OPTIONS[:2],
        Option(
            "schema", None, FORMAT, "The Avro schema to write (default: derived from the columns).", kind=AvroSchema()
        ),
        *REGISTRY_OPTIONS[2:],
        Option("record-name", "record", FORMAT, "The record name of a derived schema.", kind=Text()),
        Option("record-namespace", FLINK_NAMESPACE, FORMAT, "The namespace of a derived schema.", kind=Text()),
        TIMESTAMP_MAPPING_LEGACY,
        IGNORE_PARSE_ERRORS,
    )
    column_types = AVRO_TYPES

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        values = self.option_values
        self.given_schema = values.value("schema")
        self.record_name = values.value("record-name").strip()
        self.record_namespace = values.value("record-namespace").strip() or None
        self.legacy_timestamps = values.value(TIMESTAMP_MAPPING_LEGACY.name)

    def decoder(self, schema: pa.Schema) -> Decoder:
        return ConfluentDecoder(self.registry, schema, self.legacy_timestamps)

    def writer_schema(self, schema: pa.Schema) -> dict:
        """The schema records are written with: option `schema`, else the table's as Flink derives it (a key's
        columns NOT NULL), so a key subject holds the schema Flink's and Confluent's producers register."""
        return self.given_schema or table_avro_schema(
            schema, self.context.role, self.record_name, self.record_namespace, self.legacy_timestamps
        )

    def check_writable(self, schema: pa.Schema) -> None:
        writer = self.writer_schema(schema)
        for subject in self.subjects():
            refused = self.registry.refusal(subject, writer, register=self.auto_register)
            if refused is not None:
                raise FormatOptionError(refused)

    def encoder(self, schema: pa.Schema) -> Encoder:
        writer = self.writer_schema(schema)
        ids = {s: self.registry.schema_id(s, writer, register=self.auto_register) for s in self.subjects()}
        if len(set(ids.values())) > 1:  # a record header holds one id, whichever topic it goes to
            raise FormatOptionError(
                f"the table's schema has different ids under the subjects {ids}; set '{self.prefix}subject' "
                "to write every topic under one subject"
            )
        derived = self.given_schema is None
        return AvroEncoder(schema, writer, derived, header(next(iter(ids.values()))), self.legacy_timestamps)

    def inferred_schema(self) -> pa.Schema | None:
        """The subjects' latest registered schema as columns (the table's schema when none is given); the
        subjects of a topic list must agree on it."""
        if self.given_schema is not None:
            return arrow_schema(self.given_schema)
        latest = {subject: arrow_schema(self.registry.latest(subject)[1]) for subject in self.subjects()}
        columns = next(iter(latest.values()))
        differ = [s for s, c in latest.items() if c != columns]
        if differ:
            raise FormatOptionError(
                f"the subjects {', '.join(latest)} hold different latest schemas ({differ[0]}: "
                f"{', '.join(latest[differ[0]].names)}; {next(iter(latest))}: {', '.join(columns.names)}), so "
                f"the table's columns are ambiguous: give them with .schema(...) or option 'schema', or set "
                f"'{self.prefix}subject' to read them from one subject"
            )
        return columns


def _settings(options: OptionValues, prefix: str) -> RegistrySettings:
    raw_url = (options.value("url") or "").strip()
    if not raw_url:
        raise FormatOptionError(
            f"option '{prefix}url' is required: the schema registry's address, e.g. http://registry:8081"
        )
    url, url_info = split_credentials(raw_url)
    if not url.startswith(("http://", "https://")):
        raise FormatOptionError(f"option '{prefix}url' must start with http:// or https://, got '{url}'")
    basic = _basic_user_info(options, prefix, url_info)
    bearer = _bearer_token(options, prefix)
    if basic and bearer:
        raise FormatOptionError(
            f"options '{prefix}basic-auth.*' and '{prefix}bearer-auth.*' cannot both be set: choose one"
        )
    if options.value("ssl.truststore.password") is not None and options.value("ssl.truststore.location") is None:
        raise FormatOptionError(f"option '{prefix}ssl.truststore.password' needs '{prefix}ssl.truststore.location'")
    return RegistrySettings(
        url=url,
        user_info=basic,
        bearer_token=bearer,
        ca_file=_pem_file(options, "ssl.truststore.location", prefix),
        cert_file=_pem_file(options, "ssl.keystore.location", prefix),
        key_password=options.value("ssl.keystore.password"),
    )


def _basic_user_info(options: OptionValues, prefix: str, url_info: str | None) -> str | None:
    user_info = options.value("basic-auth.user-info")
    source = options.value("basic-auth.credentials-source") or ("USER_INFO" if user_info is not None else "URL")
    if source == "USER_INFO":
        if not user_info or ":" not in user_info:
            raise FormatOptionError(
                f"option '{prefix}basic-auth.user-info' must be '<user>:<password>' with "
                "basic-auth.credentials-source USER_INFO"
            )
        return user_info
    return url_info


def _bearer_token(options: OptionValues, prefix: str) -> str | None:
    token = options.value("bearer-auth.token")
    # STATIC_TOKEN, the one source: it needs the token.
    if options.value("bearer-auth.credentials-source") is not None and not token:
        raise FormatOptionError(f"option '{prefix}bearer-auth.token' is required with a bearer credentials source")
    return token or None


def _pem_file(options: OptionValues, name: str, prefix: str) -> str | None:
    """A trust or key store path. Python's TLS reads PEM, not Java's JKS / PKCS#12 stores."""
    path = (options.value(name) or "").strip()
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise FormatOptionError(f"option '{prefix}{name}': cannot read '{path}': {e.strerror}") from None
    if b"-----BEGIN" not in head:
        raise FormatOptionError(
            f"option '{prefix}{name}': '{path}' is not a PEM file. Python reads PEM certificates and keys: "
            "convert a JKS or PKCS#12 store, e.g. `openssl pkcs12 -in store.p12 -out store.pem -nodes`"
        )
    return path


class ConfluentDecoder(Decoder):
    def __init__(self, registry: SchemaRegistry, schema: pa.Schema, legacy_timestamps: bool = True) -> None:
        self.registry = registry
        self.schema = schema
        self.legacy_timestamps = legacy_timestamps
        # Per schema id: its reader, or why no record with that id can be read (asked once per task).
        self.readers: dict[int, AvroBodyReader | str] = {}

    def decode(self, payloads: Sequence[bytes]) -> Decoded:
        layout = Layout.of(payloads)
        framed, ids = framed_ids(layout)
        failures = dict.fromkeys(np.flatnonzero(~framed).tolist(), NOT_FRAMED)
        parts: list[tuple[np.ndarray | None, pa.RecordBatch]] = []
        if not failures and len(payloads) and (ids == ids[0]).all():
            groups: list[tuple[int, np.ndarray | None]] = [(int(ids[0]), None)]  # the usual: one id, all rows
        else:
            groups = [(int(i), np.flatnonzero(framed & (ids == i))) for i in np.unique(ids[framed])]
        for schema_id, rows in groups:
            reader = self.readers.get(schema_id)
            if reader is None:
                reader = self.readers[schema_id] = self._reader(schema_id)
            if isinstance(reader, str):
                failures.update(dict.fromkeys(rows.tolist() if rows is not None else range(len(payloads)), reader))
                continue
            batch, failed = reader.decode(payloads, layout, rows, HEADER)
            failures.update(failed)
            if rows is not None and failed:
                rows = rows[~np.isin(rows, list(failed))]
            parts.append((rows, batch))
        return Decoded(_in_order(parts, self.schema), tuple(sorted(failures.items())))

    def _reader(self, schema_id: int) -> AvroBodyReader | str:
        """The reader of records written with this schema id, or the reason none can be read. A registry that
        cannot be reached or refuses us fails the task (RegistryError): that is no record's fault."""
        try:
            return AvroBodyReader(self.registry.schema(schema_id), self.schema, self.legacy_timestamps)
        except SchemaNotUsable as e:
            return f"the record's writer schema (id {schema_id}) cannot be had: {e}"
        except RegistryError:
            raise
        except Exception as e:  # fastavro's schema errors are of several types
            return f"the record's writer schema (id {schema_id}) cannot be read into the table's columns: {e}"


def _in_order(parts: list[tuple[np.ndarray | None, pa.RecordBatch]], schema: pa.Schema) -> pa.RecordBatch:
    """The batches decoded per schema id as one, its rows in the payloads' order (`rows`: the payload index of
    each batch row; None: the batch is every payload, in order)."""
    if len(parts) == 1 and parts[0][0] is None:
        return parts[0][1]
    if not parts:
        return empty_batch(schema)
    if len(parts) == 1:
        return parts[0][1]  # one id's rows, already in order
    order = np.argsort(np.concatenate([rows for rows, _ in parts]), kind="stable")
    table = pa.Table.from_batches([batch for _, batch in parts], schema=schema).take(order)
    return table.combine_chunks().to_batches()[0] if table.num_rows else empty_batch(schema)
