"""Problem templates carry a rubric of listening points, not the list of their step labels (issue 19, item 4)."""

from __future__ import annotations

import pytest

from drills.bank.problem_templates import sync_problem_templates
from drills.bank.template_rubrics import TEMPLATE_RUBRICS
from drills.models import BankItem
from drills.problems.generation import drill_families
from runbook.lint import seams

pytestmark = pytest.mark.django_db


def test_every_drill_family_has_its_own_rubric():
    slugs = {family.slug for family in drill_families()}
    assert slugs <= set(TEMPLATE_RUBRICS), sorted(slugs - set(TEMPLATE_RUBRICS))
    assert all(len(points) >= 3 for points in TEMPLATE_RUBRICS.values())


def test_the_e4m3_point_names_the_ocp_maximum():
    assert any("448" in point for point in TEMPLATE_RUBRICS["formats"])


def test_the_templates_in_the_bank_use_the_rubrics_and_read_cleanly():
    sync_problem_templates()
    templates = {item.slug: item for item in BankItem.objects.filter(kind=BankItem.PROBLEM)}
    assert templates["preempt"].rubric == TEMPLATE_RUBRICS["preempt"]
    for item in templates.values():
        step_labels = [line.split("**")[1] for line in item.model_answer.splitlines() if "**" in line]
        assert not set(item.rubric) & set(step_labels), item.slug  # listening points, not the step names
        assert seams(item.model_answer) == [], item.slug  # no "(in 1)" for a unitless step
    assert "(a plain number)" in templates["formats"].model_answer
