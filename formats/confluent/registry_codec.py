"""What every format through a Confluent-compatible schema registry shares (avro-confluent, json-confluent,
protobuf-confluent, debezium-avro-confluent): the registry options (Flink's names), the registry's settings and
credentials read from them, the subjects a table's schema lives under, and the checks on those subjects (the
registry takes the schema under each, one schema id for all, the subjects' latest schemas agree on the columns).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from ...kernel.errors import FormatOptionError
from ...kernel.option_kinds import FORMAT, Choice, Flag, Option, OptionValues, Text
from ..codec import Codec, CodecContext
from .registry import RegistrySettings, SchemaRegistry, registry_client, split_credentials
from .registry_errors import RegistryError

# `schema-registry.url` / `.subject`: Flink's older spellings (its 1.13 release notes; Flink keeps them).
URL: Option[str | None] = Option(
    "url",
    None,
    FORMAT,
    "The schema registry's address.",
    ("schema-registry.url",),
    kind=Text(),
    note="required",
)
SUBJECT: Option[str | None] = Option(
    "subject",
    None,
    FORMAT,
    "The subject the schema is registered under (required with `topic-pattern`).",
    ("schema-registry.subject",),
    kind=Text(),
    note="`<topic>-key` / `<topic>-value`",
)
AUTO_REGISTER_SCHEMAS = Option(
    "auto.register.schemas", "true", FORMAT, "Register the write schema when missing.", kind=Flag()
)
BASIC_AUTH_CREDENTIALS_SOURCE: Option[str | None] = Option(
    "basic-auth.credentials-source",
    None,
    FORMAT,
    "Where the registry's basic credentials come from: `USER_INFO` (`basic-auth.user-info`) or `URL`.",
    kind=Choice(("USER_INFO", "URL")),
)
BASIC_AUTH_USER_INFO: Option[str | None] = Option(
    "basic-auth.user-info", None, FORMAT, "`<user>:<password>` for the registry.", kind=Text()
)
BEARER_AUTH_CREDENTIALS_SOURCE: Option[str | None] = Option(
    "bearer-auth.credentials-source",
    None,
    FORMAT,
    "Where the registry's bearer token comes from: `STATIC_TOKEN` (`bearer-auth.token`).",
    kind=Choice(("STATIC_TOKEN",)),
)
BEARER_AUTH_TOKEN: Option[str | None] = Option(
    "bearer-auth.token", None, FORMAT, "The registry's bearer token.", kind=Text()
)
SSL_KEYSTORE_LOCATION: Option[str | None] = Option(
    "ssl.keystore.location", None, FORMAT, "A PEM file with this client's certificate and key.", kind=Text()
)
SSL_KEYSTORE_PASSWORD: Option[str | None] = Option(
    "ssl.keystore.password", None, FORMAT, "The password of the key in the key store.", kind=Text()
)
SSL_TRUSTSTORE_LOCATION: Option[str | None] = Option(
    "ssl.truststore.location", None, FORMAT, "A PEM file with the registry's CA certificates.", kind=Text()
)
SSL_TRUSTSTORE_PASSWORD: Option[str | None] = Option(
    "ssl.truststore.password", None, FORMAT, "Needs `ssl.truststore.location`.", kind=Text()
)

#: The registry options of every Confluent-registry format: Flink's names.
REGISTRY_OPTIONS = (
    URL,
    SUBJECT,
    AUTO_REGISTER_SCHEMAS,
    BASIC_AUTH_CREDENTIALS_SOURCE,
    BASIC_AUTH_USER_INFO,
    BEARER_AUTH_CREDENTIALS_SOURCE,
    BEARER_AUTH_TOKEN,
    SSL_KEYSTORE_LOCATION,
    SSL_KEYSTORE_PASSWORD,
    SSL_TRUSTSTORE_LOCATION,
    SSL_TRUSTSTORE_PASSWORD,
)


class RegistryCodec(Codec):
    """A format whose records name their writer schema by a Schema Registry id: the registry's settings and the
    subjects written under, shared by avro-confluent, json-confluent and protobuf-confluent."""

    def __init__(self, options: Mapping[str, str], context: CodecContext) -> None:
        super().__init__(options, context)
        values = self.option_values
        self.auto_register = values.value(AUTO_REGISTER_SCHEMAS)
        self.subject = (values.value(SUBJECT) or "").strip() or None
        self.settings = _settings(values, self.prefix)

    #: Each subject's latest schema, fetched once for the codec (reader_view).
    _reader_view: dict[str, Any] | None = None

    def reader_view(self, fetch: Callable[[str], Any]) -> dict[str, Any]:
        """The subjects' latest schemas, as `fetch(subject)` gives each, that records of every writer version are
        read as (a subject without versions yet: none; a topic pattern without option `subject`: none). Fetched once:
        on the driver when the query is planned, then shipped with the codec to every task, so a running stream
        reads with the view it started with and takes a later version's at its next start."""
        if self._reader_view is None:
            found: dict[str, Any] = {}
            for subject in self.read_subjects():
                try:
                    found[subject] = fetch(subject)
                except RegistryError as e:
                    if e.code != 40401:  # not: no such subject
                        raise
            self._reader_view = found
        return self._reader_view

    def prime_reader(self, schema: pa.Schema) -> None:
        """On the driver, when a read is planned: fetch the reader's view (reader_view) that every task then reads
        with, and refuse a view that cannot be read, before any task. A decoder built without it (the options'
        check) fetches it when it first decodes."""

    def agreed_subject(self, by_subject: Mapping[str, Any], what: str, given_by: str) -> str:
        """The first subject of a topic list's, after checking the others hold the same (`what` differs otherwise,
        named in the error with `given_by`, what gives it instead): a record reads alike whichever topic it is of."""
        first, value = next(iter(by_subject.items()))
        differ = [s for s, v in by_subject.items() if v != value]
        if differ:
            raise FormatOptionError(
                f"the subjects {first} and {differ[0]} hold {what}, so a record would read differently by topic; set "
                f"'{self.prefix}{SUBJECT.name}' to read with one subject's, or give it with {given_by}"
            )
        return first

    def read_subjects(self) -> tuple[str, ...]:
        """The subjects a read's records are of (none for a topic pattern without option `subject`)."""
        return self.subjects() if self.subject or self.context.topics else ()

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
                f"option '{self.prefix}{SUBJECT.name}' is required here: the topics are given by a pattern, so "
                "there is no default '<topic>-key' / '<topic>-value' subject"
            )
        return tuple(f"{topic}-{self.context.role}" for topic in self.context.topics)

    def check_registrable(self, writer: Any, kind: str) -> None:
        """A write's check before any task runs: the registry takes the writer schema (of `kind`) under every subject
        written (registered, or with auto.register.schemas=false held there)."""
        for subject in self.subjects():
            refused = self.registry.refusal(subject, writer, self.auto_register, kind)
            if refused is not None:
                raise FormatOptionError(refused)

    def one_schema_id(self, ids: Mapping[str, int], what: str) -> int:
        """The one schema id `what` has under the subjects written (`ids`: per subject): a record's header holds one
        id, whichever topic it goes to."""
        if len(set(ids.values())) > 1:
            raise FormatOptionError(
                f"{what} has different ids under the subjects {dict(ids)}; set '{self.prefix}{SUBJECT.name}' to "
                "write every topic under one subject"
            )
        return next(iter(ids.values()))

    def agreed_columns(self, columns_of: Callable[[str], pa.Schema], given_by: str) -> pa.Schema:
        """The table's columns read from the registry (`columns_of(subject)`: those of a subject's latest schema):
        the subjects of a topic list must agree on them, else the columns are ambiguous (`given_by`: the option
        that gives them instead)."""
        latest = {subject: columns_of(subject) for subject in self.subjects()}
        first, columns = next(iter(latest.items()))
        differ = [s for s, c in latest.items() if c != columns]
        if differ:
            raise FormatOptionError(
                f"the subjects {', '.join(latest)} hold different latest schemas ({differ[0]}: "
                f"{', '.join(latest[differ[0]].names)}; {first}: {', '.join(columns.names)}), so the table's "
                f"columns are ambiguous: give them with .schema(...) or {given_by}, or set "
                f"'{self.prefix}{SUBJECT.name}' to read them from one subject"
            )
        return columns


