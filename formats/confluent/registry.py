"""The schema registry client of every registry format (avro-, json-, protobuf- and debezium-avro-confluent):
confluent-kafka's own maintained `SchemaRegistryClient` (HTTP, caching by id and by subject and schema, basic and
bearer auth, retries of transient failures with backoff, TLS with a custom CA and client certificates), behind the
few calls the codecs make.
It speaks the Confluent REST API, also served by Apicurio's ccompat API (`/apis/ccompat/v7`) and Karapace.

What is still ours, and why:
- One client per registry settings per process, so ids and schemas are fetched once per executor (the maintained
  client caches per client object; Spark builds codecs per task).
- Redirects: the maintained client follows none (an HTTP 307 fails). We let its HTTP session follow them under
  httpx's own rule: the Authorization header goes only to the configured origin (a redirect to another host or
  port, or from https to http, arrives without it; http:80 -> https:443 on the same host keeps it).
- A subject's latest schema is looked up every time (`cache.latest.ttl.sec` 0): a driver that plans a read
  after a new version was registered must see it.
- A static bearer token: the maintained client wants Confluent Cloud's logical cluster with it; other
  registries have none, so an empty one is sent (header `target-sr-cluster`, ignored elsewhere).
- Schema references: a writer schema that references others (registered under their own subjects) is
  returned with them inlined at first use, as the codec's Avro reader takes one self-contained schema; a
  Protobuf schema's references (imported files) come back as text by reference name (schema_text).
- Registering and checking as every Confluent-compatible registry takes it: a schema is registered as Confluent's
  serializers register it (idempotent), and a write's check looks it up before anything else, asking the subject's
  compatibility rule only about a schema the subject does not hold (Apicurio answers that question with HTTP 422
  for any Protobuf schema with references, even one it holds).
- Errors: the client's errors become RegistryError naming the registry (never its credentials), the subject at
  fault and what to change (registry_errors.py); "no such schema id" is SchemaNotUsable (the record's fault).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ...kernel.redaction import redact
from .registry_errors import ErrorMapping, RegistryError, SchemaNotUsable, check_avro, check_kind

if TYPE_CHECKING:  # confluent_kafka's registry client is imported where first used, as below
    from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaReference

_T = TypeVar("_T")

#: Schema references: (reference name, subject, version) each.
Refs = Sequence[tuple[str, str, int]]


@dataclass(frozen=True)
class RegistrySettings:
    url: str  # without credentials
    user_info: str | None = field(default=None, repr=False)  # basic auth, '<user>:<password>'
    bearer_token: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    cert_file: str | None = None  # PEM: the client certificate and its key (or a bundle of both)
    key_password: str | None = field(default=None, repr=False)
    timeout_s: float = 30.0

    def __repr__(self) -> str:
        auth = "basic" if self.user_info else "bearer" if self.bearer_token else "none"
        return f"RegistrySettings({self.url!r}, auth={auth}, ca_file={self.ca_file!r}, cert_file={self.cert_file!r})"

    def client_config(self) -> dict[str, Any]:
        """The maintained client's configuration."""
        config: dict[str, Any] = {"url": self.url, "timeout": self.timeout_s, "cache.latest.ttl.sec": 0}
        if self.user_info:
            config["basic.auth.user.info"] = self.user_info
        if self.bearer_token:
            config |= {
                "bearer.auth.credentials.source": "STATIC_TOKEN",
                "bearer.auth.token": self.bearer_token,
                "bearer.auth.logical.cluster": "",
            }
        if self.ca_file:
            config["ssl.ca.location"] = self.ca_file
        if self.cert_file:
            config["ssl.certificate.location"] = self.cert_file
            if self.key_password is not None:
                config["ssl.key.password"] = self.key_password
        return config

    def secrets(self) -> list[str]:
        return [s for s in (self.user_info, self.bearer_token, self.key_password) if s]


