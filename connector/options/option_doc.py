"""One option's entry in the catalog (catalog.py): its name, default, where it applies and what it means."""

from __future__ import annotations

from dataclasses import dataclass

READ, WRITE, BOTH = "read", "write", "read/write"


@dataclass(frozen=True)
class OptionDoc:
    name: str
    # The value the option takes when not given (the parsers read it with default_of); "required", or words in
    # backticks or prose, where there is no one value; None: no default.
    default: str | None
    applies: str
    meaning: str
    aliases: tuple[str, ...] = ()
    streaming_default: str | None = None  # where a streaming read takes another
    note: str = ""  # what the default means, shown after it

    @property
    def shown(self) -> str:
        """The default as the README's option table shows it."""
        if self.streaming_default is not None:
            return f"{self.default} (batch), {self.streaming_default} (streaming)"
        return f"{self.default} ({self.note})" if self.note else self.default or ""
