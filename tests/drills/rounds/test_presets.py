"""Each preset, sat end to end through the pages: start in one click, answer every item, read the report."""

from __future__ import annotations

import pytest
from django.urls import reverse

from drills.models import Attempt, Card, CritiqueAttempt, Round, RoundTemplate, StepAnswer
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import record_open_review
from drills.rounds.presets import PRESETS, preset, sync_presets
from drills.rounds.services import followup_link

pytestmark = pytest.mark.django_db


def sit(client, round_: Round, clock, h) -> None:
    """Answer every item of ``round_`` through the pages, a minute apart: right steps, flags on the planted
    lines, open answers revealed with every rubric point ticked."""
    for item in round_.items.select_related("item", "problem").order_by("position"):
        page = client.get(reverse("rounds:item", args=[round_.pk, item.position]))
        assert page.status_code == 200
        assert 'id="round-clock"' in page.content.decode()
        clock.advance(minutes=1)
        url = reverse("rounds:submit", args=[round_.pk, item.position])
        if item.is_worked:
            response = client.post(url, {"confirm": "yes", "version": item.version, "scratch": "weights first",
                                         **h.answers(item.problem)})
        elif item.is_followup:  # the steps that move, and their new values
            link = followup_link(item)
            response = client.post(url, {"confirm": "yes",
                                         "version": item.version, "present_marks": "1", "marked": list(link.moves),
                                         **{f"value-{key}": repr(link.result.values[key]) for key in link.moves}})
        elif item.is_critique:
            response = client.post(url, {"confirm": "yes",
                                         "version": item.version, "present_flags": "1", "flag": ["3", "5"],
                                         "why_3": "query heads", "why_5": "big bang"})
        else:
            client.post(reverse("rounds:reveal", args=[round_.pk, item.position]),
                        {"answer": f"My answer to {item.item_slug}.", "present": "1"})
            response = client.post(url, {"confirm": "yes", "version": item.version, "present_ticks": "1",
                                         "ticked": [str(i) for i in range(len(item.item.rubric))], "self_score": ""})
        assert response.status_code == 302


@pytest.mark.parametrize("kind", [kind for kind in PRESETS if kind != "weak"])
def test_each_preset_starts_in_one_click_and_is_sat_end_to_end(candidate_client, candidate, bank, clock, h, kind):
    response = candidate_client.post(reverse("rounds:start", args=[kind]))
    round_ = Round.objects.get(user=candidate)
    assert response.status_code == 302 and response["Location"] == round_.get_absolute_url()
    assert round_.kind == kind and round_.deadline - round_.started_at == \
        __import__("datetime").timedelta(seconds=PRESETS[kind]["duration_s"])
    expected = {"capacity": 1, "phone": 4, "architect": 2, "manager": 3, "critique": 1}.get(kind)
    if kind == "followups":  # a problem and two or three follow-ups on it: as many as its chain gives
        kinds = list(round_.items.values_list("kind", flat=True))
        assert kinds[0] == "problem" and set(kinds[1:]) == {"followup"} and 3 <= len(kinds) <= 4
    else:
        assert round_.items.count() == expected

    sit(candidate_client, round_, clock, h)

    round_.refresh_from_db()
    assert round_.status == Round.FINISHED and round_.score == pytest.approx(1.0)
    assert all(item.grade == pytest.approx(1.0) and not item.late for item in round_.items.all())
    report = candidate_client.get(reverse("rounds:report", args=[round_.pk]))
    assert report.status_code == 200
    assert "100 %" in report.content.decode()


