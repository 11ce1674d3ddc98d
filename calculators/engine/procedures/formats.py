"""The ``formats`` family: what the bits of a number format buy (range and precision).

Steps, in order: ``total_bits`` (the width the name states), ``exponent_bits``,
``mantissa_bits`` (stored fraction bits: total − sign − exponent; the leading 1
of a normal number is implicit), ``max_normal`` (largest finite value),
``min_normal`` (smallest positive normal value, 2^(1 − bias) with bias =
2^(e−1) − 1) and ``epsilon`` (the gap between 1 and the next value, 2^−m). All
in unit ``1``.

Formats: fp32 and fp16 (IEEE 754-2008 binary32 and binary16), bf16 (Google's
bfloat16: fp32's exponent, 7 mantissa bits), fp8 E4M3 and E5M2 (the OCP 8-bit
Floating Point Specification, OFP8 rev. 1.0, 2023), int8 and int4 (two's
complement). E4M3 is the one float that breaks the IEEE pattern: it has no
infinities and only one NaN mantissa pattern, so its top exponent code holds
normal numbers and its largest value is 1.75 × 2^8 = 448 rather than the
1.875 × 2^7 = 240 of an IEEE-style layout.

Integers have no exponent and no fraction: they show 0 exponent bits and 0
mantissa bits, ``max_normal`` is their largest value 2^(n−1) − 1,
``min_normal`` their most negative value −2^(n−1), and ``epsilon`` the step
between neighbours, 2^0 = 1.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping

from sympy import Pow

from ..catalog import Catalog
from ..formula import Formula, Var
from ..formulas import product, total
from .base import Family, Plan, Result, StepSpec, evaluate_steps
from .inputs import InputSpec, catalog_or_default, clean_inputs


def identity(key: str, label: str, var: Var) -> Formula:
    """A step that reads one given value off the problem (``key = var``)."""
    return Formula(key, (var,), lambda s: s[var.name], label=label)


# --- the formats ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class NumberFormat:
    """One number format's layout.

    ``width`` is bits per value; ``exponent`` and ``mantissa`` are the exponent
    and stored fraction bits (0 and 0 for integers); ``finite_only`` marks a
    float with no infinities whose top exponent code holds normal numbers (OCP
    E4M3); ``source`` names the standard that defines it.
    """

    id: str
    name: str
    width: int
    exponent: int
    mantissa: int
    is_int: bool
    finite_only: bool
    source: str
    # Every code is a number (FP4 E2M1: no infinities, no NaN); block formats share one scale of
    # ``scale_bits`` among ``block`` elements.
    no_specials: bool = False
    block: int = 0
    scale_bits: int = 0
    scale: str = ""


FORMATS: dict[str, NumberFormat] = {f.id: f for f in (
    NumberFormat("fp32", "fp32 (IEEE binary32)", 32, 8, 23, False, False, "IEEE 754-2008 binary32"),
    NumberFormat("bf16", "bf16 (bfloat16)", 16, 8, 7, False, False, "Google's bfloat16 (fp32 cut to 16 bits)"),
    NumberFormat("fp16", "fp16 (IEEE binary16)", 16, 5, 10, False, False, "IEEE 754-2008 binary16"),
    NumberFormat("fp8_e4m3", "fp8 E4M3 (OCP)", 8, 4, 3, False, True,
                 "OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, 2023"),
    NumberFormat("fp8_e5m2", "fp8 E5M2 (OCP)", 8, 5, 2, False, False,
                 "OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, 2023"),
    NumberFormat("int8", "int8", 8, 0, 0, True, False, "two's complement"),
    NumberFormat("int4", "int4", 4, 0, 0, True, False, "two's complement"),
    NumberFormat("nvfp4", "NVFP4 (FP4 E2M1 in blocks of 16, FP8 E4M3 scale)", 4, 2, 1, False, False,
                 "NVIDIA's NVFP4 (Blackwell): OCP FP4 E2M1 elements, one FP8 E4M3 scale per 16", True, 16, 8,
                 "FP8 E4M3"),
    NumberFormat("mxfp4", "MXFP4 (FP4 E2M1 in blocks of 32, E8M0 scale)", 4, 2, 1, False, False,
                 "OCP Microscaling Formats (MX) Specification v1.0, 2023", True, 32, 8, "E8M0 (a power of two)"),
)}

FORMAT = InputSpec("format", "choice", "bf16", "number format", choices=tuple(FORMATS), label="Number format")
INPUTS = (FORMAT,)
STEP_KEYS = ("total_bits", "exponent_bits", "mantissa_bits", "max_normal", "min_normal", "epsilon")

# --- formulas --------------------------------------------------------------------------------------

TOTAL_BITS = identity("total_bits", "Total bits", Var("width", "1", "bits per value (from the format's name)"))
EXPONENT_BITS = identity("exponent_bits", "Exponent bits", Var("exponent_field", "1", "exponent bits of the layout"))
MANTISSA_BITS = Formula(
    "mantissa_bits",
    (Var("total_bits", "1", "total bits"), Var("sign_bits", "1", "sign bits"),
     Var("exponent_bits", "1", "exponent bits")),
    lambda s: total(s["total_bits"], -s["sign_bits"], -s["exponent_bits"]),
)
MANTISSA_BITS_INT = identity("mantissa_bits", "Mantissa bits",
                             Var("fraction_bits", "1", "fraction bits (an integer has none)"))


def _bias(s):
    """The exponent bias 2^(e−1) − 1, kept in written order."""
    return total(Pow(2, total(s["exponent_bits"], -1)), -1)


MAX_NORMAL_IEEE = Formula(
    "max_normal",
    (Var("mantissa_bits", "1", "mantissa bits"), Var("exponent_bits", "1", "exponent bits")),
    # Largest significand 1.11…1 = 2 − 2^−m; largest usable exponent code 2^e − 2 gives 2^bias.
    lambda s: product(total(2, -Pow(2, -s["mantissa_bits"])), Pow(2, _bias(s))),
)
MAX_NORMAL_E4M3 = Formula(
    "max_normal",
    (Var("mantissa_bits", "1", "mantissa bits"), Var("exponent_bits", "1", "exponent bits")),
    # The all-ones exponent code is usable (no infinities) but mantissa 1…1 there is NaN:
    # significand 2 − 2^(1−m), exponent code 2^e − 1 gives 2^(bias + 1) = 2^(2^(e−1)).
    lambda s: product(total(2, -Pow(2, total(1, -s["mantissa_bits"]))), Pow(2, Pow(2, total(s["exponent_bits"], -1)))),
)
MAX_NORMAL_NO_SPECIALS = Formula(
    "max_normal",
    (Var("mantissa_bits", "1", "mantissa bits"), Var("exponent_bits", "1", "exponent bits")),
    # No infinities and no NaN: the all-ones exponent code 2^e − 1 holds numbers with every
    # mantissa, so the largest is (2 − 2^−m) × 2^(bias + 1) = (2 − 2^−m) × 2^(2^(e−1)).
    lambda s: product(total(2, -Pow(2, -s["mantissa_bits"])), Pow(2, Pow(2, total(s["exponent_bits"], -1)))),
)
EFFECTIVE_BITS = Formula(
    "effective_bits",
    (Var("total_bits", "1", "bits per element"), Var("scale_bits", "1", "bits of the shared scale"),
     Var("block_size", "1", "elements sharing one scale")),
    lambda s: total(s["total_bits"], product(s["scale_bits"], Pow(s["block_size"], -1))),
    label="Bits per value, the shared scale included",
)
MAX_INT = Formula(
    "max_normal", (Var("total_bits", "1", "total bits"),),
    lambda s: total(Pow(2, total(s["total_bits"], -1)), -1),
    label="Largest value",
)
MIN_NORMAL = Formula(
    "min_normal", (Var("exponent_bits", "1", "exponent bits"),),
    # Smallest normal exponent code 1 gives 2^(1 − bias) = 2^(2 − 2^(e−1)).
    lambda s: Pow(2, total(2, -Pow(2, total(s["exponent_bits"], -1)))),
)
MIN_INT = Formula(
    "min_normal", (Var("total_bits", "1", "total bits"),),
    lambda s: -Pow(2, total(s["total_bits"], -1)),
    label="Smallest value",
)
BLOCK_SIZE = identity("block_size", "Block size", Var("block_values", "1", "elements per shared scale"))
SCALE_BITS = identity("scale_bits", "Scale bits", Var("scale_field", "1", "bits of the shared scale"))
EPSILON = Formula(
    "epsilon", (Var("mantissa_bits", "1", "mantissa bits"),),
    lambda s: Pow(2, -s["mantissa_bits"]),
)

ALL_FORMULAS = (TOTAL_BITS, EXPONENT_BITS, MANTISSA_BITS, MANTISSA_BITS_INT, MAX_NORMAL_IEEE, MAX_NORMAL_E4M3,
                MAX_INT, MIN_NORMAL, MIN_INT, EPSILON, MAX_NORMAL_NO_SPECIALS, EFFECTIVE_BITS, BLOCK_SIZE, SCALE_BITS)

# Values typed to four significant figures pass; 65,536 for fp16's 65,504 (0.05 % off) does not.
VALUE_TOLERANCE = 2e-4


def format_specs(fmt: NumberFormat) -> list[StepSpec]:
    """The six steps for one format (integers and E4M3 take their own formulas)."""
    steps = {"total_bits": "total_bits", "exponent_bits": "exponent_bits", "mantissa_bits": "mantissa_bits"}
    exact: dict[str, Any] = {"rounding": "floor"}
    if fmt.is_int:
        return [
            StepSpec(TOTAL_BITS, **exact),
            StepSpec(EXPONENT_BITS, **exact, label="Exponent bits (an integer has none: 0)"),
            StepSpec(MANTISSA_BITS_INT, **exact, label="Mantissa bits (an integer has none: 0)"),
            StepSpec(MAX_INT, {"total_bits": steps["total_bits"]}, **exact, label="Largest value"),
            StepSpec(MIN_INT,
                     {"total_bits": steps["total_bits"]}, **exact,
                     label="Smallest value (the most negative)"),
            StepSpec(EPSILON,
                     {"mantissa_bits": "mantissa_bits"}, tolerance=VALUE_TOLERANCE,
                     label="Step between neighbouring values (2^−0 = 1)"),
        ]
    max_formula = (MAX_NORMAL_E4M3 if fmt.finite_only else MAX_NORMAL_NO_SPECIALS if fmt.no_specials
                   else MAX_NORMAL_IEEE)
    max_label = ("Largest normal value (no infinities: the top exponent code holds numbers)"
                 if fmt.finite_only or fmt.no_specials else "Largest normal value")
    block = [
        StepSpec(BLOCK_SIZE, **exact),
        StepSpec(SCALE_BITS, **exact),
        StepSpec(EFFECTIVE_BITS,
                 {"total_bits": "total_bits", "scale_bits": "scale_bits", "block_size": "block_size"},
                 label="Effective bits per value (element + scale ÷ block)"),
    ] if fmt.block else []
    return [
        StepSpec(TOTAL_BITS, **exact),
        StepSpec(EXPONENT_BITS, **exact),
        StepSpec(MANTISSA_BITS,
                 {"total_bits": "total_bits", "exponent_bits": "exponent_bits"}, **exact,
                 label="Mantissa bits (stored; the leading 1 is implicit)"),
        StepSpec(max_formula,
                 {"mantissa_bits": "mantissa_bits", "exponent_bits": "exponent_bits"}, tolerance=VALUE_TOLERANCE,
                 label=max_label),
        StepSpec(MIN_NORMAL,
                 {"exponent_bits": "exponent_bits"}, tolerance=VALUE_TOLERANCE,
                 label="Smallest positive normal value (2^(1 − bias))"),
        StepSpec(EPSILON,
                 {"mantissa_bits": "mantissa_bits"}, tolerance=VALUE_TOLERANCE,
                 label="Machine epsilon (gap from 1 to the next value)"),
        *block,
    ]


def format_given(fmt: NumberFormat) -> dict[str, float]:
    """The layout's numbers the formulas read, keyed by variable name."""
    return {"width": fmt.width, "exponent_field": fmt.exponent, "sign_bits": 1, "fraction_bits": 0,
            "is_int": int(fmt.is_int), "finite_only": int(fmt.finite_only), "no_specials": int(fmt.no_specials),
            "block_values": fmt.block, "scale_field": fmt.scale_bits}


