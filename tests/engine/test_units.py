"""Unit vocabulary, conversions and display rules (calculators.engine.units)."""

import math

import pytest

from calculators.engine.errors import AnswerError
from calculators.engine.units import CANONICAL_UNITS, Unit, convert, dimension_phrase, format_quantity, get_unit, quote


@pytest.mark.parametrize(
    ("symbol", "dimension", "factor"),
    [
        ("B", "memory", 1),
        ("GiB", "memory", 2**30),
        ("GB", "memory", 1e9),
        ("GB/s", "bandwidth", 1e9),
        ("FLOP", "operations", 1),
        ("FLOP/s", "compute", 1),
        ("FLOP/byte", "intensity", 1),
        ("tok", "tokens", 1),
        ("tok/s", "token_rate", 1),
        ("s", "time", 1),
        ("ms", "time", 1e-3),
        ("users", "users", 1),
        ("GPUs", "gpus", 1),
        ("nodes", "nodes", 1),
        ("replicas", "replicas", 1),
        ("USD", "money", 1),
        ("USD/h", "money_rate", 1 / 3600),
        ("USD/Mtok", "token_price", 1e-6),
        ("1", "dimensionless", 1),
        ("req/s", "request_rate", 1),
        ("µs", "time", 1e-6),
        ("requests", "requests", 1),
    ],
)
def test_canonical_units(symbol, dimension, factor):
    unit = get_unit(symbol)
    assert isinstance(unit, Unit)
    assert unit.symbol == symbol
    assert unit.dimension == dimension
    assert unit.factor == pytest.approx(factor, rel=1e-15)


def test_every_canonical_unit_is_listed_and_resolves():
    assert len(CANONICAL_UNITS) == 22  # DESIGN §10's nineteen and §11's req/s, µs, requests
    for symbol in CANONICAL_UNITS:
        assert get_unit(symbol).symbol == symbol


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("bytes", "B"), ("byte", "B"), ("KB", "B"), ("kB", "B"), ("MB", "B"), ("TB", "B"),
        ("PB", "B"), ("KiB", "B"), ("MiB", "B"), ("TiB", "B"), ("PiB", "B"), ("bit", "B"),
        ("bits", "B"), ("MB/s", "GB/s"), ("TB/s", "GB/s"), ("GiB/s", "GB/s"), ("TiB/s", "GB/s"),
        ("GFLOP/s", "FLOP/s"), ("TFLOP/s", "FLOP/s"), ("PFLOP/s", "FLOP/s"), ("FLOPS", "FLOP/s"),
        ("TFLOPS", "FLOP/s"), ("PFLOPS", "FLOP/s"), ("TFLOP", "FLOP"), ("PFLOP", "FLOP"),
        ("GFLOP", "FLOP"), ("FLOPs", "FLOP"), ("FLOP/B", "FLOP/byte"), ("FLOPs/byte", "FLOP/byte"),
        ("tokens", "tok"), ("token", "tok"), ("tokens/s", "tok/s"), ("tok/sec", "tok/s"),
        ("ns", "s"), ("µs", "s"), ("μs", "s"), ("us", "s"), ("sec", "s"), ("min", "s"),
        ("h", "s"), ("hr", "s"), ("$", "USD"), ("$/h", "USD/h"), ("$/M tok", "USD/Mtok"),
        ("$/Mtok", "USD/Mtok"), ("$/1M tokens", "USD/Mtok"), ("user", "users"), ("GPU", "GPUs"),
        ("cards", "GPUs"), ("node", "nodes"), ("replica", "replicas"), ("%", "1"),
    ],
)
def test_accepted_spellings_share_the_canonical_dimension(spelling, canonical):
    assert get_unit(spelling).exponents == get_unit(canonical).exponents


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [
        (52, "GB", "GiB", 52e9 / 2**30),
        (128, "KiB", "B", 131072),
        (131072, "bits", "B", 16384),
        (3.35, "TB/s", "GB/s", 3350),
        (1, "GiB/s", "GB/s", 1.073741824),
        (989, "TFLOPS", "FLOP/s", 989e12),
        (1.5, "PFLOP", "FLOP", 1.5e15),
        (1, "h", "s", 3600),
        (2, "min", "s", 120),
        (500, "µs", "ms", 0.5),
        (500, "μs", "ms", 0.5),
        (500, "us", "ms", 0.5),
        (250, "ns", "ms", 2.5e-4),
        (2.5, "$/h", "USD/h", 2.5),
        (0.12, "$/1M tokens", "USD/Mtok", 0.12),
        (90, "%", "1", 0.9),
        (1, "1Ktokens", "tok", 1000),
    ],
)
def test_convert(value, source, target, expected):
    assert convert(value, source, target) == pytest.approx(expected, rel=1e-12)


def test_convert_keeps_decimal_conversions_exact():
    assert convert(3.35, "TB/s", "GB/s") == 3350.0
    assert convert(90, "%", "1") == 0.9
    assert convert(81559, "MiB", "GiB") == 81559 / 1024


def test_convert_rejects_a_dimension_mismatch():
    with pytest.raises(AnswerError, match=r"Cannot convert GiB/s \(a bandwidth\) to GiB \(a memory size\)"):
        convert(52, "GiB/s", "GiB")


