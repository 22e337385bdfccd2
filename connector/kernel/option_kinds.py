"""Options declared once, typed (as Flink's ConfigOption): each option's name, kind of value, default, aliases,
scope and meaning. Parsing, validation, did-you-mean and the README's option tables all read these declarations;
the connector's catalog (connector/options/catalog.py) and every codec (`Codec.declared_options`) declare theirs
with the same `Option` and are parsed by `parse_values`.

An `Option[T]` is typed by its kind (`Kind[T]`): `OptionValues.value(option)` returns a `T`. An option with no
default reads as None when not given, so its constant is declared `Option[T | None]` (tests/unit/test_options.py
holds every such constant to it).

Here, in the kernel, because the codecs declare options too and may import nothing else of the connector.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar, cast

from .errors import OptionError

READ, WRITE, BOTH, FORMAT = "read", "write", "read/write", "format"

T = TypeVar("T")
# A kind only makes values (Kind[int] is a Kind[int | None]: the kind of an option with no default).
T_co = TypeVar("T_co", covariant=True)
E = TypeVar("E", bound=Enum)


def same_option_twice(first: str, second: str) -> str:
    """The error of an option given under two of its names with different values."""
    return f"options '{first}' and '{second}' mean the same thing but have different values; give only one of them"


def did_you_mean(given: str, candidates: Iterable[str] | Mapping[str, str], cutoff: float = 0.6) -> str:
    """' Did you mean 'x'?' for the closest candidate, or '' when none is close; a mapping's keys are matched and its
    values shown (e.g. lower-cased spellings -> the declared one)."""
    shown = candidates if isinstance(candidates, Mapping) else {c: c for c in candidates}
    close = difflib.get_close_matches(given, list(shown), n=1, cutoff=cutoff)
    return f" Did you mean '{shown[close[0]]}'?" if close else ""


class Invalid(ValueError):
    """A kind's refusal of a value: the rest of the sentence after "option 'x'" (Option.parse adds the name):
    "must be ..., got '...'" or ": ..."."""


def must_be(expected: str, raw: str) -> Invalid:
    return Invalid(f"must be {expected}, got '{raw}'")


class Kind(Generic[T_co]):
    """The kind of value an option takes: how it is parsed and checked, and how the README names it."""

    type_name: str = "string"

    def parse(self, raw: str) -> T_co:
        """The typed value of `raw`; raises Invalid saying what was expected."""
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Kind[str]):
    """Text taken as given (a name, a literal, a list or expression its own parser reads)."""

    type_name: str = "string"

    def parse(self, raw: str) -> str:
        return raw


@dataclass(frozen=True)
class Flag(Kind[bool]):
    type_name: str = "boolean"

    def parse(self, raw: str) -> bool:
        value = raw.strip().lower()
        if value not in ("true", "false"):
            raise must_be("true or false", raw)
        return value == "true"


@dataclass(frozen=True)
class OneOf(Kind[T_co]):
    """One of `choices`, case-insensitive unless `case_sensitive`. `dashes`: '_' is read as '-' (Flink's enum
    options take either). `Choice`: the value is the choice as declared; `EnumChoice`: the enum's member."""

    choices: tuple[str, ...] = ()
    case_sensitive: bool = False
    dashes: bool = False

    @property
    def type_name(self) -> str:  # type: ignore[override]
        return "enum: " + " / ".join(f"`{c}`" for c in self.choices)

    def choice(self, raw: str) -> str:
        """The declared choice `raw` names; Invalid listing them when none."""
        value = raw.strip().replace("_", "-") if self.dashes else raw.strip()
        for choice in self.choices:
            if value == choice or (not self.case_sensitive and value.lower() == choice.lower()):
                return choice
        folded = list(self.choices) if self.case_sensitive else [c.lower() for c in self.choices]
        hint = did_you_mean(value if self.case_sensitive else value.lower(), folded)
        raise Invalid(f"must be one of {', '.join(self.choices)}, got '{raw}'.{hint}".rstrip("."))


@dataclass(frozen=True)
class Choice(OneOf[str]):
    """One of `choices`, the value the choice as declared."""

    def parse(self, raw: str) -> str:
        return self.choice(raw)

    @classmethod
    def of(cls, enum: type[E], *, case_sensitive: bool = False, dashes: bool = False) -> EnumChoice[E]:
        """One of a str Enum's values, the value its member (`Choice.of(ReadMode)`)."""
        return EnumChoice(tuple(member.value for member in enum), case_sensitive, dashes, enum=enum)


@dataclass(frozen=True)
class EnumChoice(OneOf[E]):
    enum: type[E] = field(kw_only=True)

    def parse(self, raw: str) -> E:
        return self.enum(self.choice(raw))


@dataclass(frozen=True)
class Count(Kind[int]):
    """A whole number of at least `minimum` (0: a count, 1: a positive number)."""

    minimum: int = 0

    @property
    def type_name(self) -> str:  # type: ignore[override]
        return f"integer >= {self.minimum}"

    def parse(self, raw: str) -> int:
        text = raw.strip()
        if not text.isdigit() or int(text) < self.minimum:
            expected = "a whole number (0 or more)" if self.minimum == 0 else "a positive whole number"
            if self.minimum > 1:
                expected = f"a whole number of at least {self.minimum}"
            raise must_be(expected, raw)
        return int(text)


@dataclass(frozen=True)
class Regex(Kind[re.Pattern[str]]):
    """A regular expression (surrounding blanks dropped); the value is the compiled pattern."""

    type_name: str = "regex"

    def parse(self, raw: str) -> re.Pattern[str]:
        try:
            return re.compile(raw.strip())
        except re.error as e:
            raise Invalid(f"is not a valid regular expression: {e}") from None


