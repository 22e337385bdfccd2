"""The connector's own errors: each one says what to change."""

from __future__ import annotations

# Defined in the kernel (the formats import nothing else of the connector), so that a format's option error is an
# OptionError.
from .kernel.errors import FormatOptionError as FormatOptionError
from .kernel.errors import OptionError as OptionError
from .kernel.errors import UpsertKafkaError as UpsertKafkaError
from .kernel.option_kinds import did_you_mean as did_you_mean


class KafkaClientError(UpsertKafkaError):
    """A call to the Kafka brokers failed for good; the message says what failed and what to change."""


class KafkaUnavailableError(KafkaClientError):
    """The brokers could not be reached, or kept answering with transient errors, for longer than the query
    waits for them (options 'client.timeout', 'client.retries' and 'client.retry-interval')."""


class KafkaAuthenticationError(KafkaClientError):
    """The brokers refused this client's credentials (SASL) or its TLS connection, or the SASL/OAUTHBEARER token
    provider gave no token."""


class KafkaAuthorizationError(KafkaClientError):
    """An ACL denies this client's user an operation; the message names the resource and what to grant."""


class TopicError(UpsertKafkaError):
    """A topic does not exist or cannot be used."""


class RecordError(UpsertKafkaError):
    """A record could not be decoded or encoded; the message names where it is."""


def escaped_prefix(payload: bytes | None, limit: int = 64) -> str:
    """The first bytes of a payload, printable and escaped, for error messages."""
    if payload is None:
        return "null"
    shown = payload[:limit].decode("ascii", errors="backslashreplace")
    shown = shown.encode("unicode_escape").decode("ascii").replace("\\\\x", "\\x")
    return f"b'{shown}'" + (f"... ({len(payload)} bytes)" if len(payload) > limit else "")


class DataLossError(UpsertKafkaError):
    """Records the query needs are no longer in Kafka."""


class WriteTaskError(UpsertKafkaError):
    """A write task must not commit: its input was cut short, or it cannot tell, or it holds other rows than
    an earlier attempt committed under its exactly-once id."""


class SchemaError(OptionError):
    """The table's columns (`.schema(...)`, option 'schema' or the DataFrame written) do not fit the options or
    the formats: a column twice, a reserved column of another type, a missing key column, a type its format
    cannot hold. Raised on the driver before any task runs; an OptionError too, so that `except OptionError`
    catches every mistake found before a query starts."""
