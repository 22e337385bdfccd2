"""The schema registry client of avro-confluent and protobuf-confluent: confluent-kafka's own maintained
`SchemaRegistryClient` (HTTP, caching by id and by subject and schema, basic and bearer auth, retries of transient
failures with backoff, TLS with a custom CA and client certificates), behind the few calls the codecs make.
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
- Errors: the client's errors become RegistryError naming the registry (never its credentials) and the option
  to change; "no such schema id" is SchemaNotUsable (the record's fault, not the task's).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .redaction import redact

#: Schema references: (reference name, subject, version) each.
Refs = Sequence[tuple[str, str, int]]


class RegistryError(RuntimeError):
    """The registry refused a request or could not be reached; the message names the registry."""


class SchemaNotUsable(RegistryError):
    """The registry answered, but has no schema of the format's kind under the id a record names: the record's
    fault."""


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
        # Follow redirects with httpx's rule: Authorization only within the configured origin (see the docstring).
        self._client._rest_client.session.follow_redirects = True

    def __repr__(self) -> str:
        return f"SchemaRegistry({self.settings!r})"

    def schema_id(self, subject: str, schema: Any, register: bool, kind: str = "AVRO", references: Refs = ()) -> int:
        """The id of `schema` under `subject`: registered first when `register`, else looked up. `schema`: an Avro
        schema as parsed JSON, or the schema's text; `references`: (name, subject, version) of the schemas it
        references (registered first)."""
        text = _schema(schema, kind, references)
        with self._errors(("POST", f"/subjects/{subject}" + ("/versions" if register else "")), subject):
            if register:
                return int(self._client.register_schema(subject, text))
            return int(self._client.lookup_schema(subject, text).schema_id)

    def version(self, subject: str, schema: Any, kind: str = "AVRO", references: Refs = ()) -> int:
        """The version number `schema` has under `subject` (what a reference to it names)."""
        with self._errors(("POST", f"/subjects/{subject}"), subject):
            return int(self._client.lookup_schema(subject, _schema(schema, kind, references)).version)

    def refusal(
        self, subject: str, schema: Any, register: bool, kind: str = "AVRO", references: Refs = ()
    ) -> str | None:
        """Why schema_id(subject, schema, register, ...) would fail on the registry's side, or None: registering,
        whether the subject's compatibility rule refuses it (a subject without versions accepts any);
        looking up, whether it is missing. Changes nothing."""
        text = _schema(schema, kind, references)
        if not register:
            try:
                with self._errors(("POST", f"/subjects/{subject}"), subject, SchemaNotUsable):
                    self._client.lookup_schema(subject, text)
            except SchemaNotUsable as e:
                return str(e)
            return None
        where = ("POST", f"/compatibility/subjects/{subject}/versions/latest")
        try:
            with self._errors(where, subject, SchemaNotUsable):
                compatible = self._client.test_compatibility(subject, text)
        except SchemaNotUsable:  # no version yet: nothing to be compatible with
            return None
        if compatible:
            return None
        return (
            f"the schema registry refuses the table's schema under subject '{subject}': it is not compatible with "
            "the subject's latest version under the subject's compatibility rule"
        )

    def schema(self, schema_id: int, kind: str = "AVRO") -> Any:
        """The schema with this id (what a record's header names): an Avro schema with its references inlined; a
        JSON schema as it is (its references are the registry's `$ref`s; nothing here reads them)."""
        with self._errors(("GET", f"/schemas/ids/{schema_id}"), missing=SchemaNotUsable):
            found = self._client.get_schema(schema_id)
        _check_kind(found.schema_type, kind, f"schema id {schema_id}", SchemaNotUsable)
        try:
            parsed = json.loads(found.schema_str)
        except (TypeError, ValueError):
            raise SchemaNotUsable(f"schema id {schema_id}: the registry's answer holds no schema") from None
        if kind != "AVRO":
            return parsed
        return self._inline_references(parsed, found.references or [])

    def latest(self, subject: str) -> tuple[int, Any]:
        """The latest schema registered under `subject` and its id (never cached: it changes)."""
        with self._errors(("GET", f"/subjects/{subject}/versions/latest"), subject):
            registered = self._client.get_latest_version(subject)
        _check_avro(registered.schema.schema_type, f"subject '{subject}'")
        schema = json.loads(registered.schema.schema_str)
        return int(registered.schema_id), self._inline_references(schema, registered.schema.references or [])

    def schema_text(self, schema_id: int, kind: str, fmt: str | None = None) -> tuple[str, dict[str, str]]:
        """The text of the schema of kind `kind` with this id, and the text of every schema it references, directly
        or not, by reference name; `fmt`: the registry's `format` parameter (`serialized`: a Protobuf schema as a
        base64 FileDescriptorProto, on Confluent's registry)."""
        with self._errors(("GET", f"/schemas/ids/{schema_id}"), missing=SchemaNotUsable):
            found = self._client.get_schema(schema_id, fmt=fmt)
        _check_kind(found.schema_type, kind, f"schema id {schema_id}", SchemaNotUsable)
        return found.schema_str, self._referenced_texts(found.references or [], fmt, {})

    def latest_text(self, subject: str, kind: str, fmt: str | None = None) -> tuple[int, str, dict[str, str]]:
        """The latest schema under `subject` as schema_text gives it, with its id (never cached: it changes)."""
        with self._errors(("GET", f"/subjects/{subject}/versions/latest"), subject):
            registered = self._client.get_latest_version(subject, fmt=fmt)
        _check_kind(registered.schema.schema_type, kind, f"subject '{subject}'")
        refs = self._referenced_texts(registered.schema.references or [], fmt, {})
        return int(registered.schema_id), registered.schema.schema_str, refs

    def _referenced_texts(self, references: list, fmt: str | None, found: dict[str, str]) -> dict[str, str]:
        if len(found) > 256:
            raise SchemaNotUsable("a schema references more than 256 others (or its references form a cycle)")
        for ref in references:
            if ref.name in found:
                continue
            where = ("GET", f"/subjects/{ref.subject}/versions/{ref.version}")
            with self._errors(where, ref.subject, missing=SchemaNotUsable):
                version = self._client.get_version(ref.subject, ref.version, fmt=fmt)
            found[ref.name] = version.schema.schema_str
            self._referenced_texts(version.schema.references or [], fmt, found)
        return found

    # -- references -------------------------------------------------------------------------------

    def _inline_references(self, schema: Any, references: list, depth: int = 0) -> Any:
        """`schema` with each referenced named type defined where it is first used."""
        if not references:
            return schema
        if depth > 16:
            raise SchemaNotUsable("schema references nest deeper than 16 levels (or form a cycle)")
        named: dict[str, Any] = {}
        for ref in references:
            where = ("GET", f"/subjects/{ref.subject}/versions/{ref.version}")
            with self._errors(where, ref.subject, missing=SchemaNotUsable):
                version = self._client.get_version(ref.subject, ref.version)
            referenced = json.loads(version.schema.schema_str)
            named[ref.name] = self._inline_references(referenced, version.schema.references or [], depth + 1)
        return _define_first_uses(schema, named, set())

    # -- errors -----------------------------------------------------------------------------------

    def _clean(self, error: BaseException) -> str:
        return redact(str(error) or type(error).__name__, self.settings.secrets())

    def _errors(self, request: tuple[str, str], subject: str | None = None, missing: type = RegistryError):
        return _ErrorMapping(self, request, subject, missing)


class _ErrorMapping:
    """Turns what the maintained client raises into RegistryError (or `missing` for the registry's own "not
    found"), naming the registry and the request, never a credential."""

    def __init__(self, registry: SchemaRegistry, request: tuple[str, str], subject: str | None, missing: type):
        self.registry, self.request, self.subject, self.missing = registry, request, subject, missing

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, _tb: Any) -> bool:
        if error is None or isinstance(error, RegistryError):
            return False
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        method, path = self.request
        where = f"schema registry {self.registry.settings.url}: {method} {path}"
        if isinstance(error, SchemaRegistryError):
            status = error.http_status_code
            code = error.error_code if isinstance(error.error_code, int) and error.error_code > 0 else status
            # Only the registry's own "not found" (40403...): a 404 from a wrong URL path is no record's fault.
            kind_ = self.missing if status == 404 and code != status else RegistryError
            message = self.registry._clean(error.error_message or "") if error.error_message else ""
            by_id = path.startswith("/schemas/ids/")
            raise kind_(f"{where} failed: {_http_reason(status, code, message, self.subject, by_id)}") from None
        reason = self.registry._clean(error)
        if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate verify failed" in reason:
            raise RegistryError(
                f"cannot reach the {where}: its TLS certificate could not be verified ({reason}); set the format's "
                "'ssl.truststore.location' to the CA that signed it (a PEM file)"
            ) from None
        raise RegistryError(f"cannot reach the {where} ({reason}); check the format's 'url' option") from None


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


def _check_avro(schema_type: str | None, what: str, error: type = RegistryError) -> None:
    _check_kind(schema_type, "AVRO", what, error)


_FORMAT_OF = {
    "AVRO": ("avro-confluent", "Avro"),
    "PROTOBUF": ("protobuf-confluent", "Protobuf"),
    "JSON": ("json-confluent", "JSON Schema"),
}


def _check_kind(schema_type: str | None, expected: str, what: str, error: type = RegistryError) -> None:
    kind = (schema_type or "AVRO").upper()
    if kind != expected:
        fmt, reads = _FORMAT_OF[expected]
        raise error(f"{what} holds a {kind} schema; the {fmt} format reads {reads} only")


def _schema(schema: Any, kind: str, references: Refs) -> Any:
    """The maintained client's Schema: `schema` as text (an Avro schema given parsed is dumped as JSON)."""
    from confluent_kafka.schema_registry import Schema, SchemaReference

    text = schema if isinstance(schema, str) else json.dumps(schema)
    return Schema(text, kind, [SchemaReference(name, subject, version) for name, subject, version in references])


def _http_reason(status: int, code: int, message: str, subject: str | None, by_id: bool = False) -> str:
    """The registry's answer and what to do about it (`by_id`: a record's schema id was looked up)."""
    hint = ""
    if status in (401, 403):
        hint = " (check the format's basic-auth / bearer-auth options)"
    elif 300 <= status < 400:
        hint = " (a redirect that could not be followed: set the format's 'url' option to the registry's own address)"
    elif code == 40401 and subject:
        hint = f" (subject '{subject}' has no schema: write with auto.register.schemas=true first, or set 'subject')"
    elif code == 40403 and by_id:
        hint = (
            " (this registry holds no schema with the record's id: check that the format's 'url' is the registry the "
            "producer wrote through, or skip such records with ignore-parse-errors)"
        )
    elif code in (40403, 40402):
        hint = " (the schema is not registered under this subject; set auto.register.schemas=true)"
    elif status == 422:
        hint = (
            " (the registry cannot take the schema under this subject, e.g. one that holds schemas of another type: "
            "set the format's 'subject' option to another subject)"
        )
    elif status == 409:
        hint = " (the registry's compatibility rules reject this schema for the subject)"
    return f"HTTP {status} {message or _STATUS_TEXT.get(status, '')}".rstrip() + hint


_STATUS_TEXT = {401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict", 500: "Internal Server Error"}

_clients: dict[RegistrySettings, SchemaRegistry] = {}
_clients_lock = threading.Lock()


def registry_client(settings: RegistrySettings) -> SchemaRegistry:
    """The process's client for these settings (ids and schemas cached per executor)."""
    with _clients_lock:
        client = _clients.get(settings)
        if client is None:
            client = _clients[settings] = SchemaRegistry(settings)
        return client
