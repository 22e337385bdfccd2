"""Numbers as Java writes them, so the bytes we write are the bytes Flink's Jackson-based formats write.

Jackson writes a FLOAT / DOUBLE with `Float.toString` / `Double.toString`: the shortest decimal that reads
back to the same value (of at least two digits when one digit is not the closest, JDK 19+), plain from 10^-3
up to 10^7 with at least one fraction digit (`1.0`, `0.001`, `-0.0`), else `d.dddE<n>` (`1.0E7`, `1.5E-4`).
NaN and the infinities are `NaN`, `Infinity`, `-Infinity` (quoted in JSON). A DECIMAL in Flink's json goes through
Jackson's node factory, which strips trailing zeros, then `BigDecimal.toString` (`1.5`, `1E+2`, `2.7E-8`) or, with
`encode.decimal-as-plain-number`, `toPlainString` (`100`, `0.000000027`); Flink's csv writes `toPlainString` of the
unstripped value (`12.30`) unless `write-bigdecimal-in-scientific-notation=true` is set, then as json's default.

`float_texts` does a whole column with Arrow kernels: Arrow's own float-to-string cast already gives the
shortest digits; only their layout is Java's. `float_text` is the same for one value (exact arithmetic,
used for the few values whose digits Arrow and Java may choose differently: subnormals).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from decimal import Context, Decimal, localcontext

import pyarrow as pa
import pyarrow.compute as pc

# Below the smallest normal value a float has so few significant bits that a two-digit decimal can be closer
# than the shortest one-digit decimal (Double.MIN_VALUE is 4.9E-324): those go through float_text.
_MIN_NORMAL = {pa.float32(): 1.1754943508222875e-38, pa.float64(): 2.2250738585072014e-308}


def float_texts(column: pa.Array, quote_non_finite: bool) -> pa.Array:
    """Every value of a float32 / float64 column as Java writes it (a string column, nulls kept).
    `quote_non_finite` writes NaN and the infinities as JSON strings."""
    parts = float_text_parts(column, quote_non_finite)
    return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "")


def float_text_parts(column: pa.Array, quote_non_finite: bool) -> tuple[pa.Array, ...]:
    """float_texts as string columns to concatenate element-wise (nulls: null in each): a caller that joins
    columns anyway (formats/json/vector.py) saves building one more string column."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    text = pc.cast(column, pa.string())
    magnitude = pc.abs(column)
    integral = pc.equal(pc.floor(column), column)
    finite = pc.is_finite(column)
    # Java's plain range. Arrow writes plain digits there too (the tests hold it to that over every exponent),
    # so only an integral value lacks Java's ".0"; the masks are numeric, cheaper than looking at the text.
    probe = pc.if_else(finite, pc.if_else(pc.equal(magnitude, 0), 1.0, magnitude), math.inf)
    low, high = pc.min_max(probe).values()
    if low.is_valid and low.as_py() >= 1e-3 and high.as_py() < 1e7:  # the common case: every value plain
        return text, pc.if_else(integral, ".0", "")
    plain = pc.or_(pc.and_(pc.greater_equal(magnitude, 1e-3), pc.less(magnitude, 1e7)), pc.equal(magnitude, 0))
    out = _where(text, pc.and_(plain, integral), _append_zero)
    out = _where(out, pc.and_(pc.invert(plain), finite), _scientific)
    if pc.any(pc.invert(finite)).as_py():
        q = '"' if quote_non_finite else ""
        infinity = pc.if_else(pc.greater(column, 0), f"{q}Infinity{q}", f"{q}-Infinity{q}")
        out = pc.if_else(finite, out, pc.if_else(pc.is_nan(column), f"{q}NaN{q}", infinity))
    # Subnormals: so few significant bits that Java may pick other digits than Arrow (two-digit 4.9E-324).
    odd = pc.and_(pc.less(magnitude, _MIN_NORMAL[column.type]), pc.not_equal(magnitude, 0))
    single = column.type == pa.float32()
    return (_where(out, odd, lambda _: pa.array([float_text(v, single) for v in column.filter(odd).to_pylist()])),)


