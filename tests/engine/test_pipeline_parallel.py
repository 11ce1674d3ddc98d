"""Pipeline parallelism in the step model and the simulator's ladder (issue 31 leftover, item 3; docs/architecture.md
§12): ``pp`` stages of ``tp`` cards, each holding layers ÷ pp; a step's batch in ``m`` microbatches takes m + pp − 1
slots, each one microbatch on one stage, (pp − 1) ÷ (m + pp − 1) of them the bubble.

By hand, Llama-3.1-8B bf16 on H100 SXM cards at the stated convention (bandwidth efficiency 0.75, no step overhead):
the weights are 16,060,522,496 B, read at 3,350 GB/s × 0.75 = 2,512.5 GB/s in 6.39225 ms on one card. A decode step
at an empty cache is memory-bound, so:

- pp 2, one microbatch: two slots of half the weights, 2 × 3.19612 = 6.39225 ms (no faster than one card: the
  stages run one after the other), plus two activation transfers of 1 token × 4,096 × 2 B over NVLink's 450 GB/s,
  2 × 1.8204e-5 ms;
- pp 2, 2 microbatches of a batch of 8: three slots, 3 × 3.19612 = 9.58837 ms (each microbatch reads its stage's
  weights again), bubble 1 ÷ 3; the transfers 3 × 4 × 8,192 B ÷ 450 GB/s = 3 × 7.2818e-5 ms;
- pp 4, 4 microbatches: seven slots of a quarter of the weights, 7 × 1.59806 = 11.18643 ms, bubble 3 ÷ 7.

A compute-bound prefill spreads over the stages instead: pp 2 with 2 microbatches does the work in 3 slots of a
quarter each, 3 ÷ 4 of one card's compute time.
"""

import pytest

from calculators.engine.errors import InputError
from calculators.engine.step_model import Replica, step_ms
from calculators.sim.config import STATED_CONVENTION, build_setup, clean_sim_inputs

WEIGHTS_MS = 16_060_522_496 / (3350e9 * 0.75) * 1e3  # 6.39225 ms
HOP_MS = 4096 * 2 / 450e9 * 1e3  # one token's activations between two stages


def replica(**options):
    return Replica.from_catalog("llama-3.1-8b", "h100-sxm5-80gb", 1, **options)


def test_one_microbatch_on_two_stages_takes_one_cards_time_plus_the_hops():
    cost = step_ms(replica(pp=2), decode_batch=1, decode_context_tokens=0)
    assert cost.memory_ms == pytest.approx(WEIGHTS_MS, rel=1e-9) == pytest.approx(6.39225, abs=1e-5)
    assert cost.comm_ms == pytest.approx(2 * HOP_MS, rel=1e-9)
    assert cost.step_ms == pytest.approx(WEIGHTS_MS + 2 * HOP_MS, rel=1e-9)


@pytest.mark.parametrize("pp, microbatches, slots", [(2, 2, 3), (4, 4, 7)])
def test_microbatches_pay_the_bubble_and_read_the_stage_weights_each(pp, microbatches, slots):
    cost = step_ms(replica(pp=pp, microbatches=microbatches), decode_batch=8, decode_context_tokens=0)
    assert cost.memory_ms == pytest.approx(slots * WEIGHTS_MS / pp, rel=1e-9)
    assert cost.comm_ms == pytest.approx(slots * 8 / microbatches * HOP_MS, rel=1e-9)
    assert (pp - 1) / (microbatches + pp - 1) == pytest.approx((slots - microbatches) / slots)
    assert round(cost.memory_ms, 5) == {2: 9.58837, 4: 11.18643}[pp]


def test_a_prefill_spreads_over_the_stages():
    chunk = [(4096, 0)]
    alone = step_ms(replica(), decode_batch=0, decode_context_tokens=0, prefill_chunks=chunk)
    piped = step_ms(replica(pp=2, microbatches=2), decode_batch=0, decode_context_tokens=0, prefill_chunks=chunk)
    assert piped.compute_ms == pytest.approx(alone.compute_ms * 3 / 4, rel=1e-9)
    assert piped.flops == alone.flops


