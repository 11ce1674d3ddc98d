"""Problem templates carry a rubric of listening points, not the list of their step labels (issue 19, item 4)."""

from __future__ import annotations

import pytest

from calculators.families import FAMILIES
from drills.problems.generation import drill_families
from runbook.lint import seams
from tests.factories import problem_templates

pytestmark = pytest.mark.django_db


def test_every_drill_family_has_its_own_rubric():
    slugs = {family.slug for family in drill_families()}
    assert all(len(FAMILIES[slug].rubric) >= 3 for slug in slugs), [
        slug for slug in slugs if len(FAMILIES[slug].rubric) < 3]


def test_the_e4m3_point_names_the_ocp_maximum():
    assert any("448" in point for point in FAMILIES["formats"].rubric)


def test_the_templates_in_the_bank_use_the_rubrics_and_read_cleanly():
    templates = problem_templates()
    assert templates["preempt"].rubric == list(FAMILIES["preempt"].rubric)
    for item in templates.values():
        step_labels = [line.split("**")[1] for line in item.model_answer.splitlines() if "**" in line]
        assert not set(item.rubric) & set(step_labels), item.slug  # listening points, not the step names
        assert seams(item.model_answer) == [], item.slug  # no "(in 1)" for a unitless step
    assert "(a plain number)" in templates["formats"].model_answer


def test_each_template_is_a_worked_question_not_a_list_of_formulas():
    """Issue 37 item 4: a template states its family's sample problem (seed 0) and answers it step by step."""
    from calculators.engine.catalog import default_catalog
    from drills.problems.generation import generate_inputs

    templates = problem_templates()
    catalog = default_catalog()
    for family in drill_families():
        item = templates[family.slug]
        inputs = generate_inputs(family.slug, 0, catalog)
        result = family.run(inputs, catalog)
        assert family.describe(inputs, catalog) in item.prompt, family.slug
        for step in result.steps:
            assert f"here `{step.substituted}`" in item.model_answer, (family.slug, step.key)
        assert item.model_answer.count("; here `") == len(result.steps), family.slug
        assert item.rubric == list(family.rubric)
    assert len({item.prompt for item in templates.values()}) == len(templates)
