"""Flink SQL's tokens as the CREATE TABLE reader meets them (flink/statement.py, through flink/types.py): names plain
or in backticks, quoted strings (Calcite's `U&'...'` literals, and Java's escapes in the option values Flink unescapes),
numbers and punctuation; a statement that cannot be read is an error worded as the Flink DDL's. Built on the tokenizer
option 'schema''s parser shares (options/tokens.py).
"""

from __future__ import annotations

import re

from ..errors import OptionError
from ..options.tokens import TokenReader

# `other`: any character Flink's expressions may hold (`||`, `%`, `!=`): a computed column or a query is refused by
# name where it starts, not by the tokenizer wherever its first unknown character is.
_TOKEN = re.compile(
    r"\s*(?:--[^\n]*|/\*.*?\*/|(?P<name>`(?:[^`]|``)*`)|(?P<unicode>[Uu]&'(?:[^']|'')*')|(?P<text>'(?:[^']|'')*')"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_$]*|[0-9]+)|(?P<punct>\.\.\.|[,()<>=;.\-+*/])|(?P<other>[^\s'`]))",
    re.S,
)
# The options whose value Flink passes through Java's unescaping (commons-lang3 StringEscapeUtils.unescapeJava in
# flink-csv's CsvFormatFactory and CsvCommons): `'\t'`, `'\u0001'` are the character, not the text.
JAVA_UNESCAPED = re.compile(r"((key|value)\.)?csv\.field-delimiter")
_JAVA_ESCAPE = re.compile(r"\\(?:u+\+?(?P<hex>.{0,4})|(?P<octal>[0-3][0-7]{0,2}|[4-7][0-7]?)|(?P<char>.?))", re.S)
_JAVA_CHARS = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}  # any other escaped character is itself


class FlinkTokens(TokenReader):
    """A Flink statement's tokens: names, quoted strings and the errors of what cannot be read, for the statement's
    clauses (flink/statement.py) and its types (flink/types.py)."""

    ends_early = "the statement ends too early"

    def __init__(self, text: str) -> None:
        super().__init__(text, _TOKEN)

    def unreadable(self, rest: str) -> str:
        return "a name in backticks is not closed" if rest[0] == "`" else "a quoted string is not closed"

    def near(self, position: int) -> str:
        return " ".join(self.text[position : position + 40].split())  # a statement spans lines

    def error(self, problem: str, where: str, hint: str) -> Exception:
        return OptionError(f"Flink DDL: {problem} ({where})")

    def at(self) -> int:
        """Where the next token starts, for an error found after reading past it."""
        return self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)

    def name(self) -> str:
        kind, value = self.take()
        if kind == "name":
            return value[1:-1].replace("``", "`")
        if kind != "word":
            self.i -= 1
            self.fail("expected a name")
        return value

    def text_value(self) -> str:
        at = self.at()
        kind, value = self.take()
        if kind == "unicode":
            return self.unicode_text(value[3:-1].replace("''", "'"), at)
        if kind != "text":
            self.i -= 1
            self.fail("expected a quoted string")
        return value[1:-1].replace("''", "'")

    def unicode_text(self, body: str, at: int) -> str:
        """A `U&'...'` literal (Flink's CSV page writes `'csv.field-delimiter' = U&'\\0001'`), read as Calcite reads
        it: the escape character (`\\`, or the one `UESCAPE` names) and 4 hex digits are a UTF-16 unit, the escape
        character twice is itself."""
        escape = self.text_value() if self.accept("uescape") else "\\"
        if len(escape) != 1 or re.fullmatch(r"[0-9A-Fa-f+'\"\s]", escape):
            self.fail(f"UESCAPE '{escape}' is not one character other than a hex digit, +, a quote or a space", at)
        units, k = [], 0
        while k < len(body):
            if body[k] != escape:
                units.append(body[k])
                k += 1
            elif body[k + 1 : k + 2] == escape:
                units.append(escape)
                k += 2
            elif re.fullmatch(r"[0-9A-Fa-f]{4}", body[k + 1 : k + 5]):
                units.append(chr(int(body[k + 1 : k + 5], 16)))
                k += 5
            else:
                self.fail(f"'{escape}{body[k + 1 : k + 5]}' in a U&'...' string is not {escape} and 4 hex digits", at)
        return _joined_utf16("".join(units))

    def java_unescaped(self, option: str, value: str, at: int) -> str:
        """`value` as commons-lang3's StringEscapeUtils.unescapeJava reads it: `\\t` `\\n` `\\r` `\\b` `\\f`, octal
        `\\0` to `\\377`, `\\uXXXX` (more u's and a + allowed), and a backslash before any other character is
        dropped."""

        def one(match: re.Match[str]) -> str:
            if match["hex"] is not None:
                if not re.fullmatch(r"[0-9A-Fa-f]{4}", match["hex"]):
                    self.fail(
                        f"option '{option}' = '{value}': Flink reads Java escapes in it, and '{match[0]}' is not \\u "
                        "and 4 hex digits: write e.g. '\\u0001'",
                        at,
                    )
                return chr(int(match["hex"], 16))
            if match["octal"] is not None:
                return chr(int(match["octal"], 8))
            return _JAVA_CHARS.get(match["char"], match["char"])

        return _joined_utf16(_JAVA_ESCAPE.sub(one, value))


def _joined_utf16(units: str) -> str:
    """UTF-16 code units as Java holds them: a surrogate pair is one character."""
    return units.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
