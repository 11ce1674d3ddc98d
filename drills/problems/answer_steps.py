"""The drill page's answer steps (``<li>`` per step), built in Python rather than by the template engine.

A graded submission is the site's one write and its hottest fragment: it re-renders a box, a verdict and a
worked substitution per step. Through the template engine the loop resolved about a hundred variables and
filters per request, the largest part of rendering the fragment; this builds the same markup (byte for byte
what the loop in ``templates/drills/problem.html`` gave, ``tests/test_answer_steps_html.py`` compares them)
with every value escaped as ``{{ }}`` would escape it.
"""

from __future__ import annotations

from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from drills.templatetags.drills_tags import step_unit, verdict_label, verdict_style


def answer_steps_html(rows: list[dict]) -> SafeString:
    """The ``<li>`` of every step, for the ``<ol class="answer-steps">`` of the drill page's answer form.

    ``rows`` are the view's: each a dict with ``field`` (the step's bound field of the answer form), ``spec``
    (the step's :class:`~calculators.engine.procedures.base.InputSpec`-like answer spec: ``key``, ``label``,
    ``unit``), ``grade`` (its :class:`~calculators.engine.grader.StepGrade`, or ``None`` before grading) and
    ``step`` (the solved step: ``substituted``). Returns safe HTML; every value is escaped.
    """
    esc = conditional_escape
    parts = []
    for number, row in enumerate(rows, start=1):
        field, spec, grade = row["field"], row["spec"], row["grade"]
        verdict_class = f" verdict-{esc(grade.verdict)}" if grade else ""
        errors = "".join(f'<div class="invalid-feedback d-block">{esc(error)}</div>' for error in field.errors)
        parts.append(
            f'\n            <li class="answer-step py-2 border-top{verdict_class}" id="step-{esc(spec.key)}">\n'
            f'              <label class="form-label mb-1 d-flex justify-content-between gap-2"'
            f' for="{esc(field.id_for_label)}">\n'
            f'                <span><span class="step-number">{number}.</span> {esc(spec.label)}'
            f' <code class="small">{esc(spec.key)}</code></span>\n'
            f'                <span class="text-body-secondary small step-unit">{esc(step_unit(spec.unit))}</span>\n'
            f'              </label>\n'
            f'              <div class="input-group">\n'
            f'                {esc(field)}\n'
            f'                {_verdict_badge(grade)}\n'
            f'              </div>\n'
            f'              {errors}\n'
            f'              {_grade_message(grade, row["step"])}\n'
            f'            </li>\n'
            f'          ')
    return mark_safe("".join(parts))


def _verdict_badge(grade) -> str:
    if not grade:
        return ""
    style = conditional_escape(verdict_style(grade.verdict))
    label = conditional_escape(verdict_label(grade.verdict)) if grade.given else "No answer"
    return (f'<span class="input-group-text bg-{style}-subtle text-{style}-emphasis verdict-badge">'
            f'{label}</span>')


def _grade_message(grade, step) -> str:
    if not grade:
        return ""
    info = grade.misconception_info
    why = f' <a href="{conditional_escape(info.link)}">Read why</a>.' if info else ""
    return (f'\n              <div class="small mt-1 grade-message">\n'
            f'                <p class="mb-1">{conditional_escape(grade.message)}{why}</p>\n'
            f'                <p class="mb-0 text-body-secondary worked"><span class="visually-hidden">Worked: </span>'
            f'{conditional_escape(step.substituted)}</p>\n'
            f'              </div>\n'
            f'              ')
