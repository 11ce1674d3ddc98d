"""Small things a new user met on the pages (issue 28, item 10), each checked where it is drawn."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from coaching.models import QuestionSet
from drills.problems.generation import create_problem

pytestmark = pytest.mark.django_db


class TestCalculatorHeadings:
    def test_the_spec_headline_keeps_its_inner_parentheses(self, client):
        page = client.get("/calculators/spec/").content.decode()

        assert '<div class="small text-body-secondary">E ÷ (1 + γ·c)</div>' in page

    @pytest.mark.parametrize("family", ["spec", "cost", "fleet"])
    def test_worked_steps_of_a_family_without_a_model_name_nothing(self, client, family):
        page = client.get(f"/calculators/{family}/").content.decode()

        assert '<h3 class="h6 mb-0">Worked steps</h3>' in page
        assert not re.search(r">for\s*<", page)

    def test_worked_steps_name_the_model_as_its_menu_does(self, client):
        page = client.get("/calculators/ladder/").content.decode()

        assert '<span class="small text-body-secondary">for llama-3.1-8b</span>' in page


def test_a_fleet_problem_shows_no_empty_config_panel(candidate_client, candidate):
    fleet = create_problem("fleet", seed=3, user=candidate)
    ladder = create_problem("ladder", seed=3, user=candidate)

    assert "From config.json" not in candidate_client.get(fleet.get_absolute_url()).content.decode()
    ladder_page = candidate_client.get(ladder.get_absolute_url()).content.decode()
    assert "From config.json" in ladder_page and "<code>num_key_value_heads</code>" in ladder_page


class TestCoachPages:
    def test_an_empty_set_says_so_in_a_sentence_not_as_item_1(self, coach, coach_client):
        question_set = QuestionSet.objects.create(coach=coach, title="Week 2")

        page = coach_client.get(f"/coach/sets/{question_set.pk}/").content.decode()

        assert '<p class="text-body-secondary mb-4 set-empty">This set has no items yet: add them below.</p>' in page
        assert "list-group-numbered" not in page

    def test_the_question_editor_is_headed_by_the_question_not_its_slug(self, coach, coach_client):
        from coaching import services

        item = services.save_question(coach, {
            "prompt": "Why does GQA shrink the **KV cache**?", "model_answer": "Fewer KV heads.",
            "rubric": ["KV heads"], "tags": [], "misconceptions": [], "difficulty": 2})

        page = coach_client.get(f"/coach/questions/{item.pk}/edit/").content.decode()

        assert "<h1 class=\"h2 mb-1\">Edit “Why does GQA shrink the KV cache?”</h1>" in page
        assert "<title>Edit: Why does GQA shrink the KV cache? · LLM Serving Prep</title>" in page
        assert f"<code>{item.slug}</code>" in page


def test_the_errata_page_says_what_the_earlier_material_is(client):
    page = Client().get("/errata/").content.decode()

    assert "earlier volumes" not in page
    assert "Mistakes found in earlier study material on LLM serving" in page
