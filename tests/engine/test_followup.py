"""Follow-up chains (issue 33 item 1, DESIGN §14): the same stack with one input changed, both answers graded.

Hand-derived values on the reference stack (Llama-3.1-8B, bf16, one H100 SXM: 81,559 MiB = 79.6475 GiB,
× 0.90 = 71.6827 GiB usable, 14.9575 GiB of weights, 3 GiB reserve → a KV budget of 53.7252 GiB):
KV in fp8 halves the bytes per token (131,072 → 65,536 B) and a user at 8,192 tokens (1.00 → 0.50 GiB), so
users worst case go 53 → ⌊53.7252 ÷ 0.5⌋ = 107 and paged users (2,304 tokens, 0.28125 → 0.140625 GiB)
191 → ⌊53.7252 ÷ 0.140625⌋ = 382; the card, usable memory, weights and budget stay.
"""

from __future__ import annotations

import random

import pytest

from calculators.engine.catalog import default_catalog
from calculators.engine.errors import EngineError
from calculators.engine.followup import Change, draw_chain, draw_followup, follow_up, grade_followup, own_values
from calculators.families import FAMILIES
from calculators.sim.scenario import run_sweep

CATALOG = default_catalog()
LADDER_MOVES = ("kv_bytes_per_token", "per_user_gib", "users_worst_case", "users_paged")
LADDER_STILL = ("card_gib", "usable_gib", "weights_gib", "kv_budget_gib")


def _ladder_fp8():
    ladder = FAMILIES["ladder"]
    return follow_up(ladder, {}, Change("kv_dtype", "bf16", "fp8", "KV in fp8."), CATALOG)


def test_kv_in_fp8_moves_the_kv_steps_of_the_ladder_and_nothing_else():
    followup = _ladder_fp8()
    assert followup.moves == LADDER_MOVES
    assert followup.still == LADDER_STILL
    after = followup.result.values
    assert after["kv_bytes_per_token"] == 65536
    assert after["per_user_gib"] == pytest.approx(0.5)
    assert after["users_worst_case"] == 107
    assert after["users_paged"] == 382
    assert after["kv_budget_gib"] == pytest.approx(53.7252, abs=1e-4)


def test_a_right_ladder_follow_up_scores_full_marks():
    followup = _ladder_fp8()
    first = own_values(followup.original, {"card_gib": "79.65", "usable_gib": "71.68", "weights_gib": "14.96",
                                           "kv_budget_gib": "53.73", "kv_bytes_per_token": "131072",
                                           "per_user_gib": "1", "users_worst_case": "53", "users_paged": "191"})
    graded = grade_followup(followup, first, LADDER_MOVES, {"kv_bytes_per_token": "65536", "per_user_gib": "0.5",
                                                            "users_worst_case": "107", "users_paged": "382"})
    assert [m.verdict for m in graded.marks] == ["right"] * 8
    assert [(v.key, v.verdict) for v in graded.values] == [(k, "correct") for k in LADDER_MOVES]
    assert graded.score == 1.0


def test_a_moved_step_left_unmoved_and_a_still_step_moved_are_named():
    followup = _ladder_fp8()
    first = own_values(followup.original, {"weights_gib": "14.96", "kv_budget_gib": "53.73"})
    marked = ("weights_gib", "kv_bytes_per_token", "per_user_gib", "users_worst_case")  # paged left unmarked
    graded = grade_followup(followup, first, marked, {"weights_gib": "7.48", "kv_bytes_per_token": "65536",
                                                      "per_user_gib": "0.5", "users_worst_case": "107"})
    marks = {m.key: m.verdict for m in graded.marks}
    assert marks["weights_gib"] == "moved_when_still"
    assert marks["users_paged"] == "left_unmoved"
    assert graded.marks_score == 6 / 8
    values = {v.key: v for v in graded.values}
    assert values["weights_gib"].verdict == "moved_when_still"
    assert "stays at 14.96 GiB" in values["weights_gib"].message
    assert values["users_paged"].verdict == "left_unmoved"
    assert "191" in values["users_paged"].message and "382" in values["users_paged"].message
    assert graded.values_score == 3 / 5