def split_credentials(url: str) -> tuple[str, str | None]:
    """The URL without its `user:password@` part, and that part, unquoted (None when absent)."""
    parts = urllib.parse.urlsplit(url.strip())
    if "@" not in parts.netloc:
        return url.strip().rstrip("/"), None
    user_info, host = parts.netloc.rsplit("@", 1)  # the host part keeps an IPv6 literal's brackets
    return urllib.parse.urlunsplit(parts._replace(netloc=host)).rstrip("/"), urllib.parse.unquote(user_info)


class SchemaRegistry:
    def __init__(self, settings: RegistrySettings) -> None:
        from confluent_kafka.schema_registry import SchemaRegistryClient

        self.settings = settings
        try:
            self._client = SchemaRegistryClient(settings.client_config())
        except (ValueError, TypeError, OSError) as e:  # a CA or key file that cannot be loaded, a bad setting
            raise RegistryError(f"schema registry {settings.url}: {self._clean(e)}") from None
        self._equal: dict[tuple[str, str | None, tuple[tuple[str, str, int], ...]], int | None] = {}  # equal_id's
        # Follow redirects with httpx's rule: Authorization only within the configured origin (see the docstring).
        self._client._rest_client.session.follow_redirects = True

    def __repr__(self) -> str:
        return f"SchemaRegistry({self.settings!r})"

    def schema_id(
        self,
        subject: str,
        schema: Any,
        register: bool,
        kind: str = "AVRO",
        references: Refs = (),
        imported: bool = False,
    ) -> int:
        """The id of `schema` under `subject`: registered when `register` (idempotent, as Confluent's serializers
        register: a schema the subject holds keeps its id and version), else looked up. `schema`: an Avro schema as
        parsed JSON, or the schema's text; `references`: (name, subject, version) of the schemas it references
        (registered first); `imported`: `subject` holds a file a Protobuf schema imports (named so in errors)."""
        text = _schema(schema, kind, references)
        with self._errors(
            ("POST", f"/subjects/{subject}" + ("/versions" if register else "")), subject, imported=imported
        ):
            if register:
                return int(self._client.register_schema(subject, text, normalize_schemas=True))
            found = self._client.lookup_schema(subject, text, normalize_schemas=True)
            return int(self._answered(found.schema_id, "schema id"))

    def version(self, subject: str, schema: Any, kind: str = "AVRO", references: Refs = ()) -> int:
        """The version number `schema` has under `subject` (what a reference to it names)."""
        with self._errors(("POST", f"/subjects/{subject}"), subject, imported=True):
            found = self._client.lookup_schema(subject, _schema(schema, kind, references), normalize_schemas=True)
            return int(self._answered(found.version, "version"))

    def held_version(self, subject: str, schema: Any, kind: str = "AVRO", references: Refs = ()) -> int | None:
        """version(...), or None when the subject does not hold the schema."""
        found = self._lookup(subject, _schema(schema, kind, references), imported=True)
        return None if isinstance(found, SchemaNotUsable) else int(self._answered(found.version, "version"))

    def equal_id(
        self, subject: str, schema: Any, kind: str, references: Refs, equal: Callable[[str], bool]
    ) -> int | None:
        """The id under `subject` of `schema`, or of the newest version whose text `equal` finds the same schema (one
        another client registered as other text: a Protobuf file with other json_names), so that a write reuses it
        instead of registering a version of its own; None: neither (or no such subject). Asked once per process."""
        text = _schema(schema, kind, references)
        key = (subject, text.schema_str, tuple(references))
        if key not in self._equal:
            found = self._lookup(subject, text, imported=False)
            if isinstance(found, SchemaNotUsable):
                self._equal[key] = self._equal_version(subject, kind, [r[0] for r in references], equal)
            else:
                self._equal[key] = int(self._answered(found.schema_id, "schema id"))
        return self._equal[key]

    def _equal_version(
        self, subject: str, kind: str, references: list[str], equal: Callable[[str], bool]
    ) -> int | None:
        try:
            with self._errors(("GET", f"/subjects/{subject}/versions"), subject, SchemaNotUsable):
                numbers = self._client.get_versions(subject)
        except SchemaNotUsable:  # no such subject
            return None
        for number in sorted(numbers, reverse=True):
            with self._errors(("GET", f"/subjects/{subject}/versions/{number}"), subject):
                held = self._client.get_version(subject, number)
            if (held.schema.schema_type or "AVRO").upper() != kind:
                continue
            if sorted(r.name or "" for r in held.schema.references or []) != sorted(references):
                continue
            if equal(held.schema.schema_str or ""):
                return int(self._answered(held.schema_id, "schema id"))
        return None

    def refusal(
        self,
        subject: str,
        schema: Any,
        register: bool,
        kind: str = "AVRO",
        references: Refs = (),
        imported: bool = False,
    ) -> str | None:
        """Why schema_id(subject, schema, register, ...) would fail on the registry's side, or None. Changes nothing.
        The schema is looked up first: one the subject holds passes (registering it again changes nothing, so no rule
        can refuse it); else, looking up, it is missing; registering, the subject's compatibility rule is asked (a
        subject without versions accepts any)."""
        text = _schema(schema, kind, references)
        found = self._lookup(subject, text, imported)
        if not isinstance(found, SchemaNotUsable):
            return None
        if not register:
            return str(found)
        if found.code == 40401:  # no such subject: nothing to be compatible with
            return None
        where = ("POST", f"/compatibility/subjects/{subject}/versions/latest")
        try:
            with self._errors(where, subject, SchemaNotUsable, imported):
                compatible = self._client.test_compatibility(subject, text, normalize=True)
        except SchemaNotUsable:  # no version yet
            return None
        except RegistryError as e:
            if e.status != 422 or not references:
                raise
            # Apicurio answers 422 to the check of any schema with references, even one it holds; its registration
            # enforces the rule (409, naming the subject): only a subject of another type is refused here.
            return self._kind_refusal(subject, kind, imported)
        if compatible:
            return None
        what, step = (
            ("the imported file", "rename the changed file (every schema importing it shares the subject)")
            if imported
            else ("the table's schema", "write under another subject with the format's 'subject' option")
        )
        return (
            f"the schema registry refuses {what} under subject '{subject}': it is not compatible with the subject's "
            f"latest version under the subject's compatibility rule; make the change compatible, or {step}"
        )

    def _lookup(self, subject: str, text: Schema, imported: bool) -> RegisteredSchema | SchemaNotUsable:
        """The registry's entry of schema `text` under `subject`, or the SchemaNotUsable saying it holds none there
        (its `code`: 40401 no such subject, 40403 not under it); other refusals raise."""
        try:
            with self._errors(("POST", f"/subjects/{subject}"), subject, SchemaNotUsable, imported):
                return self._client.lookup_schema(subject, text, normalize_schemas=True)
        except SchemaNotUsable as e:
            return e

    def _kind_refusal(self, subject: str, kind: str, imported: bool) -> str | None:
        """Why a schema of kind `kind` cannot go under `subject` (which holds one of another kind), or None."""
        try:
            with self._errors(("GET", f"/subjects/{subject}/versions/latest"), subject, SchemaNotUsable, imported):
                latest = self._client.get_latest_version(subject)
        except SchemaNotUsable:  # deleted meanwhile: nothing to refuse
            return None
        held = (latest.schema.schema_type or "AVRO").upper()
        if held == kind:
            return None
        step = "rename the imported file" if imported else "set the format's 'subject' option to another subject"
        return f"subject '{subject}' holds {held} schemas, not {kind}: {step}"

    def schema(self, schema_id: int, kind: str = "AVRO") -> Any:
        """The schema with this id (what a record's header names): an Avro schema with its references inlined; a
        JSON schema as it is (its references are the registry's `$ref`s; nothing here reads them)."""
        with self._errors(("GET", f"/schemas/ids/{schema_id}"), missing=SchemaNotUsable):
            found = self._client.get_schema(schema_id)
        check_kind(found.schema_type, kind, f"schema id {schema_id}", SchemaNotUsable)
        try:
            parsed = json.loads(found.schema_str or "")  # no text: refused below, as unparsable text is
        except (TypeError, ValueError):
            raise SchemaNotUsable(f"schema id {schema_id}: the registry's answer holds no schema") from None
        if kind != "AVRO":
            return parsed
        return self._inline_references(parsed, found.references or [])

    def writer_named(self, schema_id: int, subjects: Sequence[str] = ()) -> str:
        """A record's writer schema as an error names it: its id and the versions that hold it under `subjects` (the
        table's), else under any subject (what the registry says; the id alone when it says nothing)."""
        try:
            with self._errors(("GET", f"/schemas/ids/{schema_id}/versions")):
                held = [(v.subject, v.version) for v in self._client.get_schema_versions(schema_id)]
        except RegistryError:
            held = []
        held = [(s, v) for s, v in held if s in subjects] or held
        where = ", ".join(f"subject '{s}' version {v}" for s, v in held if s and v)
        return f"writer schema id {schema_id}" + (f" ({where})" if where else "")

    def latest(self, subject: str) -> tuple[int, Any]:
        """The latest schema registered under `subject` and its id (never cached: it changes)."""
        with self._errors(("GET", f"/subjects/{subject}/versions/latest"), subject):
            registered = self._client.get_latest_version(subject)
        check_avro(registered.schema.schema_type, f"subject '{subject}'")
        schema = json.loads(self._answered(registered.schema.schema_str, "schema"))
        schema_id = int(self._answered(registered.schema_id, "schema id"))
        return schema_id, self._inline_references(schema, registered.schema.references or [])

    def versions(self, subject: str) -> list[tuple[int, int]]:
        """Every version registered under `subject` with its schema id, oldest first (none: no such subject). The
        list is asked each time (it grows); each version's id is cached by the client (it never changes)."""
        try:
            with self._errors(("GET", f"/subjects/{subject}/versions"), subject):
                numbers = self._client.get_versions(subject)
        except RegistryError as e:
            if e.code == 40401:  # no such subject: no version yet
                return []
            raise
        found = []
        for number in numbers:
            with self._errors(("GET", f"/subjects/{subject}/versions/{number}"), subject):
                registered = self._client.get_version(subject, number)
            found.append((int(number), int(self._answered(registered.schema_id, "schema id"))))
        return found

    def schema_text(self, schema_id: int, kind: str, fmt: str | None = None) -> tuple[str, dict[str, str]]:
        """The text of the schema of kind `kind` with this id, and the text of every schema it references, directly
        or not, by reference name; `fmt`: the registry's `format` parameter (`serialized`: a Protobuf schema as a
        base64 FileDescriptorProto, on Confluent's registry)."""
        with self._errors(("GET", f"/schemas/ids/{schema_id}"), missing=SchemaNotUsable):
            found = self._client.get_schema(schema_id, fmt=fmt)
        check_kind(found.schema_type, kind, f"schema id {schema_id}", SchemaNotUsable)
        return self._answered(found.schema_str, "schema"), self._referenced_texts(found.references or [], fmt, {})

    def latest_text(self, subject: str, kind: str, fmt: str | None = None) -> tuple[int, str, dict[str, str]]:
        """The latest schema under `subject` as schema_text gives it, with its id (never cached: it changes)."""
        with self._errors(("GET", f"/subjects/{subject}/versions/latest"), subject):
            registered = self._client.get_latest_version(subject, fmt=fmt)
        check_kind(registered.schema.schema_type, kind, f"subject '{subject}'")
        refs = self._referenced_texts(registered.schema.references or [], fmt, {})
        schema_id = int(self._answered(registered.schema_id, "schema id"))
        return schema_id, self._answered(registered.schema.schema_str, "schema"), refs

    def _referenced_texts(
        self, references: list[SchemaReference], fmt: str | None, found: dict[str, str]
    ) -> dict[str, str]:
        if len(found) > 256:
            raise SchemaNotUsable("a schema references more than 256 others (or its references form a cycle)")
        for name, subject, number in map(self._reference, references):
            if name in found:
                continue
            where = ("GET", f"/subjects/{subject}/versions/{number}")
            with self._errors(where, subject, missing=SchemaNotUsable):
                version = self._client.get_version(subject, number, fmt=fmt)
            found[name] = self._answered(version.schema.schema_str, "schema")
            self._referenced_texts(version.schema.references or [], fmt, found)
        return found

    # -- references -------------------------------------------------------------------------------

    def _inline_references(self, schema: Any, references: list[SchemaReference], depth: int = 0) -> Any:
        """`schema` with each referenced named type defined where it is first used."""
        if not references:
            return schema
        if depth > 16:
            raise SchemaNotUsable("schema references nest deeper than 16 levels (or form a cycle)")
        named: dict[str, Any] = {}
        for name, subject, number in map(self._reference, references):
            where = ("GET", f"/subjects/{subject}/versions/{number}")
            with self._errors(where, subject, missing=SchemaNotUsable):
                version = self._client.get_version(subject, number)
            referenced = json.loads(self._answered(version.schema.schema_str, "schema"))
            named[name] = self._inline_references(referenced, version.schema.references or [], depth + 1)
        return _define_first_uses(schema, named, set())

    # -- errors -----------------------------------------------------------------------------------

    def _answered(self, value: _T | None, what: str) -> _T:
        """A field of the registry's answer: the client types each as optional, the REST API always gives it."""
        if value is None:
            raise RegistryError(f"schema registry {self.settings.url}: its answer holds no {what}")
        return value

    def _reference(self, ref: SchemaReference) -> tuple[str, str, int]:
        """A schema reference's (name, subject, version), each of which the registry gives."""
        if ref.name is None or ref.subject is None or ref.version is None:
            raise RegistryError(f"schema registry {self.settings.url}: its answer holds an incomplete reference")
        return ref.name, ref.subject, ref.version

    def _clean(self, error: BaseException | str) -> str:
        return redact(str(error) or type(error).__name__, self.settings.secrets())

    def _errors(
        self,
        request: tuple[str, str],
        subject: str | None = None,
        missing: type[RegistryError] = RegistryError,
        imported: bool = False,
    ) -> ErrorMapping:
        return ErrorMapping(self.settings.url, self._clean, request, subject, missing, imported)