def format_values(fmt: NumberFormat) -> dict[str, float]:
    """Every step's value for ``fmt`` (what the misconception variants compare against)."""
    return evaluate_steps(format_specs(fmt), format_given(fmt))


def _plain(value: float) -> str:
    """A value as a reader would write it: 65,504, 0.0078125, 3.39 × 10^38."""
    if float(value).is_integer() and abs(value) < 1e7:
        return f"{int(value):,}"
    if 1e-3 <= abs(value) < 1e7:
        return f"{value:g}"
    mantissa, exponent = f"{value:.3e}".split("e")
    return f"{float(mantissa):g} × 10^{int(exponent)}".replace("-", "−")


def format_notes(fmt: NumberFormat, values: Mapping[str, float]) -> list[str]:
    """What the layout means and which conventions the steps follow, in sentences."""
    if fmt.is_int:
        n = fmt.width
        return [
            f"{fmt.name} is {'an' if n == 8 else 'a'} {n}-bit two's-complement integer: no exponent and no "
            f"fraction, so exponent_bits and mantissa_bits are 0 by this calculator's convention, max_normal "
            f"is the largest value 2^{n - 1} − 1 = {2 ** (n - 1) - 1}, min_normal the most negative value "
            f"−2^{n - 1} = −{2 ** (n - 1)}, and epsilon the step between neighbours, 2^0 = 1.",
            f"As a weight or cache format, {fmt.id} always travels with a scale (per tensor, channel or block of "
            f"32–128 values) that maps its {2 ** n} levels onto the real range; the scale, not the integer, "
            f"decides range and resolution.",
        ]
    e, m = fmt.exponent, fmt.mantissa
    bias = 2 ** (e - 1) - 1
    notes = [
        f"{fmt.name}: 1 sign bit, {e} exponent bits (bias 2^{e - 1} − 1 = {bias}) and {m} stored mantissa bits; "
        f"a normal number carries an implicit leading 1, so it has {m + 1} bits of precision.",
        f"min_normal is the smallest positive normal value, 2^(1 − {bias}) = {_plain(values['min_normal'])}; "
        f"subnormals reach down to 2^(1 − {bias} − {m}) = {_plain(2.0 ** (1 - bias - m))} with fewer bits of "
        f"precision. epsilon is the gap between 1 and the next value, 2^−{m} (numpy's finfo eps); the unit "
        f"roundoff of round-to-nearest is half of it.",
    ]
    if fmt.finite_only:
        notes.append(
            "OCP E4M3 has no infinities: only S.1111.111 is NaN, so the all-ones exponent code still holds "
            "normal numbers and the largest is 1.110₂ × 2^(15 − 7) = 1.75 × 2^8 = 448 (mantissa 111 there is "
            "the NaN). An IEEE-style layout that kept that code for infinities and NaNs would stop one code "
            "lower, at 1.111₂ × 2^(14 − 7) = 1.875 × 2^7 = 240."
        )
    elif fmt.id == "fp8_e5m2":
        notes.append("E5M2 keeps IEEE's infinities and NaNs, so its largest value is 1.75 × 2^15 = 57,344: the "
                     "range of fp16 with two mantissa bits; it suits gradients more than weights.")
    if fmt.id in ("bf16", "fp16"):
        notes.append(
            "bf16 and fp16 are both 16 bits but split them differently: bf16 keeps fp32's 8 exponent bits (range "
            "to about 3.39 × 10^38) and keeps 7 mantissa bits (epsilon 2^−7 = 0.0078125); fp16 has 5 exponent "
            "bits (largest 65,504) and 10 mantissa bits (epsilon 2^−10). bf16's range is why it won: activations "
            "and sums that overflow fp16 fit, with no loss scaling."
        )
    if fmt.block:
        notes.append(
            f"{fmt.id} stores each value as a 4-bit E2M1 element (1 sign, 2 exponent, 1 mantissa bit: the "
            f"magnitudes 0, 0.5, 1, 1.5, 2, 3, 4 and 6) and shares one {fmt.scale_bits}-bit {fmt.scale} scale among "
            f"{fmt.block} of them, so it costs {fmt.width} + {fmt.scale_bits}/{fmt.block} = "
            f"{fmt.width + fmt.scale_bits / fmt.block:g} bits per value: size weights at that, not at 4.")
        notes.append(
            "The two 4-bit float layouts differ in the scale: NVFP4's FP8 E4M3 scale over 16 values tracks the "
            "local range finely (any scale, not only powers of two); MXFP4's E8M0 scale over 32 is a power of "
            "two, cheaper per value (4.25 bits) but coarser.")
    notes.append(f"Layout from {fmt.source}; values derived from it, not read from a table.")
    return notes