def test_an_untouched_follow_up_is_unanswered_and_scores_0_for_every_step():
    """Nothing marked and nothing typed is the form as it was shown, not "nothing moves" (every follow-up moves
    a step, so that is never its answer): before the fix the four still steps read "right", 4/8 of the marks,
    and the follow-up scored (0.5 + 0) / 2 = 0.25. Now every mark and every moving step is unanswered: 0."""
    followup = _ladder_fp8()
    first = own_values(followup.original, {"card_gib": "100 GiB"})
    graded = grade_followup(followup, first, (), {})
    assert sorted((m.key, m.verdict, m.credit) for m in graded.marks) == sorted(
        (k, "unanswered", 0.0) for k in LADDER_STILL + LADDER_MOVES)
    assert [(v.key, v.verdict, v.credit) for v in graded.values] == [(k, "unanswered", 0.0) for k in LADDER_MOVES]
    assert (graded.marks_score, graded.values_score, graded.score) == (0.0, 0.0, 0.0)
    assert next(m for m in graded.marks if m.key == "weights_gib").message == (
        "Not answered: it stays at 14.96 GiB.")
    assert next(v for v in graded.values if v.key == "users_paged").message == (
        "Not answered: it goes from 191 users to 382 users.")
    # A blank value box is no answer either; a typed value, even on an unmarked step, is one (graded as before:
    # the still steps left unmarked are right, the moving ones left unmoved).
    assert grade_followup(followup, first, (), {"per_user_gib": "  "}).score == 0.0
    typed = grade_followup(followup, first, (), {"per_user_gib": "0.5"})
    assert typed.marks_score == 4 / 8 and typed.values_score == 0.0 and typed.score == 0.25


def test_a_verdict_step_moves_in_words():
    """Llama-3.1-8B in bf16 on one H100: a lone decode step reads every weight once for two FLOPs a parameter,
    about 1 FLOP/byte, far under the 295 FLOP/byte ridge (memory-bound); a batch of 512 does about 512 FLOP
    per byte of weights (compute-bound). The follow-up says so in words, as the first answer's messages do."""
    followup = follow_up(FAMILIES["roofline"], {}, Change("batch", 1, 512, "A batch of 512."), CATALOG)
    assert followup.moves == ("decode_flop_per_byte", "decode_bound")
    graded = grade_followup(followup, {}, ("decode_flop_per_byte",), {})  # the verdict step left unticked
    mark = next(m for m in graded.marks if m.key == "decode_bound")
    assert mark.verdict == "left_unmoved"
    assert mark.message == "A moved step left unmoved: memory-bound (0) → compute-bound (1)."


def test_error_is_carried_forward_from_the_first_answers():
    # 16 GiB of weights (wrong) leaves 71.6827 − 16 − 3 = 52.6827 GiB: ⌊52.6827 ÷ 0.5⌋ = 105 users worst case and
    # ⌊52.6827 ÷ 0.140625⌋ = 374 paged with the KV cache in fp8.
    followup = _ladder_fp8()
    first = own_values(followup.original, {"card_gib": "79.65", "usable_gib": "71.68", "weights_gib": "16",
                                           "kv_budget_gib": "52.68"})
    graded = grade_followup(followup, first, LADDER_MOVES, {"kv_bytes_per_token": "65536", "per_user_gib": "0.5",
                                                            "users_worst_case": "105", "users_paged": "374"})
    verdicts = {v.key: v.verdict for v in graded.values}
    assert verdicts == {"kv_bytes_per_token": "correct", "per_user_gib": "correct",
                        "users_worst_case": "carried_forward", "users_paged": "carried_forward"}
    assert graded.score == 1.0


