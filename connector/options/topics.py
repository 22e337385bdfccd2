"""Which topics a read or write covers: option `topic` (a list), `topic-pattern` or `assign`, exactly one."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import OptionError
from .canonical import parse_options
from .catalog import TOPIC
from .catalog_read import ASSIGN, TOPIC_PATTERN
from .values import require


@dataclass(frozen=True)
class TopicSelection:
    """The topics of a read or write: named by `topic` (a list), every topic matching `topic-pattern`, or (reads)
    the partitions `assign` lists, whose topics are then `names`."""

    names: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, tuple[int, ...]], ...] | None = None  # topic -> partitions, both sorted

    @property
    def single(self) -> str | None:
        return self.names[0] if len(self.names) == 1 and self.pattern is None else None

    def accepts(self, topic: str) -> bool:
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.names

    def describe(self) -> str:
        if self.pattern is not None:
            return f"topics matching '{self.pattern}'"
        if self.assigned is not None:
            listed = "; ".join(f"topic '{t}' partition(s) {', '.join(map(str, ps))}" for t, ps in self.assigned)
            return f"{listed} (option '{ASSIGN.name}')"
        return f"topic '{self.names[0]}'" if len(self.names) == 1 else f"topics {', '.join(self.names)}"

    @property
    def option(self) -> str:
        """The option that selected the topics, for errors."""
        selector = TOPIC_PATTERN if self.pattern is not None else ASSIGN if self.assigned is not None else TOPIC
        return selector.name


_SELECTORS = (TOPIC, TOPIC_PATTERN, ASSIGN)


def parse_topic_selection(raw: Mapping[str, str]) -> TopicSelection:
    """`topic` (a list, in the order given, without repeats), `topic-pattern` or `assign`: exactly one, as Spark's
    kafka source takes exactly one of subscribe, subscribePattern and assign."""
    options = parse_options(raw)
    given = [o.name for o in _SELECTORS if (options.text(o) or "").strip()]
    if len(given) > 1:
        named = ", ".join(f"'{n}'" for n in given[:-1]) + f" and '{given[-1]}'"
        raise OptionError(
            f"options {named} exclude each other; give one of them (Spark's kafka source: exactly one of subscribe, "
            "subscribePattern, assign)"
        )
    pattern = options.value(TOPIC_PATTERN)  # compiled by its kind
    if TOPIC_PATTERN.name in given and pattern is not None:
        return TopicSelection(pattern=pattern.pattern)
    if options.given(ASSIGN) and given != [TOPIC.name]:
        return parse_assign(options.text(ASSIGN) or "")  # an empty one too: its error says what to write
    listed = require(options, TOPIC, "orders")
    # ';' is Flink's list separator and ',' Spark's (subscribe); neither can occur in a topic name.
    names = tuple(dict.fromkeys(t.strip() for t in re.split(r"[;,]", listed) if t.strip()))
    for name in names or ("",):
        _check_topic_name(name, TOPIC.name, "; several topics are separated by ';'")
    return TopicSelection(names)


_ASSIGN_EXAMPLE = '{"orders":[0,1],"payments":[2]}'


def parse_assign(raw: str) -> TopicSelection:
    """Spark's `assign`: a JSON object of topic -> partition numbers, e.g. {"orders":[0,1]}."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(
            f"option '{ASSIGN.name}' must be a JSON object of topics and their partitions, like {_ASSIGN_EXAMPLE}; "
            f"got '{raw}'"
        )
    assigned = []
    for topic, partitions in sorted(parsed.items()):
        _check_topic_name(topic, ASSIGN.name, "")
        if (
            not isinstance(partitions, list)
            or not partitions
            or any(type(p) is not int or p < 0 for p in partitions)  # JSON true or 1.5 is no partition
        ):
            raise OptionError(
                f"option '{ASSIGN.name}': topic '{topic}' must have a non-empty list of partition numbers (0 or "
                "more), like "
                f"{_ASSIGN_EXAMPLE}; got {json.dumps(partitions)}"
            )
        if len(set(partitions)) != len(partitions):
            twice = next(p for p in partitions if partitions.count(p) > 1)
            raise OptionError(f"option '{ASSIGN.name}' names partition {twice} of topic '{topic}' twice")
        assigned.append((topic, tuple(sorted(partitions))))
    return TopicSelection(tuple(t for t, _ in assigned), assigned=tuple(assigned))


def _check_topic_name(name: str, option: str, hint: str) -> None:
    if not _TOPIC_NAME.fullmatch(name) or name in (".", ".."):
        raise OptionError(
            f"option '{option}': '{name}' is not a Kafka topic name (1 to 249 of the characters a-z, A-Z, 0-9, "
            f"'.', '_' and '-'){hint}"
        )


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
