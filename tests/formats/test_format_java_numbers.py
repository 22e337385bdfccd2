"""Numbers written as Java (and so Flink's Jackson-based formats) writes them: Float.toString /
Double.toString for FLOAT / DOUBLE, Jackson's normalized BigDecimal for DECIMAL. Pure logic, no Kafka.

The expected texts are Java's (JDK 19+ Double.toString / Float.toString, BigDecimal.toString and
toPlainString after stripTrailingZeros)."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pyspark_upsert_kafka.formats.java_numbers import decimal_text, decimal_texts, float_text, float_texts

FLOAT_MIN = struct.unpack("<f", struct.pack("<I", 1))[0]
FLOAT_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]

JAVA = [  # value, is float32, what Java writes
    (0.0, False, "0.0"),
    (-0.0, False, "-0.0"),
    (1.0, False, "1.0"),
    (-1.5, False, "-1.5"),
    (100.0, False, "100.0"),
    (0.001, False, "0.001"),
    (1e-4, False, "1.0E-4"),
    (9999999.0, False, "9999999.0"),
    (1e7, False, "1.0E7"),
    (12345678.9, False, "1.23456789E7"),
    (-1.6e9, False, "-1.6E9"),
    (1e21, False, "1.0E21"),
    (2e23, False, "2.0E23"),
    (0.1 + 0.2, False, "0.30000000000000004"),
    (5e-324, False, "4.9E-324"),  # Double.MIN_VALUE: two digits, closer than 5.0E-324
    (2.2250738585072014e-308, False, "2.2250738585072014E-308"),
    (1.7976931348623157e308, False, "1.7976931348623157E308"),
    (math.nan, False, "NaN"),
    (math.inf, False, "Infinity"),
    (-math.inf, False, "-Infinity"),
    (1.1, True, "1.1"),
    (16777218.0, True, "1.6777218E7"),
    (3e10, True, "3.0E10"),
    (1e-5, True, "1.0E-5"),
    (FLOAT_MIN, True, "1.4E-45"),
    (FLOAT_MAX, True, "3.4028235E38"),
]


@pytest.mark.parametrize(("value", "single", "java"), JAVA)
def test_floats_are_written_as_javas_to_string_writes_them(value, single, java):
    assert float_text(value, single) == java
    column = pa.array([value, None], pa.float32() if single else pa.float64())
    assert float_texts(column, quote_non_finite=False).to_pylist() == [java, None]


def test_non_finite_floats_are_quoted_for_json():
    column = pa.array([math.nan, math.inf, -math.inf, 2.0])
    assert float_texts(column, quote_non_finite=True).to_pylist() == ['"NaN"', '"Infinity"', '"-Infinity"', "2.0"]


def _bits(width: int) -> st.SearchStrategy[float]:
    """Any bit pattern, so every exponent (subnormals, huge, tiny) turns up, not only 'nice' values."""
    if width == 32:
        return st.integers(0, 2**32 - 1).map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])
    return st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0])


@given(st.lists(st.floats() | _bits(64), min_size=1, max_size=20))
@example([5e-324, 1e-310, 123456789012345680.0, 1e15, 1e16, 1e-7])
def test_column_of_doubles_and_each_value_alone_give_the_same_text(values):
    column = pa.array(values, pa.float64())
    assert float_texts(column, False).to_pylist() == [float_text(v, False) for v in values]


@given(st.lists(st.floats(width=32) | _bits(32), min_size=1, max_size=20))
def test_column_of_floats_and_each_value_alone_give_the_same_text(values):
    column = pa.array(values, pa.float32())
    assert float_texts(column, False).to_pylist() == [float_text(v, True) for v in column.to_pylist()]


@given(st.floats(allow_nan=False, allow_infinity=False) | _bits(64).filter(math.isfinite))
def test_a_double_is_written_with_the_fewest_digits_that_read_back_to_it(value):
    text = float_text(value, False)
    assert float(text) == value and math.copysign(1, float(text)) == math.copysign(1, value)
    mantissa = text.lstrip("-").split("E")[0]
    digits = mantissa.replace(".", "").lstrip("0").rstrip("0") or "0"
    shortest = repr(abs(value)).split("e")[0].replace(".", "").lstrip("0").rstrip("0") or "0"
    assert len(digits) <= max(len(shortest), 2)


@pytest.mark.parametrize(
    ("value", "scientific", "plain"),
    [
        (Decimal("1.50"), "1.5", "1.5"),
        (Decimal("100.00"), "1E+2", "100"),
        (Decimal("0.00"), "0", "0"),
        (Decimal("-0.10"), "-0.1", "-0.1"),
        (Decimal("123.456789"), "123.456789", "123.456789"),
        (Decimal("454621864049246170"), "4.5462186404924617E+17", "454621864049246170"),  # Flink's own test
        (Decimal("0.000000027"), "2.7E-8", "0.000000027"),
        (Decimal("12345678901234567890123456789012345678"), "12345678901234567890123456789012345678", None),
    ],
)
def test_decimals_are_written_as_flinks_json_format_writes_them(value, scientific, plain):
    assert decimal_text(value, plain=False) == scientific
    assert decimal_text(value, plain=True) == (plain or scientific)


@given(
    st.sampled_from([(10, 4), (20, 10), (38, 0), (5, 5)]).flatmap(
        lambda ps: st.tuples(
            st.just(ps),
            st.lists(
                st.none() | st.decimals(-(10 ** (ps[0] - ps[1])) + 1, 10 ** (ps[0] - ps[1]) - 1, places=ps[1]),
                max_size=8,
            ),
        )
    ),
    st.booleans(),
)
@example(((20, 10), [Decimal("1E-10"), Decimal("0E-10"), Decimal("1200"), Decimal("-0.0000001")]), False)
def test_a_decimal_column_is_written_as_decimal_text_writes_each_value(column, plain):
    (precision, scale), values = column
    array = pa.array(values, pa.decimal128(precision, scale))
    expected = [None if v is None else decimal_text(v, plain) for v in array.to_pylist()]
    assert decimal_texts(array, plain).to_pylist() == expected