def plan_formats(raw: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Bits, range and epsilon of one number format.

    ``raw`` holds ``format`` (one of :data:`FORMATS`; default bf16). Values are
    plain numbers (unit ``1``). Raises :class:`~..errors.InputError` for an
    unknown format.
    """
    inputs = clean_inputs(INPUTS, raw, catalog_or_default(catalog))
    fmt = FORMATS[inputs["format"]]
    specs = format_specs(fmt)
    given = format_given(fmt)

    def finish(result: Result) -> None:
        result.notes.extend(format_notes(fmt, result.values))

    return Plan("formats", inputs, specs, given, [], {"format_name": fmt.name}, finish=finish)


def generate_formats(rng: random.Random, catalog: Catalog) -> dict:
    """A formats problem: one of the nine formats, uniformly."""
    return {"format": rng.choice(tuple(FORMATS))}


def describe_formats(inputs: dict[str, Any], catalog: Catalog) -> str:
    """The problem in the words an interviewer would use."""
    fmt = FORMATS[inputs["format"]]
    if fmt.is_int:
        article = "an" if fmt.width == 8 else "a"
        return (f"Take {fmt.name}, {article} {fmt.width}-bit two's-complement integer. How many bits does it have, "
                f"and how many are exponent and mantissa bits (an integer has neither: answer 0)? Give its largest and "
                f"smallest (most negative) values and the step between neighbouring values.")
    return (f"Take {fmt.name}. How many bits does it have, how many are exponent bits and how many stored mantissa "
            f"bits? Give its largest finite value, its smallest positive normal value and its machine epsilon "
            f"(the gap between 1 and the next value), to four significant figures or as powers of two.")


FAMILIES = (
    Family("formats", "Number formats",
           "Sign, exponent and mantissa bits of fp32, bf16, fp16, fp8 (E4M3, E5M2), int8, int4 and the block "
           "formats NVFP4 and MXFP4, with range, epsilon and the effective bits a shared scale costs.",
           INPUTS, plan_formats, generate=generate_formats, order=110, describe=describe_formats,
           headlines=("max_normal", "epsilon"), chapter="09-number-formats", difficulty=1,
           rubric=("Derives range from the exponent bits and the bias, precision from the mantissa bits",
                   "Gives E4M3's 448 (the top exponent code holds numbers), not an IEEE-style 240",
                   "Keeps epsilon, unit roundoff and the smallest normal apart",
                   "Sizes block formats at their effective bits, the shared scale included")),
)
