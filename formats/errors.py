"""The errors the formats and the connector share: one OptionError for every mistake in an option, whether the
connector's or a format's, so that `except OptionError` catches both. Here, below the connector, because the
formats may not import it (connector/errors.py re-exports these)."""

from __future__ import annotations


class UpsertKafkaError(Exception):
    """Base class of every error the connector raises on purpose."""


class OptionError(UpsertKafkaError, ValueError):
    """An option is missing, unknown, invalid or in conflict with another."""


class FormatOptionError(OptionError):
    """A format option (`value.json.<option>`, ...) is unknown or has an invalid value, or a format cannot take the
    table's columns."""