def _define_first_uses(node: Any, named: dict[str, Any], defined: set[str]) -> Any:
    """Replace the first use of each referenced name by its definition (Avro defines a named type once)."""
    if isinstance(node, str):
        if node in named and node not in defined:
            defined.add(node)
            return _define_first_uses(named[node], named, defined)
        return node
    if isinstance(node, list):
        return [_define_first_uses(item, named, defined) for item in node]
    if isinstance(node, dict):
        if "name" in node and node.get("type") in ("record", "enum", "fixed", "error"):
            full = (
                node["name"]
                if "." in node["name"] or not node.get("namespace")
                else f"{node['namespace']}.{node['name']}"
            )
            defined.add(full)
        return {k: v if k in ("name", "namespace", "doc", "default", "symbols", "aliases") else
                _define_first_uses(v, named, defined) for k, v in node.items()}  # fmt: skip
    return node


def _schema(schema: Any, kind: str, references: Refs) -> Schema:
    """The maintained client's Schema: `schema` as text (an Avro schema given parsed is dumped as JSON)."""
    from confluent_kafka.schema_registry import Schema, SchemaReference

    text = schema if isinstance(schema, str) else json.dumps(schema)
    return Schema(text, kind, [SchemaReference(name, subject, version) for name, subject, version in references])


class RegistryClients:
    """The process's registry clients, one per registry settings, each made on first use, so that ids and schemas
    are fetched once per executor (the maintained client caches per client object; Spark builds codecs per task)."""

    def __init__(self) -> None:
        self._clients: dict[RegistrySettings, SchemaRegistry] = {}
        self._lock = threading.Lock()

    def __call__(self, settings: RegistrySettings) -> SchemaRegistry:
        with self._lock:
            client = self._clients.get(settings)
            if client is None:
                client = self._clients[settings] = SchemaRegistry(settings)
            return client


#: The process's client for these settings: registry_client(settings).
registry_client = RegistryClients()