def test_double_the_context_moves_only_the_per_user_kv():
    # kv family, Llama-3.1-8B bf16: 131,072 B per token; 8,192 → 16,384 tokens is 1.00 → 2.00 GiB per user.
    followup = follow_up(FAMILIES["kv"], {"context": 8192}, Change("context", 8192, 16384, "Double it."), CATALOG)
    assert followup.moves == ("per_user_gib",)
    assert followup.result.values["per_user_gib"] == pytest.approx(2.0)
    assert followup.result.values["kv_bytes_per_token"] == 131072


def test_int4_weights_move_the_weight_bytes():
    # 8,030,261,248 parameters × 4.5 bits ÷ 8 = 4,517,021,952 B = 4.2068 GiB (int4 charged 4.5 bits).
    followup = follow_up(FAMILIES["weights"], {}, Change("weights_dtype", "bf16", "int4", "Int4."), CATALOG)
    assert followup.moves == ("weight_bytes", "weights_gib")
    assert followup.result.values["weight_bytes"] == 4_517_021_952
    assert followup.result.values["weights_gib"] == pytest.approx(4.2068, abs=1e-4)


def test_the_moe_sibling_is_drawn_only_where_the_catalog_names_one():
    params = FAMILIES["params"]
    assert draw_followup(params, {"model": "llama-3.1-8b"}, 1, CATALOG) is None
    followup = draw_followup(params, {"model": "mistral-7b-v0.1"}, 1, CATALOG)
    assert followup.change.after == "mixtral-8x7b-v0.1"
    assert "MoE sibling" in followup.change.sentence


@pytest.mark.parametrize("slug, inputs", [("weights", {"model": "llama-3.1-70b"}),
                                          ("moe", {"model": "deepseek-v3", "gpu": "h100-sxm5-80gb"})])
def test_a_chain_never_changes_an_input_that_only_adds_steps(slug, inputs):
    # A cold start's loader and the moe layout per card choose extra steps; "and if …?" changes the stack.
    changed = {link.change.input for seed in range(4) for link in draw_chain(FAMILIES[slug], inputs, seed, CATALOG, 3)}
    assert changed and not changed & {"load_path", "layout", "layout_context", "layout_kv_dtype"}


def test_a_draw_is_reproducible():
    ladder = FAMILIES["ladder"]
    one = [link.change for link in draw_chain(ladder, {}, 11, CATALOG, 3)]
    two = [link.change for link in draw_chain(ladder, {}, 11, CATALOG, 3)]
    assert one == two and len(one) == 3
    assert len({change.input for change in one}) == 3  # each link changes another input


DRILLS = [slug for slug, family in FAMILIES.items() if family.inputs and family.generate is not None]


def _problem_with_chain(slug):
    """A drawn problem of ``slug`` and its chain; a simulated drill's problem and each changed stack simulated
    (the stored run the follow-up is graded against)."""
    family = FAMILIES[slug]
    for seed in range(60):
        inputs = family.generate(random.Random(f"{slug}:{seed}"), CATALOG)
        if family.prepare is not None:
            inputs = family.prepare(inputs, CATALOG, run_sweep)
            try:
                family.run(dict(inputs), CATALOG)
            except EngineError:
                continue  # a draw with no answer (the generator draws again)
        chain = draw_chain(family, inputs, seed, CATALOG, 3, runner=run_sweep)
        if chain:
            return family, chain
    raise AssertionError(f"no follow-up drawn for {slug}")


def test_a_simulated_drill_follows_up_only_with_a_runner_and_stores_the_new_run():
    knee = FAMILIES["knee"]
    inputs = knee.prepare(knee.generate(random.Random("knee:1"), CATALOG), CATALOG, run_sweep)
    assert draw_followup(knee, inputs, 1, CATALOG) is None  # no runner: the changed stack cannot be simulated
    followup = draw_followup(knee, inputs, 1, CATALOG, runner=run_sweep)
    assert followup.new_inputs["simulation"] != inputs["simulation"]
    assert followup.new_inputs[followup.change.input] == followup.change.after


