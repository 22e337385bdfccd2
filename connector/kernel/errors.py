"""The errors the formats and the connector share: one OptionError for every mistake in an option, whether the
connector's or a format's, so that `except OptionError` catches both. Here, in the kernel, because the formats
may import nothing else of the connector (connector/errors.py, the hierarchy users catch, re-exports these)."""

from __future__ import annotations


class UpsertKafkaError(Exception):
    """Base class of every error the connector raises on purpose."""


class OptionError(UpsertKafkaError, ValueError):
    """An option is missing, unknown, invalid or in conflict with another."""


class FormatOptionError(OptionError):
    """A format option (`value.json.<option>`, ...) is unknown or has an invalid value, or a format cannot take the
    table's columns."""