def test_money_rates_compose_with_time():
    # $/h is USD per second in the coherent base, so $/h × h is dollars.
    assert get_unit("USD/h").exact_factor * get_unit("h").exact_factor == get_unit("USD").exact_factor


def test_whitespace_is_ignored_inside_a_unit():
    assert get_unit("TB / s").symbol == "TB/s"
    assert get_unit(" $ / M tok ").symbol == "$/Mtok"


@pytest.mark.parametrize("symbol", ["Mb", "Gb", "gb", "mb", "Ms", "b", "flops", "x", "parsec", "", "GB/", "/s"])
def test_unknown_or_ambiguous_units_are_rejected(symbol):
    with pytest.raises(AnswerError, match="is not a unit I know"):
        get_unit(symbol)


def test_unknown_unit_hints():
    with pytest.raises(AnswerError, match=r"did you mean 'GB'\? Units are case-sensitive and bits are written 'bit'"):
        get_unit("Gb")
    with pytest.raises(AnswerError, match=r"write \* or ×"):
        get_unit("x")
    # "65,536 b": a lone lower-case b says why it is refused (a new user read "did you mean 'B'?" as pedantry)
    with pytest.raises(AnswerError, match=r"'b' is not a unit I know \(a lower-case 'b' means bits to some and "
                                          r"bytes to others: write 'B' for bytes or 'bit' for bits\)"):
        get_unit("b")


def test_flops_capital_s_is_throughput_lowercase_s_is_a_count():
    assert get_unit("TFLOPS").dimension == "compute"
    assert get_unit("TFLOPs").dimension == "operations"


def test_whole_words_ignore_case_but_symbols_do_not():
    assert get_unit("Tokens").dimension == "tokens"
    assert get_unit("GPUS").dimension == "gpus"
    assert get_unit("Hours").factor == 3600
    with pytest.raises(AnswerError):
        get_unit("MS")


def test_dimension_phrases():
    assert dimension_phrase("memory") == "a memory size"
    assert dimension_phrase("bandwidth") == "a bandwidth"
    assert dimension_phrase("compute") == "a compute throughput"
    assert dimension_phrase("intensity") == "an arithmetic intensity"
    assert dimension_phrase("users") == "a user count"
    assert dimension_phrase("B·s") == "a quantity in B·s"
    assert get_unit("tok/s/user").phrase == "a quantity in tok/(s·user)"


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        (131072, "B", "131,072 B"),
        (14.9575, "GiB", "14.96 GiB"),
        (16.0, "GB", "16.00 GB"),
        (295.37, "FLOP/byte", "295.4 FLOP/byte"),
        (208.46, "tok/s", "208.5 tok/s"),
        (2.5, "USD", "$2.50"),
        (2.5, "USD/h", "$2.50/h"),
        (0.12, "USD/Mtok", "$0.12/Mtok"),
        (-2.5, "USD/h", "-$2.50/h"),
        (1234567.891, "USD", "$1,234,567.89"),
        (53, "users", "53 users"),
        (16, "GPUs", "16 GPUs"),
        (2, "nodes", "2 nodes"),
        (4, "replicas", "4 replicas"),
        (4096.4, "tok", "4,096 tok"),
        (1.4e15, "FLOP", "1.4e15 FLOP"),
        (2.8e12, "FLOP", "2,800,000,000,000 FLOP"),
        (3350, "GB/s", "3,350 GB/s"),
        (989e12, "FLOP/s", "9.89e14 FLOP/s"),
        (15.522388, "ms", "15.52 ms"),
        (0.0155, "s", "0.0155 s"),
        (0.9, "1", "0.9"),
        (90, "%", "90%"),
        (-0.001, "GiB", "0.00 GiB"),
        (0, "s", "0 s"),
        (1.2e-4, "s", "1.2e-4 s"),
    ],
)
def test_format_quantity(value, unit, expected):
    assert format_quantity(value, unit) == expected


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_format_quantity_rejects_non_finite_values(value):
    with pytest.raises(AnswerError, match="not a finite number"):
        format_quantity(value, "GiB")


def test_format_quantity_rejects_unknown_units():
    with pytest.raises(AnswerError, match="'parsec' is not a unit I know"):
        format_quantity(1, "parsec")


def test_quote_shortens_and_cleans():
    assert quote("52 GB") == "'52 GB'"
    assert quote("a\nb\tc") == "'a b c'"
    long = quote("9" * 100_000)
    assert long.endswith("…'") and len(long) <= 42
    assert quote("a\x00b") == "'a?b'"


def test_the_unit_table_is_the_parsers_vocabulary_and_tells_counts_apart():
    from calculators.engine.formula import UNIT_IN_BASE
    from calculators.engine.units import RECORDS

    for symbol, record in RECORDS.items():
        assert get_unit(symbol).exponents == record.exponents, symbol
        assert symbol in UNIT_IN_BASE
    # users, GPUs, nodes, replicas, requests and tokens are different dimensions: none converts to another.
    counts = ["users", "GPUs", "nodes", "replicas", "requests", "tok"]
    assert len({RECORDS[c].exponents for c in counts}) == len(counts)
    with pytest.raises(AnswerError):
        convert(3, "users", "GPUs")
    # A GPU-hour is a GPU for 3,600 s: 7,200 GPU·s is 2 GPU-h, and it is not an hour.
    assert get_unit("GPU-h").factor == 3600
    with pytest.raises(AnswerError):
        convert(1, "GPU-h", "h")