@dataclass(frozen=True)
class Char(Kind[str]):
    """One character; `\\t` or `tab` for a tab. Line breaks are refused (records are lines)."""

    type_name: str = "character"

    def parse(self, raw: str) -> str:
        value = {"\\t": "\t", "tab": "\t"}.get(raw.lower(), raw)
        if len(value) != 1 or value in "\r\n":
            raise must_be("a single character (or \\t)", raw)
        return value


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option, declared once; `T` is the type of its value (its kind's, or with None when it has no default).

    `default`: the value (in the kind's grammar) the option takes when not given, or None; `note` says what it
    means (shown after it), or stands in for it where there is no one value ('required', '`<topic>-key`').
    `streaming_default`: where a streaming read takes another value.
    """

    name: str
    default: str | None
    scope: str
    doc: str
    aliases: tuple[str, ...] = ()
    kind: Kind[T] = field(kw_only=True)
    streaming_default: str | None = None
    note: str = ""

    @property
    def shown(self) -> str:
        """The default as the README's option tables show it."""
        if self.streaming_default is not None:
            return f"{self.default} (batch), {self.streaming_default} (streaming)"
        if self.default is None:
            return self.note
        return f"{self.default} ({self.note})" if self.note else self.default

    def parse(self, raw: str, shown_name: str | None = None, error: type[OptionError] = OptionError) -> T:
        """The typed value of `raw`, or `error` naming the option as the user spells it (`shown_name`)."""
        try:
            return self.kind.parse(raw)
        except Invalid as e:
            tail = str(e)
            raise error(f"option '{shown_name or self.name}'{'' if tail.startswith(':') else ' '}{tail}") from None

    def default_value(self, streaming: bool = False) -> T | None:
        """The typed default (the streaming one for a streaming read), or None when the option has none."""
        text = self.streaming_default if streaming and self.streaming_default is not None else self.default
        return None if text is None else self.kind.parse(text)


class OptionValues(Mapping[str, str]):
    """The options given, by their declared names (aliases folded), as text, and their typed values: `value()` is
    the one way to read an option's value (its default when not given)."""

    def __init__(
        self, declared: Mapping[str, Option[Any]], given: Mapping[str, str], typed: Mapping[str, object]
    ) -> None:
        self._declared, self._given, self._typed = declared, dict(given), dict(typed)

    def __getitem__(self, name: str) -> str:
        return self._given[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)

    def __repr__(self) -> str:  # values may be secrets: names only
        return f"OptionValues({sorted(self._given)})"

    def value(self, option: Option[T], streaming: bool = False) -> T:
        """The typed value of a declared option, read through its constant (the catalog's, or one a codec's
        `declared_options` hold): as given, else its default; None when it has none (its constant is then an
        `Option[T | None]`)."""
        name = self._name(option)
        if name in self._typed:
            return cast(T, self._typed[name])  # parsed by this option's kind
        return cast(T, option.default_value(streaming))  # None only for an option declared without a default

    def given(self, option: Option[Any]) -> bool:
        """Whether the option was given (under any of its names)."""
        return self._name(option) in self._given

    def text(self, option: Option[Any]) -> str | None:
        """The option's text as given, or None."""
        return self._given.get(self._name(option))

    def _name(self, option: Option[Any]) -> str:
        if not isinstance(option, Option):
            raise TypeError(f"option {option!r} read by its name: read it through its constant")
        if self._declared.get(option.name) is not option:  # a stranger, or a name no option here declares
            raise KeyError(f"option '{option.name}' is not the one these values declare")
        return option.name


def parse_values(
    declared: Sequence[Option[Any]],
    given: Mapping[str, str],
    *,
    prefix: str = "",
    error: type[OptionError] = OptionError,
    unknown_ok: bool = False,
    owner: str = "",
    spelled: Mapping[str, str] | None = None,
) -> OptionValues:
    """Every given option of `declared` parsed once by its kind (aliases folded onto the declared name). Unknown
    names are an `error` listing the valid ones of `owner` (with a did-you-mean), unless `unknown_ok` (the
    connector folds and checks its names itself: pass-through and format options are not its catalog's). A value's
    error names the option as the user spelled it: `spelled` (declared name -> spelling) or its key in `given`."""
    by_name = {o.name: o for o in declared}
    aliases = {a: o.name for o in declared for a in o.aliases}
    folded: dict[str, str] = {}
    given_as: dict[str, str] = {}
    for key, raw in given.items():
        name = aliases.get(key, key)
        if name in folded and folded[name] != raw:
            raise error(same_option_twice(prefix + given_as[name], prefix + key))
        if name not in by_name and not unknown_ok:
            unknown = sorted(k for k in given if aliases.get(k, k) not in by_name)
            valid = ", ".join(prefix + o for o in sorted(by_name)) or "none"
            hint = did_you_mean(prefix + unknown[0], [prefix + n for n in (*by_name, *aliases)])
            names = ", ".join(prefix + o for o in unknown)
            raise error(f"unknown option(s) {names}{owner}; valid options: {valid}.{hint}")
        folded[name], given_as[name] = raw, key
    # A kind's error names the option as the user spelled it.
    shown = {**given_as, **(spelled or {})}
    typed = {n: by_name[n].parse(raw, prefix + shown[n], error) for n, raw in folded.items() if n in by_name}
    return OptionValues(by_name, folded, typed)
