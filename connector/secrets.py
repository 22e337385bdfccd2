"""Secrets given as options: which options hold one, whatever their prefix, and the one way to keep them out of
everything the connector shows (errors, log lines, reprs) and out of the plans Spark shows.

Spark prints a data source's options in some plans: a streaming DataFrame's `explain()` (its
StreamingRelationV2) and `CREATE TEMPORARY VIEW ... USING upsert-kafka OPTIONS (...)` (the command, also in
the SQL tab of the UI). It hides an option there only when its name or value matches the session's
`spark.sql.redaction.options.regex` (default `(?i)url`) or the application's `spark.redaction.regex` (default
`(?i)secret|password|token|access[.]?key`): `properties.ssl.key.pem`, `...basic-auth.user-info`,
`properties.sasl.oauthbearer.config` or a `...passphrase` are shown as given. A Python data source cannot
change that text: it receives a copy of the options in a Python worker, while the plan keeps Spark's own map.
The session setting is the one lever; `redact_secret_options(spark)` adds SPARK_REDACTION_REGEX to it (or give
it when building the session: `.config("spark.sql.redaction.options.regex", SPARK_REDACTION_REGEX)`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Texts' redaction lives in the kernel (the schema registry's errors need it too), re-exported here.
from .kernel.redaction import REDACTED
from .kernel.redaction import redact as redact
from .kernel.redaction import strip_url_credentials as strip_url_credentials

# Parts of an option name that make its value a secret, whatever comes before them (`properties.`, `kafka.`,
# `key.avro-confluent.`...): librdkafka's passwords, PEM keys, OAuth secrets and configs; the registry's
# user-info and tokens; Java's JAAS configuration (refused, but given by mistake it holds a password).
_SECRET_PARTS = (
    r"password",
    r"passphrase",
    r"secret",
    r"token",
    r"credential",
    r"user[.-]?info",
    r"jaas",
    r"key\.pem",
    r"private[.-]?key",
    r"keystore\.key",
    r"oauthbearer\.config",
    r"oauthbearer\.extensions",
)
_SECRET_NAME = re.compile("|".join(_SECRET_PARTS), re.IGNORECASE)

# The same words as a Java regular expression for Spark's option redaction (`url` stays Spark's default: URLs may
# carry credentials).
SPARK_REDACTION_REGEX = "(?i)url|" + "|".join(_SECRET_PARTS)
SPARK_REDACTION_CONF = "spark.sql.redaction.options.regex"


def is_secret(name: str) -> bool:
    """Whether an option (or librdkafka property) of this name holds a secret."""
    return _SECRET_NAME.search(name) is not None


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options fit to show: secret values replaced, URL credentials stripped from the others."""
    return {
        name: REDACTED if is_secret(name) else (strip_url_credentials(v) if isinstance(v, str) else v)
        for name, v in options.items()
    }


def secret_values(options: Mapping[str, Any]) -> list[str]:
    """The values of the secret options (to take out of a text that may echo them, e.g. a client's error)."""
    return [v for name, v in options.items() if is_secret(name) and isinstance(v, str) and v]


def redact_secret_options(spark: Any) -> str:
    """Make `spark`'s session hide every secret-bearing option of this connector in the plans it prints: adds
    SPARK_REDACTION_REGEX to `spark.sql.redaction.options.regex` (once; Spark's default `(?i)url` is part of it).
    Returns the setting."""
    current = spark.conf.get(SPARK_REDACTION_CONF) or ""
    if SPARK_REDACTION_REGEX in current:
        return current
    combined = SPARK_REDACTION_REGEX if current in ("", _SPARK_DEFAULT) else f"{current}|{SPARK_REDACTION_REGEX}"
    spark.conf.set(SPARK_REDACTION_CONF, combined)
    return combined


_SPARK_DEFAULT = "(?i)url"