def test_the_presets_draw_the_kinds_the_issue_names(candidate, bank, h):
    from drills.rounds.services import start_round

    kinds = lambda r: [(i.kind, i.item.family or "") for i in r.items.select_related("item")]  # noqa: E731
    assert kinds(start_round(candidate, "capacity", h.T0)) == [("problem", "ladder")]
    assert kinds(start_round(candidate, "phone", h.T0)) == [("problem", "ladder"), ("problem", "roofline"),
                                                            ("open", ""), ("open", "")]
    architect = kinds(start_round(candidate, "architect", h.T0))
    assert architect[0] == ("design", "") and architect[1] in {("problem", "ladder"), ("problem", "slo")}
    manager = start_round(candidate, "manager", h.T0)
    assert kinds(manager)[:2] == [("problem", "cost"), ("problem", "fleet")]
    assert manager.items.get(position=3).item.slug == "cost-per-token"  # the only open question for managers
    assert kinds(start_round(candidate, "critique", h.T0)) == [("critique", "")]


def test_weak_spots_draws_from_misconceptions_and_low_retention_and_is_sat_end_to_end(
        candidate_client, candidate, bank, clock, h):
    # A ladder attempt that named a misconception, and two reviewed cards, one nearly forgotten.
    from drills.problems.generation import create_problem

    problem = create_problem("roofline", seed=1, user=candidate)
    attempt = Attempt.objects.create(problem=problem, user=candidate, score=0.5)
    StepAnswer.objects.create(attempt=attempt, position=0, key="x", unit="GiB", verdict="misconception", credit=0,
                              misconception="query-heads-for-kv-heads", expected=1)
    add_to_deck(candidate, [bank["kv-fp8"], bank["kv-paged"]], now=h.T0 - __import__("datetime").timedelta(days=60))
    for slug in ("kv-fp8", "kv-paged"):
        card = Card.objects.get(user=candidate, item__slug=slug)
        record_open_review(candidate, card.pk, card.version, 1 if slug == "kv-fp8" else 4,
                           now=h.T0 - __import__("datetime").timedelta(days=59))

    candidate_client.post(reverse("rounds:start", args=["weak"]))
    round_ = Round.objects.get(user=candidate)
    slugs = [item.item_slug for item in round_.items.all()]
    assert slugs[:2] == ["roofline", "kv-formula"]  # the misconception's family, then a question probing it
    assert slugs[2:] == ["kv-fp8", "kv-paged"]  # then the lowest retention first
    sit(candidate_client, round_, clock, h)
    round_.refresh_from_db()
    assert round_.status == Round.FINISHED


def test_weak_spots_without_history_explains_instead_of_starting(candidate_client, candidate, bank):
    response = candidate_client.post(reverse("rounds:start", args=["weak"]), follow=True)
    assert not Round.objects.exists()
    assert "No weak spots yet" in response.content.decode()


def test_presets_are_data_a_coach_can_copy_and_start(coach, coach_client, bank):
    templates = sync_presets()
    assert set(templates) == set(PRESETS) and all(t.is_preset for t in templates.values())
    copy = preset("phone").copy_for(coach, title="Phone screen, 20 minutes", duration_s=1200)
    assert copy.owner == coach and copy.copied_from == preset("phone") and copy.slots == PRESETS["phone"]["slots"]
    assert RoundTemplate.objects.filter(owner__isnull=True).count() == len(PRESETS)  # the preset is unchanged
    assert "Phone screen, 20 minutes" in coach_client.get(reverse("rounds:index")).content.decode()
    coach_client.post(reverse("rounds:start", args=[copy.slug]))
    started = Round.objects.get(user=coach)
    assert started.template == copy and started.duration_s == 1200


def test_a_candidate_cannot_start_someone_elses_copy(coach, candidate_client, bank):
    copy = preset("capacity").copy_for(coach)
    assert candidate_client.post(reverse("rounds:start", args=[copy.slug])).status_code == 404


def test_critique_items_store_a_critique_attempt(candidate_client, candidate, bank, clock, h):
    candidate_client.post(reverse("rounds:start", args=["critique"]))
    round_ = Round.objects.get(user=candidate)
    sit(candidate_client, round_, clock, h)
    attempt = CritiqueAttempt.objects.get(user=candidate)
    assert attempt.found_count == 2 and attempt.score == 1
