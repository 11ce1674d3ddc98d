"""Template filters for drill pages: display rounding, verdict styling and items' short names."""

from django import template

from accounts.timezones import zone_label
from calculators.engine.procedures.base import CEIL, FLOOR, format_number
from calculators.engine.quantities import quantity as declared_quantity
from calculators.engine.units import verdict_choices
from drills.problems.presentation import step_choices, verdict_label, verdict_style

register = template.Library()

# A step's box choices and a verdict's style and label: the drill page's rows read them in the view too.
register.filter("step_choices", step_choices)
register.filter("verdict_style", verdict_style)
register.filter("verdict_label", verdict_label)


@register.filter
def quantity(value, unit):
    """``value|quantity:unit`` → the display rounding of docs/architecture.md §10 ("14.96 GiB")."""
    if value is None or value == "":
        return "—"
    return format_number(float(value), unit)


@register.filter
def step_unit(unit):
    """The hint beside a step's answer box: "in GiB"; "a number" for a dimensionless step (unit ``"1"``: a count
    of copies, a 1-or-0 answer, a fraction), where "in 1" said nothing."""
    return "a number" if unit == "1" else f"in {unit}"


@register.filter
def step_tolerance(spec) -> str:
    """What counts as right beside a step's answer box (DESIGN §14): ``"±0.5 %"`` (its relative tolerance;
    the right value rounded to the figures typed, at least two, is right too), ``"whole number, round down"``
    for an integer step, ``""`` for a 1-or-0 verdict (its box is a choice). ``spec`` is a ``StepSpec``."""
    declared = declared_quantity(spec.key)
    if declared is not None and declared.bounds == "flag":
        return ""
    if spec.rounding:
        return {FLOOR: "whole number, round down", CEIL: "whole number, round up"}.get(spec.rounding, "whole number")
    return f"±{spec.tolerance * 100:.3g} %"


@register.filter
def expected_shown(step) -> str:
    """A graded step's expected value as the pages show it: a verdict in its word (``memory-bound``), anything
    else by the display rounding of its unit (:func:`quantity`). ``step`` has ``key``, ``unit`` and ``expected``
    (a ``StepAnswer``, a ``StepGrade`` or a round report's row)."""
    declared = declared_quantity(step.key)
    if declared is not None and declared.verdict:
        for word, value in verdict_choices(declared.verdict):
            if step.expected == value:
                return word
    return quantity(step.expected, step.unit)


@register.filter
def step_verdict_label(step):
    """A stored step's verdict as the candidate's pages word it: "No answer" for a step left blank.

    ``step`` has ``raw_input`` and ``verdict`` (a ``StepAnswer``, or a round report's row). A blank
    step is stored with the ``unreadable`` verdict (nothing could be read), but the candidate typed
    nothing unreadable, so the drill, review and coach pages all say "No answer".
    """
    return verdict_label(step.verdict) if str(step.raw_input or "").strip() else "No answer"


@register.filter
def percent(fraction):
    """0.634 → "63 %" (a tie goes to the even whole percent, as Python's formatting rounds: 0.125 → "12 %")."""
    return f"{float(fraction) * 100:.0f} %"


@register.filter
def item_name(thing, length: int = 80) -> str:
    """The short name of a bank item, or of what names one (a round item, a review log): "Capacity ladder".

    Falls back to the kept ``item_slug`` when the item has since been removed from the bank.
    """
    from drills.bank.services import item_name as name_of
    from drills.models import BankItem

    item = thing if isinstance(thing, BankItem) else getattr(thing, "item", None)
    if item is None:
        return getattr(thing, "item_slug", "") or ""
    link = getattr(thing, "followup", None)  # a round's follow-up on its problem item (issue 33 item 1)
    return f"{name_of(item, int(length))}: follow-up {link + 1}" if link is not None else name_of(item, int(length))


@register.filter
def in_sentence(title: str) -> str:
    """A title put inside a sentence: each word lower-cased except acronyms and mixed-case names.

    ``"KV cache"`` stays ``KV cache``, ``"Prefill and TTFT"`` becomes ``prefill and TTFT``, ``"LoRA adapters"``
    ``LoRA adapters``, ``"RoPE frequency bands"`` ``RoPE frequency bands`` (a word with a capital after its
    first letter is kept as written).
    """
    return " ".join(word if any(ch.isupper() for ch in word[1:]) else word.lower() for word in str(title).split(" "))


@register.filter
def zone_name(name: str) -> str:
    """A time zone as every page shows it ("America/New York"), through :func:`accounts.timezones.zone_label`."""
    return zone_label(name or "")
