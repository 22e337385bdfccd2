"""A small client of the Confluent Schema Registry REST API (also served by Apicurio's ccompat API and
Karapace): register, look up, fetch by id, latest of a subject.

One client per registry and credentials per process, so schema ids and schemas are fetched once per
executor, not per task or batch. Credentials never appear in a repr, an error or a log line.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryError(RuntimeError):
    """The registry refused a request or could not be reached; the message names the registry."""


class SchemaNotUsable(RegistryError):
    """The registry answered, but has no Avro schema under the id a record names: the record's fault."""


@dataclass(frozen=True)
class RegistrySettings:
    url: str  # without credentials
    authorization: str | None = field(default=None, repr=False)  # the Authorization header value
    ca_file: str | None = None
    cert_file: str | None = None
    key_password: str | None = field(default=None, repr=False)
    timeout_s: float = 30.0

    def __repr__(self) -> str:
        auth = "none" if self.authorization is None else self.authorization.split(" ", 1)[0].lower()
        return f"RegistrySettings({self.url!r}, auth={auth}, ca_file={self.ca_file!r}, cert_file={self.cert_file!r})"


def split_credentials(url: str) -> tuple[str, str | None]:
    """The URL without its `user:password@` part, and that part (None when absent)."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.username is None:
        return url.strip().rstrip("/"), None
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    user_info = urllib.parse.unquote(parts.netloc.rsplit("@", 1)[0])
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)).rstrip("/"), user_info


def basic_authorization(user_info: str) -> str:
    return "Basic " + base64.b64encode(user_info.encode()).decode()


class SchemaRegistry:
    def __init__(self, settings: RegistrySettings) -> None:
        self.settings = settings
        self._ids: dict[tuple[str, str, bool], int] = {}
        self._schemas: dict[int, Any] = {}
        self._context = _ssl_context(settings) if settings.url.startswith("https") else None

    def __repr__(self) -> str:
        return f"SchemaRegistry({self.settings!r})"

    def schema_id(self, subject: str, schema: Any, register: bool) -> int:
        """The id of `schema` under `subject`: registered first when `register`, else looked up."""
        text = json.dumps(schema, sort_keys=True)
        key = (subject, text, register)
        if key not in self._ids:
            path = f"/subjects/{_quote(subject)}" + ("/versions" if register else "")
            answer = self._call("POST", path, {"schema": json.dumps(schema)}, subject=subject)
            self._ids[key] = int(answer["id"])
            self._schemas.setdefault(self._ids[key], schema)
        return self._ids[key]

    def schema(self, schema_id: int) -> Any:
        """The schema with this id (what a record's header names)."""
        if schema_id not in self._schemas:
            answer = self._call("GET", f"/schemas/ids/{schema_id}", missing=SchemaNotUsable)
            _check_avro(answer, f"schema id {schema_id}", SchemaNotUsable)
            try:
                self._schemas[schema_id] = json.loads(answer["schema"])
            except (KeyError, TypeError, ValueError):
                raise SchemaNotUsable(f"schema id {schema_id}: the registry's answer holds no schema") from None
        return self._schemas[schema_id]

    def latest(self, subject: str) -> tuple[int, Any]:
        """The latest schema registered under `subject` and its id (not cached: it changes)."""
        answer = self._call("GET", f"/subjects/{_quote(subject)}/versions/latest", subject=subject)
        _check_avro(answer, f"subject '{subject}'")
        schema = json.loads(answer["schema"])
        self._schemas.setdefault(int(answer["id"]), schema)
        return int(answer["id"]), schema

    def _call(
        self, method: str, path: str, body: Any = None, subject: str | None = None, missing: type = RegistryError
    ) -> Any:
        """The registry's JSON answer; the registry saying it has no such thing raises `missing`, any other
        failure RegistryError."""
        url = self.settings.url + path
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", _CONTENT_TYPE)
        if data is not None:
            request.add_header("Content-Type", _CONTENT_TYPE)
        if self.settings.authorization:
            request.add_header("Authorization", self.settings.authorization)
        where = f"schema registry {self.settings.url}: {method} {path}"
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_s, context=self._context) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            code, reason = _http_reason(e, subject)
            # Only the registry's own "not found" (40403, ...): a 404 from a wrong URL path is no record's fault.
            error = missing if e.code == 404 and code != e.code else RegistryError
            raise error(f"{where} failed: {reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise RegistryError(f"cannot reach the {where} ({reason}); check the format's 'url' option") from None


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _check_avro(answer: Any, what: str, error: type = RegistryError) -> None:
    kind = (answer.get("schemaType") or "AVRO").upper() if isinstance(answer, dict) else "no"
    if kind != "AVRO":
        raise error(f"{what} holds a {kind} schema; the avro-confluent format reads Avro only")


def _http_reason(e: urllib.error.HTTPError, subject: str | None) -> tuple[int, str]:
    """The registry's error code (the HTTP status when the body has none) and a reason that says what to do."""
    try:
        detail = json.loads(e.read() or b"{}")
        message, code = detail.get("message", ""), int(detail.get("error_code", e.code))
    except (ValueError, AttributeError, TypeError):
        message, code = "", e.code
    hint = ""
    if e.code in (401, 403):
        hint = " (check the format's basic-auth / bearer-auth options)"
    elif code == 40401 and subject:
        hint = f" (subject '{subject}' has no schema: write with auto.register.schemas=true first, or set 'subject')"
    elif code in (40403, 40402):
        hint = " (the schema is not registered under this subject; set auto.register.schemas=true)"
    elif e.code == 409:
        hint = " (the registry's compatibility rules reject this schema for the subject)"
    return code, f"HTTP {e.code} {message or e.reason}{hint}"


def _ssl_context(settings: RegistrySettings) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=settings.ca_file)
    if settings.cert_file:
        context.load_cert_chain(settings.cert_file, password=settings.key_password)
    return context


_clients: dict[RegistrySettings, SchemaRegistry] = {}
_clients_lock = threading.Lock()


def registry_client(settings: RegistrySettings) -> SchemaRegistry:
    """The process's client for these settings (ids and schemas cached per executor)."""
    with _clients_lock:
        client = _clients.get(settings)
        if client is None:
            client = _clients[settings] = SchemaRegistry(settings)
        return client