def test_a_degree_that_does_not_divide_the_layers_or_no_microbatch_is_refused_naming_the_field():
    with pytest.raises(InputError) as caught:
        replica(pp=3)
    assert caught.value.field == "pp"
    assert str(caught.value) == "pp (3) must divide the model's 32 layers into equal stages."
    with pytest.raises(InputError) as caught:
        replica(pp=2, microbatches=0)
    assert caught.value.field == "microbatches"


def test_the_ladder_counts_every_stages_cards():
    """Llama-3.1-70B bf16 on 4 H100s × 2 stages: 8 cards of 81,559 MiB at utilisation 0.9 less 3 GiB each, less the
    weights once: each card holds an eighth of the weights and of the cache."""
    inputs = clean_sim_inputs({**STATED_CONVENTION, "model": "llama-3.1-70b", "gpus": 4, "pp": 2, "microbatches": 2})
    setup = build_setup(inputs)
    card_gib = 81_559 / 1024
    assert setup.kv_budget_gib == pytest.approx(8 * card_gib * 0.9 - setup.weights_gib - 8 * 3, rel=1e-12)
    assert setup.blocks == int(setup.kv_budget_gib * 2**30 // (16 * 327_680))
    assert (setup.replica.tp, setup.replica.pp, setup.replica.microbatches) == (4, 2, 2)


def test_the_ladder_with_pipeline_stages_pools_every_card_and_replicates_by_the_tensor_parallel_degree():
    """DESIGN §12: PP is in the ladder. Llama-3.1-70B at 131,072 tokens on 16 H100 SXM: as TP 16 every K/V head is kept
    twice (16 ÷ 8 K/V heads), 327,680 B × 131,072 × 2 = 80 GiB a user; as TP 8 × PP 2 the same 16 cards keep each
    head once, 40 GiB a user. The budget is the same either way: 16 × 81,559 MiB = 1,274.359 GiB × 0.9 = 1,146.923
    GiB − 131.417 GiB of weights (70,553,706,496 × 2 B) − 16 × 3 GiB = 967.507 GiB, so ⌊967.507 ÷ 80⌋ = 12 users
    against ⌊967.507 ÷ 40⌋ = 24."""
    from calculators.families import FAMILIES

    ladder = FAMILIES["ladder"]
    tp16 = ladder.run({"model": "llama-3.1-70b", "gpus": 16, "context": 131_072}).values
    staged = ladder.run({"model": "llama-3.1-70b", "gpus": 8, "pp": 2, "context": 131_072})
    values = staged.values
    assert values["card_gib"] == pytest.approx(16 * 81_559 / 1024) == tp16["card_gib"]
    assert values["kv_budget_gib"] == pytest.approx(967.507, abs=1e-3) == pytest.approx(tp16["kv_budget_gib"])
    assert (tp16["per_user_gib"], tp16["users_worst_case"]) == (80.0, 12)
    assert (values["per_user_gib"], values["users_worst_case"]) == (40.0, 24)
    assert any("2 pipeline stages of 8 × H100 SXM" in note and "40 of the 80 layers" in note for note in staged.notes)
    # One stage is the ladder as it was.
    assert ladder.run({"model": "llama-3.1-70b", "gpus": 16, "pp": 1, "context": 131_072}).values == tp16


def test_a_pipeline_degree_that_does_not_split_the_layers_is_an_input_error_naming_pp():
    from calculators.families import FAMILIES

    # Llama-3.1-70B has 80 layers: 3 stages would hold 26⅔ each.
    with pytest.raises(InputError, match=r"pp \(3\) must divide the model's 80 layers") as caught:
        FAMILIES["ladder"].run({"model": "llama-3.1-70b", "gpus": 8, "pp": 3})
    assert caught.value.field == "pp"
