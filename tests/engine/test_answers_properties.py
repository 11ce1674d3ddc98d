"""Property tests for the answer parser: it never crashes, stays fast, and reads
back everything that format_quantity displays."""

import math
import re
import time
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calculators.engine.answers import MAX_LENGTH, parse_answer, parse_quantity
from calculators.engine.errors import AnswerError
from calculators.engine.units import CANONICAL_UNITS, format_quantity

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Characters the parser gives meaning to, plus look-alikes and troublemakers.
SOUP = list("0123456789.,_eE+-*/^()% $×·⋅÷−–µμ \t\n") + [
    "**", "GB", "GiB", "B", "KiB", "TB/s", "tok/s", "FLOP/byte", "users", "s", "ms", "h",
    "$/M tok", "1e308", "9^9^9", "((", "))", "inf", "nan", "Mb", "x", "\u200b", "\x00", "٣", "²",
]


def check_one(text, unit="GiB"):
    """Parse, and require: AnswerError or a finite float; quick; short messages."""
    started = time.perf_counter()
    try:
        parsed = parse_answer(text, unit)
    except AnswerError as error:
        message = str(error)
        assert message and "\n" not in message and len(message) < 400
        if len(text) > 45:
            assert all(text[i:i + 45] not in message for i in range(len(text) - 44))
    else:
        assert isinstance(parsed.value, float) and math.isfinite(parsed.value)
        assert math.isfinite(parsed.typed_value)
        assert len(text.strip()) <= MAX_LENGTH
    # Generous: a loaded CI machine; bench/bench_parser.py measures against 50 ms.
    assert time.perf_counter() - started < 0.5


@FAST
@given(st.text(max_size=300))
def test_arbitrary_text_only_raises_answer_error(text):
    check_one(text)


@FAST
@given(st.lists(st.sampled_from(SOUP), max_size=80).map("".join),
       st.sampled_from(CANONICAL_UNITS))
def test_operator_soup_only_raises_answer_error(text, unit):
    check_one(text, unit)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["(", "-", "2^", "9^", "1+", "((1)*", "1 GB*", "$", "1e9*"]),
       st.integers(min_value=1, max_value=50_000))
def test_long_repetitions_are_rejected_quickly(piece, count):
    check_one(piece * count + "1")


@st.composite
def expressions(draw, depth=0):
    """(text, exact value) for a random +, -, *, / tree of small integers."""
    if depth >= 3 or draw(st.booleans()):
        number = draw(st.integers(min_value=0, max_value=999))
        return str(number), Fraction(number)
    left_text, left = draw(expressions(depth + 1))
    right_text, right = draw(expressions(depth + 1))
    operator = draw(st.sampled_from(["+", "-", "*", "/", "×", "÷", "−"]))
    if operator in "/÷" and right == 0:
        operator = "+"
    result = {"+": left + right, "-": left - right, "−": left - right, "*": left * right,
              "×": left * right, "/": left / right if right else None,
              "÷": left / right if right else None}[operator]
    return f"({left_text} {operator} {right_text})", result


@FAST
@given(expressions())
def test_arithmetic_matches_exact_reference(case):
    text, expected = case
    got = parse_answer(text, "1").value
    assert math.isclose(got, float(expected), rel_tol=1e-9, abs_tol=1e-9)


@FAST
@given(st.integers(min_value=0, max_value=10**15))
def test_thousands_separators_and_underscores(number):
    assert parse_answer(f"{number:,}", "B").value == float(number)
    assert parse_answer(f"{number:_}", "B").value == float(number)


def display_tolerance(formatted):
    """Half a unit in the last displayed digit of the number in ``formatted``."""
    number = re.search(r"\d[\d,]*(?:\.(\d+))?(?:e(-?\d+))?", formatted)
    decimals = len(number.group(1) or "")
    exponent = int(number.group(2) or 0)
    return 0.5 * 10.0 ** (exponent - decimals)


WIDE = st.one_of(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e200, max_value=1e200, allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(10**18), max_value=10**18).map(float),
    st.sampled_from([0.0, -0.0, 1e-9, 0.005, 0.004999, 0.995, 9.9996, 999.95, 1e15, 999999999.6]),
)


@FAST
@given(WIDE, st.sampled_from(CANONICAL_UNITS + ("%", "TFLOP/s", "KiB", "MiB", "h", "TB/s")))
def test_formatted_quantities_parse_back_within_display_rounding(x, unit):
    formatted = format_quantity(x, unit)
    step_unit = "1" if unit == "%" else unit
    parsed = parse_answer(formatted, step_unit).value
    if unit == "%":
        parsed *= 100
    # The floor covers subnormals, where the conversion itself underflows.
    tolerance = display_tolerance(formatted) * (1 + 1e-9) + abs(x) * 1e-12 + 1e-300
    assert abs(parsed - x) <= tolerance, (x, unit, formatted, parsed)


@FAST
@given(st.floats(min_value=1e-6, max_value=1e12, allow_nan=False),
       st.sampled_from([("GB", "GiB"), ("KiB", "B"), ("TB/s", "GB/s"), ("h", "s"), ("µs", "ms"),
                        ("TFLOPS", "FLOP/s"), ("$/1M tokens", "USD/Mtok"), ("bits", "B")]))
def test_typed_unit_conversion_agrees_with_parse_quantity(x, units):
    typed, step = units
    text = f"{x!r} {typed}"
    parsed = parse_answer(text, step)
    number, unit = parse_quantity(text)
    assert number == x and parsed.typed_value == x
    assert math.isclose(parsed.value, x * unit.factor / parse_quantity(f"1 {step}")[1].factor, rel_tol=1e-12)