def _settings(options: OptionValues, prefix: str) -> RegistrySettings:
    raw_url = (options.value(URL) or "").strip()
    if not raw_url:
        raise FormatOptionError(
            f"option '{prefix}{URL.name}' is required: the schema registry's address, e.g. http://registry:8081"
        )
    url, url_info = split_credentials(raw_url)
    if not url.startswith(("http://", "https://")):
        raise FormatOptionError(f"option '{prefix}{URL.name}' must start with http:// or https://, got '{url}'")
    basic = _basic_user_info(options, prefix, url_info)
    bearer = _bearer_token(options, prefix)
    if basic and bearer:
        raise FormatOptionError(
            f"options '{prefix}basic-auth.*' and '{prefix}bearer-auth.*' cannot both be set: choose one"
        )
    if options.value(SSL_TRUSTSTORE_PASSWORD) is not None and options.value(SSL_TRUSTSTORE_LOCATION) is None:
        raise FormatOptionError(
            f"option '{prefix}{SSL_TRUSTSTORE_PASSWORD.name}' needs '{prefix}{SSL_TRUSTSTORE_LOCATION.name}'"
        )
    return RegistrySettings(
        url=url,
        user_info=basic,
        bearer_token=bearer,
        ca_file=_pem_file(options, SSL_TRUSTSTORE_LOCATION, prefix),
        cert_file=_pem_file(options, SSL_KEYSTORE_LOCATION, prefix),
        key_password=options.value(SSL_KEYSTORE_PASSWORD),
    )


def _basic_user_info(options: OptionValues, prefix: str, url_info: str | None) -> str | None:
    user_info = options.value(BASIC_AUTH_USER_INFO)
    source = options.value(BASIC_AUTH_CREDENTIALS_SOURCE) or ("USER_INFO" if user_info is not None else "URL")
    if source == "USER_INFO":
        if not user_info or ":" not in user_info:
            raise FormatOptionError(
                f"option '{prefix}{BASIC_AUTH_USER_INFO.name}' must be '<user>:<password>' with "
                f"{BASIC_AUTH_CREDENTIALS_SOURCE.name} USER_INFO"
            )
        return user_info
    return url_info


def _bearer_token(options: OptionValues, prefix: str) -> str | None:
    token = options.value(BEARER_AUTH_TOKEN)
    # STATIC_TOKEN, the one source: it needs the token.
    if options.value(BEARER_AUTH_CREDENTIALS_SOURCE) is not None and not token:
        raise FormatOptionError(
            f"option '{prefix}{BEARER_AUTH_TOKEN.name}' is required with a bearer credentials source"
        )
    return token or None


def _pem_file(options: OptionValues, option: Option[str | None], prefix: str) -> str | None:
    """A trust or key store path. Python's TLS reads PEM, not Java's JKS / PKCS#12 stores."""
    name = option.name
    path = (options.value(option) or "").strip()
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
