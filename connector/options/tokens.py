"""Reading a statement token by token, for the two small hand-written parsers: option 'schema''s column DDL
(options/ddl.py) and Flink's CREATE TABLE (flink/lexer.py). Each says in its own words what it could not read; this
finds where, and what the text is near there."""

from __future__ import annotations

import re
from typing import NoReturn


class TokenReader:
    """`pattern` names its groups by token kind; a match of no group (a comment) is skipped."""

    ends_early = "the text ends too early"

    def __init__(self, text: str, pattern: re.Pattern[str]) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []  # (kind, value, position)
        position = 0
        while position < len(text):
            match = pattern.match(text, position)
            if match is None or match.end() == position:
                rest = text[position:].lstrip()
                if not rest:
                    break
                self.fail(self.unreadable(rest), len(text) - len(rest))
            if match.lastgroup is not None:
                self.tokens.append((match.lastgroup, match.group(match.lastgroup), match.start(match.lastgroup)))
            position = match.end()
        self.i = 0

    def unreadable(self, rest: str) -> str:
        """What is wrong where no token starts (`rest`: the text from there)."""
        return f"unexpected '{rest[0]}'"

    def error(self, problem: str, where: str, hint: str) -> Exception:
        """The parser's error for `problem`, found `where` ("at '...'" or "at the end")."""
        raise NotImplementedError

    def fail(self, problem: str, position: int | None = None, hint: str = "") -> NoReturn:
        if position is None:
            position = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
        near = self.near(position)
        raise self.error(problem, f"at '{near}'" if near else "at the end", hint)

    def near(self, position: int) -> str:
        return self.text[position : position + 30].strip()

    def peek(self, ahead: int = 0) -> str:
        at = self.i + ahead
        return self.tokens[at][1].lower() if at < len(self.tokens) else ""

    def take(self) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            self.fail(self.ends_early)
        kind, value, _ = self.tokens[self.i]
        self.i += 1
        return kind, value

    def accept(self, *words: str) -> bool:
        """Take the next tokens when they are `words` (case-insensitive)."""
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected '{' '.join(words).upper()}'")

    def number(self, what: str = "a number") -> int:
        kind, value = self.take()
        if kind != "word" or not value.isdigit():
            self.i -= 1
            self.fail(f"expected {what}")
        return int(value)

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)
