"""The schema registry's errors, as the codecs and the user meet them: what the maintained client raises turned
into RegistryError naming the registry, the request and the subject at fault, with a step that helps (never a
credential); the registry's "no such schema" for a record's id is SchemaNotUsable (the record's fault)."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Literal


class RegistryError(RuntimeError):
    """The registry refused a request or could not be reached; the message names the registry."""

    def __init__(self, message: str, status: int | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code = status, code  # the registry's HTTP status and error code, when it answered


class SchemaNotUsable(RegistryError):
    """The registry answered, but has no schema of the format's kind under the id a record names: the record's
    fault."""


class ErrorMapping:
    """Turns what the maintained client raises into RegistryError (or `missing` for the registry's own "not
    found"), naming the registry (`url`), the request and the subject at fault, never a credential (`clean`: an
    error's text without the registry's secrets)."""

    def __init__(
        self,
        url: str,
        clean: Callable[[BaseException | str], str],
        request: tuple[str, str],
        subject: str | None = None,
        missing: type[RegistryError] = RegistryError,
        imported: bool = False,
    ) -> None:
        self.url, self.clean, self.request, self.subject, self.missing = url, clean, request, subject, missing
        self.imported = imported

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _tb: TracebackType | None
    ) -> Literal[False]:  # never swallows an error: raises another in its place, or lets it through
        if error is None or isinstance(error, RegistryError):
            return False
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        method, path = self.request
        where = f"schema registry {self.url}: {method} {path}"
        if isinstance(error, SchemaRegistryError):
            status = error.http_status_code
            code = error.error_code if isinstance(error.error_code, int) and error.error_code > 0 else status
            # Only the registry's own "not found" (40403...): a 404 from a wrong URL path is no record's fault.
            kind_ = self.missing if status == 404 and code != status else RegistryError
            message = self.clean(error.error_message or "") if error.error_message else ""
            by_id = path.startswith("/schemas/ids/")
            reason = http_reason(status, code, message, self.subject, by_id, self.imported)
            raise kind_(f"{where} failed: {reason}", status, code) from None
        reason = self.clean(error)
        if "CERTIFICATE_VERIFY_FAILED" in reason or "certificate verify failed" in reason:
            raise RegistryError(
                f"cannot reach the {where}: its TLS certificate could not be verified ({reason}); set the format's "
                "'ssl.truststore.location' to the CA that signed it (a PEM file)"
            ) from None
        raise RegistryError(f"cannot reach the {where} ({reason}); check the format's 'url' option") from None


def check_avro(schema_type: str | None, what: str, error: type = RegistryError) -> None:
    check_kind(schema_type, "AVRO", what, error)


_FORMAT_OF = {
    "AVRO": ("avro-confluent", "Avro"),
    "PROTOBUF": ("protobuf-confluent", "Protobuf"),
    "JSON": ("json-confluent", "JSON Schema"),
}


def check_kind(schema_type: str | None, expected: str, what: str, error: type = RegistryError) -> None:
    kind = (schema_type or "AVRO").upper()
    if kind != expected:
        fmt, reads = _FORMAT_OF[expected]
        raise error(f"{what} holds a {kind} schema; the {fmt} format reads {reads} only")


def http_reason(
    status: int, code: int, message: str, subject: str | None, by_id: bool = False, imported: bool = False
) -> str:
    """The registry's answer and what to do about it (`by_id`: a record's schema id was looked up; `imported`:
    `subject` holds a file a Protobuf schema imports, named after the file as Confluent's serializers name it, which
    the format's 'subject' option does not choose)."""
    held = f"subject '{subject}'" + (" (an imported file, registered under its own name)" if imported else "")
    other_subject = "rename the imported file" if imported else "set the format's 'subject' option to another subject"
    hint = ""
    if status in (401, 403):
        hint = " (check the format's basic-auth / bearer-auth options)"
    elif 300 <= status < 400:
        hint = " (a redirect that could not be followed: set the format's 'url' option to the registry's own address)"
    elif code == 40401 and subject:
        hint = f" ({held} has no schema: write with auto.register.schemas=true first" + (
            ")" if imported else ", or set 'subject')"
        )
    elif code == 40403 and by_id:
        hint = (
            " (this registry holds no schema with the record's id: check that the format's 'url' is the registry the "
            "producer wrote through, or skip such records with ignore-parse-errors)"
        )
    elif code in (40403, 40402):
        hint = f" (the schema is not registered under {held}; set auto.register.schemas=true)"
    elif status == 422:
        hint = f" (the registry cannot take the schema under {held}, e.g. one that holds schemas of another type: "
        hint += f"{other_subject})"
    elif status == 409:
        hint = f" ({held}'s compatibility rule rejects this schema: make the change compatible, or {other_subject})"
    return f"HTTP {status} {message or _STATUS_TEXT.get(status, '')}".rstrip() + hint


_STATUS_TEXT = {401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 409: "Conflict", 500: "Internal Server Error"}