def _where(out: pa.Array, mask: pa.Array, make: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """`out` with the rows under `mask` replaced by make(those rows of out): work only where needed."""
    mask = pc.fill_null(mask, False)
    if not pc.any(mask).as_py():
        return out
    return pc.replace_with_mask(out, mask, make(out.filter(mask)).cast(pa.string()))


def _append_zero(text: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(text, ".0", "")


def _scientific(text: pa.Array) -> pa.Array:
    """Arrow's text of finite non-zero floats outside Java's plain range as `d.dddE<n>`. Arrow writes them
    with an exponent (`1e+15`, `1.5e-7`) or plainly (`12345678.9`, `0.00012`)."""
    exponent_form = pc.match_substring(text, "e")
    out = _where(text, exponent_form, _from_exponent_form)
    return _where(out, pc.invert(exponent_form), _from_plain_form)


def _from_exponent_form(text: pa.Array) -> pa.Array:
    one_digit = pc.invert(pc.match_substring(text, "."))  # 1e+15 -> 1.0e+15 (regex kernels are slow)
    negative = pc.starts_with(text, "-")
    text = _where(text, pc.and_(one_digit, pc.invert(negative)), lambda t: pc.utf8_replace_slice(t, 1, 1, ".0"))
    text = _where(text, pc.and_(one_digit, negative), lambda t: pc.utf8_replace_slice(t, 2, 2, ".0"))
    return pc.replace_substring(pc.replace_substring(text, "e+", "E"), "e", "E")


def _from_plain_form(text: pa.Array) -> pa.Array:
    negative = pc.starts_with(text, "-")
    unsigned = pc.utf8_ltrim(text, "-")
    point = pc.find_substring(unsigned, ".")
    whole_digits = pc.if_else(pc.equal(point, -1), pc.utf8_length(unsigned), point)
    raw = pc.replace_substring(unsigned, ".", "")  # digits from 10^(whole_digits - 1) down
    significant = pc.utf8_ltrim(raw, "0")
    leading_zeros = pc.subtract(pc.utf8_length(raw), pc.utf8_length(significant))
    exponent = pc.subtract(pc.subtract(whole_digits, 1), leading_zeros)
    digits = pc.utf8_rpad(pc.utf8_rtrim(significant, "0"), 2, "0")  # at least one digit after the point
    out = pc.binary_join_element_wise(pc.utf8_replace_slice(digits, 1, 1, "."), pc.cast(exponent, pa.string()), "E")
    return _where(out, negative, lambda t: pc.utf8_replace_slice(t, 0, 0, "-"))


def float_text(value: float, single: bool) -> str:
    """One float32 (`single`) or float64 value as Java's Float.toString / Double.toString (JDK 19+) writes it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    digits, exponent = _shortest(abs(value), single)
    if -3 <= exponent < 7:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
        whole = digits[: exponent + 1].ljust(exponent + 1, "0")
        return f"{sign}{whole}.{digits[exponent + 1 :] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest(x: float, single: bool) -> tuple[str, int]:
    """The digits (no leading or trailing zeros) and decimal exponent of the shortest decimal that rounds to
    `x`, the closest such (ties: even last digit); when that has one digit, the closest of one or two digits."""
    with localcontext(_EXACT):
        (low, low_in), (high, high_in) = _rounding_interval(x, single)

        def rounds_to_x(c: Decimal) -> bool:
            return low < c < high or (c == low and low_in) or (c == high and high_in)

        exact = Decimal(x)
        for length in range(1, 18):
            nearest = Decimal(f"{x:.{length - 1}e}")  # correctly rounded; a neighbour may fit where it does not
            step = Decimal(1).scaleb(nearest.adjusted() - length + 1)
            # The next shorter-spaced decimal below a power of ten, e.g. 9.9 below 10 for two digits.
            below = nearest - (step / 10 if nearest == Decimal(1).scaleb(nearest.adjusted()) else step)
            candidates = [c for c in (below, nearest, nearest + step) if rounds_to_x(c)]
            if not candidates:
                continue
            if length == 1 and rounds_to_x(two := Decimal(f"{x:.1e}")):  # Java weighs two digits then too
                candidates.append(two)
            best = min(candidates, key=lambda c: (abs(c - exact), c.as_tuple().digits[-1] % 2))
            return "".join(map(str, best.as_tuple().digits)).rstrip("0"), best.adjusted()
    raise AssertionError(f"no decimal rounds to {x!r}")  # pragma: no cover


def _rounding_interval(x: float, single: bool) -> tuple[tuple[Decimal, bool], tuple[Decimal, bool]]:
    """The decimals that round to positive finite `x` lie between these bounds (exact); a bound is included
    (True) when round-half-even picks `x` there, i.e. when x's significand is even."""
    fmt, bits_fmt = ("<f", "<I") if single else ("<d", "<Q")
    bits = struct.unpack(bits_fmt, struct.pack(fmt, x))[0]
    below = Decimal(struct.unpack(fmt, struct.pack(bits_fmt, bits - 1))[0])
    above = struct.unpack(fmt, struct.pack(bits_fmt, bits + 1))[0]
    exact, even = Decimal(x), bits % 2 == 0
    # Past the largest finite value the next step would be as wide as the last one.
    high = exact + (exact - below) / 2 if math.isinf(above) else (exact + Decimal(above)) / 2
    return ((exact + below) / 2, even), (high, even)


# Wide enough for the exact decimal expansion of any double (at most 767 significant digits).
_EXACT = Context(prec=1600)


def decimal_texts(column: pa.Array, plain: bool) -> pa.Array:
    """Every value of a decimal column as decimal_text writes it (a string column, nulls kept), with Arrow
    kernels: Arrow's text has all `scale` fraction digits, so stripping trailing zeros is a text edit; only the
    values whose BigDecimal.toString has an exponent (`1E+2`, `1.2E-7`) go through decimal_text."""
    # Arrow writes BigDecimal.toString of the unstripped value: plain, with all `scale` fraction digits, unless
    # below 10^-6 (`1.200E-7`, `0E-10`); those few go through decimal_text.
    text = pc.cast(column, pa.string())
    exponent = pc.fill_null(pc.match_substring(text, "E"), False)
    if column.type.scale > 0:  # the zeros stripped are fraction digits (and the point): every plain value has one
        text = pc.if_else(exponent, text, pc.replace_substring_regex(text, r"\.?0+$", ""))
    if not plain:  # toString of the stripped value has an exponent for an integer with trailing zeros too (1E+2)
        exponent = pc.or_(exponent, pc.match_substring_regex(text, r"^-?[1-9]\d*0$"))
    return _where(text, exponent, lambda t: pa.array([decimal_text(Decimal(v), plain) for v in t.to_pylist()]))


def decimal_scale_texts(column: pa.Array) -> pa.Array:
    """Every value of a decimal column as BigDecimal.toPlainString writes it with all `scale` fraction digits
    (`12345678.90`, `0.00`, `0.000000000000000001`): Flink's csv format by default. Arrow's text is that, except
    below 10^-6 (`1E-18`, `0E-18`, `-1.00000000000E-7`): those few go through Python's Decimal."""
    text = pc.cast(column, pa.string())
    exponent = pc.fill_null(pc.match_substring(text, "E"), False)
    return _where(text, exponent, lambda t: pa.array([format(Decimal(v), "f") for v in t.to_pylist()]))


def decimal_text(value: Decimal, plain: bool) -> str:
    """A DECIMAL as Flink's json format writes it: trailing zeros stripped (Jackson's node factory), then
    BigDecimal.toString, or toPlainString with `plain`. Zero is `0`."""
    if not value:
        return "0"
    stripped = value.normalize(_EXACT)
    return format(stripped, "f") if plain else str(stripped)
