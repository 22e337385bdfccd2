"""StreamOffset (read/offsets.py), the stream's offset as a value: its JSON form is what Spark stores in the checkpoint
and compares as text, so it must stay byte for byte what earlier versions wrote; it reads those, and the unversioned
form before them, and refuses a newer form; equal offsets are equal values, whatever dict they came from."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark_upsert_kafka.errors import OptionError
from pyspark_upsert_kafka.read.offsets import BatchPlan, StreamOffset

CHECKPOINTS = Path(__file__).resolve().parents[1] / "compat" / "checkpoints"


def _source_lines(fixture: Path) -> list[str]:
    """The source offsets of each batch in a checkpoint fixture's offset log (after the version and metadata)."""
    return [f.read_text().splitlines()[2] for f in sorted((fixture / "offsets").iterdir())]


def test_the_json_form_is_the_canonical_one_spark_stores():
    offset = StreamOffset(
        {"b": {10: 7, 2: 5}, "a": {0: 1}},
        {"b": {2: 1_700_000_000_000}},
        BatchPlan(max_records=100, idle=frozenset({("b", 2)}), start={"b": {10: 3, 2: 4}, "a": {0: 0}}, coalesce=9),
    )
    assert offset.text == json.dumps(offset.to_json())
    assert offset.text == (
        '{"@format": 1, "@plan": {"idle": {"b": [2]}, "split": {"max-records": 100, "coalesce": 9}, '
        '"start": {"a": {"0": 0}, "b": {"2": 4, "10": 3}}}, "@watermarks": {"b": {"2": 1700000000000}}, '
        '"a": {"0": 1}, "b": {"2": 5, "10": 7}}'
    )
    initial = StreamOffset({"t": {0: 5}}, {"t": {}}, initial=True)
    assert initial.text == '{"@format": 1, "@initial": true, "@watermarks": {"t": {}}, "t": {"0": 5}}'
    assert StreamOffset({"t": {}}).text == '{"@format": 1, "t": {}}'


@pytest.mark.parametrize("fixture", sorted(p for p in CHECKPOINTS.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_checkpointed_offsets_read_back_and_write_the_same_text(fixture):
    for line in _source_lines(fixture):
        offset = StreamOffset.from_json(line)
        assert StreamOffset.from_json(json.loads(line)) == offset, "Spark's text or the dict of it alike"
        if fixture.name.endswith("-unversioned"):  # written before the form was recorded: form 1, now said
            assert json.loads(offset.text) == {"@format": 1, **json.loads(line)}
        else:
            assert offset.text == line


def test_the_unversioned_form_before_plans_were_recorded_reads_as_form_1():
    offset = StreamOffset.from_json({"t": {"0": 4, "1": 2}, "@watermarks": {"t": {"1": 99}}})
    assert offset.offsets == {"t": {0: 4, 1: 2}} and offset.watermarks == {"t": {1: 99}}
    assert offset.plan is None and not offset.initial
    assert offset == StreamOffset({"t": {0: 4, 1: 2}}, {"t": {1: 99}})


@pytest.mark.parametrize("form", [2, 99, "1", None])
def test_a_newer_or_unknown_form_is_refused_saying_what_to_do(form):
    with pytest.raises(OptionError, match=rf"offsets of form {form!r}, written by a newer pyspark-upsert-kafka"):
        StreamOffset.from_json({"@format": form, "t": {"0": 1}})


def test_equal_by_value_whatever_dict_it_came_from():
    one = StreamOffset({"a": {1: 5, 0: 3}, "b": {0: 1}}, plan=BatchPlan(coalesce=10, start={"a": {0: 0}}))
    two = StreamOffset({"b": {"0": 1}, "a": {"0": 3, "1": 5}}, {}, BatchPlan(coalesce=10, start={"a": {"0": 0}}))
    assert one == two and hash(one) == hash(two) and len({one, two}) == 1
    assert one == StreamOffset.from_json(one.to_json()) == StreamOffset.from_json(one.text)
    assert one != StreamOffset(one.offsets), "the plan is part of the value"
    assert one != dataclasses.replace(one, initial=True)
    assert one != dataclasses.replace(one, watermarks={"a": {0: 1}})
    assert StreamOffset({"a": {0: 1}}) != StreamOffset({"a": {0: 2}})
    assert StreamOffset({"a": {0: 1}}) != {"@format": 1, "a": {"0": 1}}, "a value, not its JSON form"


def test_frozen_through_and_through():
    given_offsets = {"a": {0: 1}}
    offset = StreamOffset(given_offsets, plan=BatchPlan(start={"a": {0: 0}}))
    given_offsets["a"][0] = 99
    assert offset.offsets == {"a": {0: 1}}, "a copy of what it was given"
    with pytest.raises(dataclasses.FrozenInstanceError):
        offset.initial = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        offset.offsets["a"][0] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        offset.plan.start["b"] = {}  # type: ignore[index,union-attr]


def test_it_pickles_with_the_reader_that_keeps_it():
    offset = StreamOffset({"a": {0: 1}}, {"a": {0: 5}}, BatchPlan(idle=frozenset({("a", 0)})), initial=True)
    assert pickle.loads(pickle.dumps(offset)) == offset


def test_is_ours_tells_this_connectors_offsets_from_sparks_kafka_source():
    assert StreamOffset.is_ours(json.loads(StreamOffset({"t": {0: 1}}).text))
    assert StreamOffset.is_ours({"@plan": {"split": {}}, "t": {"0": 1}}), "the unversioned form"
    assert StreamOffset.is_ours({"@initial": True, "t": {"0": 1}})
    assert not StreamOffset.is_ours({"t": {"0": 1}}), "Spark's JVM Kafka source writes the same topic form"
    assert not StreamOffset.is_ours("-") and not StreamOffset.is_ours([1])


_maps = st.dictionaries(
    st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=6).filter(
        lambda t: not t.startswith("@")
    ),
    st.dictionaries(st.integers(0, 1000), st.integers(0, 2**62), max_size=4),
    max_size=4,
)
_plans = st.none() | st.builds(
    BatchPlan,
    st.none() | st.integers(1, 10**6),
    st.none() | st.integers(1, 64),
    st.frozensets(st.tuples(st.sampled_from("abc"), st.integers(0, 9)), max_size=4),
    st.none() | _maps,
    st.none() | st.integers(1, 10**6),
    st.none() | st.integers(1, 16),
)


@given(_maps, _maps, _plans, st.booleans())
def test_round_trip_through_sparks_text(offsets, watermarks, plan, initial):
    offset = StreamOffset(offsets, watermarks, plan, initial)
    back = StreamOffset.from_json(json.loads(offset.text))
    assert back == offset and back.text == offset.text and hash(back) == hash(offset)
    assert back.offsets == offsets and back.watermarks == watermarks and back.initial == initial
    assert back.plan == plan