def _exact(value: float) -> str:
    return repr(float(value))


@pytest.mark.parametrize("slug", DRILLS)
def test_every_family_grades_a_right_a_wrong_step_and_a_carried_forward_chain(slug):
    family, chain = _problem_with_chain(slug)
    original = chain[0].original
    first_text = {step.key: _exact(step.value) for step in original.steps}

    # A right chain: every mark right, every new value right.
    own = own_values(original, first_text)
    for link in chain:
        graded = grade_followup(link, own, link.moves, {k: _exact(link.result.values[k]) for k in link.moves})
        assert graded.score == 1.0, (link.change, [(v.key, v.message) for v in graded.values])
        own = graded.own

    # A wrong-step chain: the first moving step left unmoved, and a still step (if any) moved.
    own = own_values(original, first_text)
    for link in chain:
        skipped = link.moves[0]
        marked = [k for k in link.moves if k != skipped] + list(link.still[:1])
        answers = {k: _exact(link.result.values[k]) for k in link.moves if k != skipped}
        answers.update({k: _exact(link.result.values[k] * 1.5 + 1) for k in link.still[:1]})
        graded = grade_followup(link, own, marked, answers)
        marks = {m.key: m.verdict for m in graded.marks}
        values = {v.key: v.verdict for v in graded.values}
        assert marks[skipped] == "left_unmoved" and values[skipped] == "left_unmoved"
        for still in link.still[:1]:
            assert marks[still] == "moved_when_still" and values[still] == "moved_when_still"
        assert graded.score < 1.0
        own = graded.own

    # A carried-forward chain: a slip in an earlier answer that a moving step reads, carried into its new value.
    if not any(spec.from_steps for link in chain for spec in link.result.specs if spec.key in link.moves):
        # no step of this family reads another (params, formats): nothing can be carried forward
        assert not any(spec.from_steps for spec in chain[0].result.specs)
        return
    assert _carried_case(chain), f"{slug}: no carried-forward case in {[link.change for link in chain]}"


def _carried_case(chain) -> bool:
    """Find a moving step that reads an earlier one, slip the earlier answer (a still step's first answer, or a
    moving step's new one) and answer the moving step from the slip: it must be carried forward."""
    for link in chain:
        original, new = link.original, link.result
        first_text = {step.key: _exact(step.value) for step in original.steps}
        for spec in new.specs:
            if spec.key not in link.moves:
                continue
            for source in spec.from_steps.values():
                moving_source = source in link.moves
                right = new.values[source] if moving_source else original.values[source]
                slipped = right * 1.3 + 1
                own = own_values(original, first_text if moving_source else {**first_text, source: _exact(slipped)})
                if not moving_source and own.get(source) != pytest.approx(slipped):
                    continue  # the slip was refused as impossible
                try:
                    carried = spec.evaluate(new.given, {**new.values, source: slipped})
                except (ZeroDivisionError, OverflowError, ValueError):
                    continue
                expected = new.values[spec.key]
                if expected == 0 or abs(carried - expected) <= 0.11 * abs(expected):
                    continue  # indistinguishable from the right value, or only "close"
                answers = {k: _exact(new.values[k]) for k in link.moves}
                answers[spec.key] = _exact(carried)
                if moving_source:
                    answers[source] = _exact(slipped)
                graded = grade_followup(link, own, link.moves, answers)
                verdicts = {v.key: v.verdict for v in graded.values}
                if verdicts[spec.key] in ("misconception", "impossible") or verdicts.get(source) == "impossible":
                    continue  # the slip is itself a named variant here, or breaks a bound
                assert verdicts[spec.key] == "carried_forward", (link.change, spec.key, source, verdicts)
                return True
    return False
