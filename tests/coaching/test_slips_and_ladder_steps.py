"""A misconception counts once per attempt (StepAnswerQuerySet.slips): weights sized at a nominal 4 bits show on the
weights step and again on the paged users step computed from them, one slip; the dashboard needs a real rise
(RISING_MIN attempts in the last 14 days, more than before) to list a candidate as falling behind. Per-ladder-step
accuracy (the progress page, the coach's "Score per ladder step") reads every family's steps that are ladder steps:
the KV drill's KV cache per token and per user are the ladder's fifth and sixth."""

from __future__ import annotations

from datetime import timedelta

import pytest

from coaching.candidate_report import candidate_tables
from coaching.dashboard import BEHIND_RULE, RISING_MIN, misconception_counts, overview
from drills.models import StepAnswer
from drills.problems.generation import create_problem
from drills.problems.grading import submit
from drills.reviews.progress import progress_for
from tests.pinned import QWEN25_7B_LADDER

pytestmark = pytest.mark.django_db

# Qwen2.5-7B at int4 on a B300: the weights are 3.9896 GiB at the effective 4.5 bits; at a nominal 4 bits they are
# 3.9896 × 4 / 4.5 = 3.546 GiB, and the paged users from the budget those weights leave are 3075, not 3069.
NOMINAL = {"weights_gib": "3.546", "users_paged": "3075"}


def _right(problem) -> dict[str, str]:
    return {step.key: repr(step.value) for step in problem.solve().steps}


def _ladder_attempt(user, now, **typed):
    problem = create_problem("ladder", seed=7, user=user, fixed_inputs=QWEN25_7B_LADDER)
    return submit(problem, user, {**_right(problem), **typed}, now=now).attempt


def test_a_carried_mistake_is_one_slip_and_one_attempt_is_new_not_a_rise(world):
    now = world.T0 - timedelta(hours=12)  # the cohort's set is due in 60 h: nothing else puts demo behind
    attempt = _ladder_attempt(world.demo, now - timedelta(days=1), **NOMINAL)
    wrong = dict(attempt.steps.filter(verdict="misconception").values_list("position", "misconception"))
    assert wrong == {2: "nominal-4bit", 7: "nominal-4bit"}  # steps 3 and 8 (positions count from 0)
    assert list(StepAnswer.objects.filter(attempt=attempt).slips().values_list("position", flat=True)) == [2]

    counted = misconception_counts([world.demo.pk], now)[world.demo.pk]
    assert [(m["id"], m["total"], m["recent"], m["before"], m["trend"]) for m in counted] == [
        ("nominal-4bit", 1, 1, 0, "new")]
    seen = overview(world.coach, now)
    assert seen.behind == []
    summary = next(t for t in seen.tables if t.name == "candidates")
    row = next(r for r in summary.rows if r[0].text == "demo")
    assert row[-1].text == "Nominal 4-bit width ×1 (1 vs 0, new)"
    assert next(t for t in seen.tables if t.name == "behind").note == BEHIND_RULE
    assert f"at least {RISING_MIN} attempts of the last 14 days" in BEHIND_RULE and RISING_MIN == 2
    assert [(m.id, m.count) for m in progress_for(world.demo, now).misconceptions] == [("nominal-4bit", 1)]


def test_a_second_attempt_showing_it_is_a_rise_that_puts_the_candidate_behind(world):
    now = world.T0 - timedelta(hours=12)
    _ladder_attempt(world.demo, now - timedelta(days=3), **NOMINAL)
    _ladder_attempt(world.demo, now - timedelta(days=1), weights_gib=NOMINAL["weights_gib"])
    counted = misconception_counts([world.demo.pk], now)[world.demo.pk]
    assert [(m["total"], m["recent"], m["before"], m["trend"]) for m in counted] == [(2, 2, 0, "rising")]
    assert [(b["user"].username, b["reasons"]) for b in overview(world.coach, now).behind] == [
        ("demo", ["a misconception on the rise"])]


def test_kv_drill_answers_count_on_the_ladder_steps_they_are(world):
    now = world.T0
    kv = create_problem("kv", seed=3, user=world.demo, fixed_inputs={"model": "qwen2.5-7b", "kv_dtype": "fp8"})
    right = _right(kv)
    assert set(right) == {"kv_bytes_per_token", "kv_replication", "per_user_gib"}  # not a ladder step: replication
    assert right["kv_bytes_per_token"] == "28672.0"
    submit(kv, world.demo, {**right, "per_user_gib": "9"}, now=now)  # per user wrong, KV per token right
    submit(create_problem("ladder", seed=7, user=world.demo, fixed_inputs=QWEN25_7B_LADDER), world.demo,
           {"kv_bytes_per_token": "57344"}, now=now)  # the ladder's KV per token wrong (twice the bytes), rest blank

    steps = {share.key: (share.count, share.mean) for share in progress_for(world.demo, now).ladder_steps}
    assert steps["kv_bytes_per_token"] == (2, 0.5)  # the KV drill's right one and the ladder's wrong one
    assert steps["per_user_gib"] == (2, 0.0)
    assert steps["card_gib"] == (1, 0.0)  # the ladder's blank step, the KV drill has none

    ladder = next(t for t in candidate_tables(world.coach, world.demo, now) if t.name == "ladder")
    row = next(r for r in ladder.rows if r[0].text.endswith("(kv_bytes_per_token)"))
    assert [cell.text for cell in row[1:3]] == ["2", "50%"]
