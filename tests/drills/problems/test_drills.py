"""Drill pages: the family list, seeded problems, grading on the page, stored attempts.

Expected numbers are derived by hand from ``fixtures/catalog/*.json`` (the
derivations are in comments). The reference stack (docs/architecture.md §2): card
81,559 MiB = 79.65 GiB, usable × 0.90 = 71.68 GiB, Llama-3.1-8B weights
8,030,261,248 × 2 B = 14.96 GiB, budget 71.68 − 14.96 − 3 = 53.73 GiB, KV
2 × 32 × 8 × 128 × 2 = 131,072 B, 1.00 GiB per user at 8,192, 53 users worst
case, 191 paged (⌈2,300/16⌉ × 16 = 2,304 tokens = 0.28125 GiB each).
"""

from __future__ import annotations

import copy
import html
import json
import re
from collections import Counter
from datetime import timedelta

import pytest
from django import forms
from django.contrib.auth import get_user_model
from django.core import signing
from django.utils import timezone

from calculators.engine.catalog import default_catalog, gpu_from_entry
from calculators.families import FAMILIES
from drills.models import Attempt, ProblemInstance, StepAnswer
from drills.problems.forms import sign_start
from drills.problems.generation import GENERATOR_VERSION, draw_problem, generate_inputs
from tests.paths import REPO_ROOT

CATALOG_DIR = REPO_ROOT / "fixtures" / "catalog"

REFERENCE_INPUTS = {
    "model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "weights_dtype": "bf16",
    "kv_dtype": "bf16", "context": 8192, "utilization": 0.9, "reserve_gib": 3.0, "avg_tokens": 2300,
    "block_size": 16,
}

LADDER_KEYS = ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token",
               "per_user_gib", "users_worst_case", "users_paged"]

# One answer sheet on the reference stack that draws every verdict.
ALL_VERDICTS_ANSWERS = {
    "card_gib": "79.65",             # correct
    "usable_gib": "79.65",           # misconception: utilisation skipped (usable = card)
    "weights_gib": "",               # unreadable: blank, counted as unanswered (a typo is refused)
    "kv_budget_gib": "61.69",        # carried forward: own usable 79.65 − 14.96 − 3 = 61.69
    "kv_bytes_per_token": "140000",  # close: 140,000 / 131,072 − 1 = 6.8 %
    "per_user_gib": "3",             # wrong: right 1.00, carried 140,000 × 8,192 / 2^30 = 1.07
    "users_worst_case": "500",       # impossible: ⌊79.65 / 1.00⌋ = 79 at most
    "users_paged": "191",            # correct
}
VERDICT_KINDS = ("correct", "carried_forward", "close", "misconception", "impossible", "wrong", "unreadable")

# Hand classification of every catalog model's attention (models.json "attention" and config).
ATTENTION_KIND = {
    "llama-2-7b": "MHA", "llama-2-13b": "MHA",
    "llama-3.1-8b": "GQA", "llama-3.1-70b": "GQA", "llama-3.1-405b": "GQA", "mixtral-8x7b-v0.1": "GQA",
    "qwen2.5-7b": "GQA", "qwen2.5-72b": "GQA",
    "falcon-7b": "MQA",
    "deepseek-v2-lite": "MLA", "deepseek-v2": "MLA", "deepseek-v3": "MLA",
    "mistral-7b-v0.1": "window", "gemma-2-9b": "window",
    "qwen3-8b": "GQA", "qwen3-32b": "GQA", "qwen3-30b-a3b": "GQA", "qwen3-235b-a22b": "GQA",
    "kimi-k2": "MLA", "gpt-oss-120b": "window", "gpt-oss-20b": "window",
    "llama-4-scout": "window", "llama-4-maverick": "window", "deepseek-v3.2-exp": "MLA",
}


def raw_entry(kind: str, entry_id: str) -> dict:
    """One object of fixtures/catalog/{models,gpus}.json, read straight from the file."""
    for entry in json.loads((CATALOG_DIR / f"{kind}.json").read_text()):
        if entry["id"] == entry_id:
            return entry
    raise KeyError(entry_id)


def make_problem(family: str = "ladder", inputs: dict | None = None, seed: int = 0, owner=None) -> ProblemInstance:
    """A stored problem of ``owner`` (default: alice, the ``candidate`` fixture's user): only its owner opens it."""
    inputs = dict(REFERENCE_INPUTS if inputs is None else inputs)
    snapshot = {"models": [raw_entry("models", inputs["model"])],
                "gpus": [raw_entry("gpus", inputs["gpu"])] if "gpu" in inputs else []}
    if owner is None:
        owner = get_user_model().objects.get_or_create(username="alice", defaults={"email": "alice@example.com"})[0]
    return ProblemInstance.objects.create(family=family, seed=seed, generator_version=GENERATOR_VERSION,
                                          inputs=inputs, snapshot=snapshot, created_by=owner)


@pytest.fixture
def owner_client(candidate):
    """A client logged in as alice, who owns the problems :func:`make_problem` stores."""
    from django.test import Client

    logged_in = Client()
    logged_in.force_login(candidate)
    return logged_in


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def statement_of(response) -> str:
    match = re.search(r'<p class="mb-0 problem-statement">(.*?)</p>', response.content.decode(), re.S)
    assert match, "the page has a problem statement"
    return html.unescape(match.group(1))


def config_table_of(response) -> str:
    match = re.search(r'<table class="table table-sm mb-2 config-table">(.*?)</table>',
                      response.content.decode(), re.S)
    assert match, "the page has the config table"
    return match.group(1)


def step_items(response) -> dict[str, str]:
    """The <li> of each step, keyed by step key, unescaped."""
    body = response.content.decode()
    items = re.findall(r'<li class="answer-step[^"]*" id="step-([a-z_]+)">(.*?)</li>', body, re.S)
    return {key: html.unescape(content) for key, content in items}


def verdict_classes(response) -> dict[str, str]:
    body = response.content.decode()
    return dict((key, verdict) for verdict, key in
                re.findall(r'class="answer-step[^"]*verdict-([a-z_]+)" id="step-([a-z_]+)"', body))


def started_token(response) -> str:
    match = re.search(r'name="started" value="([^"]+)"', response.content.decode())
    assert match, "the page carries a signed start time"
    return html.unescape(match.group(1))


# --- the family list ------------------------------------------------------------------


@pytest.mark.django_db
class TestIndex:
    def test_it_lists_the_four_families_each_with_a_new_problem_button(self, client):
        response = client.get("/drills/")

        assert response.status_code == 200
        text = page_text(response)
        for title in ("Capacity ladder", "KV cache", "Parameter count", "Weight memory"):
            assert title in text
        for slug in ("ladder", "kv", "params", "weights"):
            assert f'action="/drills/{slug}/new/"' in text

    def test_a_visitor_is_invited_to_log_in_to_keep_attempts(self, client):
        assert "to keep your attempts" in page_text(client.get("/drills/"))

    def test_a_candidate_sees_their_recent_attempts(self, candidate_client):
        problem = make_problem()
        candidate_client.post(problem.get_absolute_url(),
                              {"users_worst_case": "53", "users_paged": "191", "blanks": "count"})

        text = page_text(candidate_client.get("/drills/"))

        assert f'href="/drills/ladder/{problem.pk}/"' in text
        assert "25 %" in text  # 2 of 8 steps right

    def test_a_candidate_does_not_see_someone_elses_attempts(self, candidate_client, coach_client, coach):
        problem = make_problem(owner=coach)
        coach_client.post(problem.get_absolute_url(), {"users_worst_case": "53", "blanks": "count"})

        text = page_text(candidate_client.get("/drills/"))

        assert Attempt.objects.count() == 1
        assert f'href="/drills/ladder/{problem.pk}/"' not in text
        assert "No attempts yet" in text


# --- drawing a problem ------------------------------------------------------------------


@pytest.mark.django_db
class TestNewProblem:
    @pytest.fixture
    def client(self, candidate):
        """Logged in: a visitor's problem is not stored (TestVisitorsStoreNothing)."""
        from django.test import Client

        logged_in = Client()
        logged_in.force_login(candidate)
        return logged_in

    def test_a_seed_shows_the_problem_and_stores_nothing_until_saved(self, client, candidate):
        page = client.get("/drills/ladder/new/?seed=5")
        assert page.status_code == 200 and not ProblemInstance.objects.exists()
        assert 'name="save"' in page.content.decode()
        assert 'action="/drills/ladder/new/?seed=5"' in page.content.decode()  # the answers post back here

        response = client.post("/drills/ladder/new/?seed=5", {"save": "1"})

        problem = ProblemInstance.objects.get()
        assert response.status_code == 302
        assert response["Location"] == f"/drills/ladder/{problem.pk}/"
        assert problem.family == "ladder"
        assert problem.seed == 5
        assert problem.generator_version == GENERATOR_VERSION
        assert problem.inputs == generate_inputs("ladder", 5)
        assert problem.created_by == candidate
        assert statement_of(page) == statement_of(client.get(response["Location"]))

    def test_the_first_answers_store_the_problem_with_the_attempt(self, client, candidate):
        drawn = draw_problem("ladder", 5)
        answers = {step.key: repr(step.value) for step in drawn.solve().steps}

        graded = client.post("/drills/ladder/new/?seed=5", {**answers, "started": ""}, headers={"HX-Request": "true"})

        problem = ProblemInstance.objects.get()
        attempt = Attempt.objects.get()
        assert (attempt.problem, attempt.user, attempt.score) == (problem, candidate, 1.0)
        assert (problem.seed, problem.inputs, problem.created_by) == (5, drawn.inputs, candidate)
        assert graded["HX-Push-Url"] == f"/drills/ladder/{problem.pk}/"
        assert f'hx-post="/drills/ladder/{problem.pk}/"' in graded.content.decode()  # grading again: that problem

    def test_unreadable_first_answers_store_neither_the_problem_nor_an_attempt(self, client):
        response = client.post("/drills/ladder/new/?seed=5", {"card_gib": "7O GiB", "started": ""})

        assert response.status_code == 200 and 'id="not-recorded"' in response.content.decode()
        assert 'value="7O GiB"' in response.content.decode()  # what was typed is kept
        assert 'action="/drills/ladder/new/?seed=5"' in response.content.decode()
        assert not ProblemInstance.objects.exists() and not Attempt.objects.exists()

    def test_a_problem_opened_twice_shows_the_same_numbers(self, client):
        url = client.post("/drills/ladder/new/?seed=5", {"save": "1"})["Location"]

        first, second = client.get(url), client.get(url)

        assert first.status_code == second.status_code == 200
        assert statement_of(first) == statement_of(second)
        assert config_table_of(first) == config_table_of(second)

    def test_the_same_seed_drawn_twice_gives_the_same_problem(self, client):
        first = client.post("/drills/kv/new/?seed=11", {"save": "1"})["Location"]
        second = client.post("/drills/kv/new/?seed=11", {"save": "1"})["Location"]

        # One stored problem: the same candidate's same draw is the problem they already stored (a second grading is
        # practice on it; two instances let both first attempts count — a new user's finding).
        assert first == second
        assert ProblemInstance.objects.filter(family="kv", seed=11).count() == 1

    def test_the_index_button_posts_for_a_fresh_seed_and_stores_nothing(self, candidate_client, candidate):
        response = candidate_client.post("/drills/weights/new/")

        assert response.status_code == 302
        assert re.fullmatch(r"/drills/weights/new/\?seed=\d+", response["Location"])
        assert candidate_client.get(response["Location"]).status_code == 200
        assert not ProblemInstance.objects.exists()

    def test_generator_v8_seed_5_is_deepseek_v3_int4_on_eight_h100_pcie(self, client):
        """Reproducibility across releases: generator v8 (v7 added the December 2026 cards, v8 the Qwen3 models;
        v9 renames prefill's MFU key and draws as v8, v10 only stores the calibrated efficiencies of the families
        that take them and v11 the knee's refining runs, and v12's Kimi K2, v13's gpt-oss and v14's Llama 4 leave this
        seed's draw as it was, nor does v15's renamed cached-tokens key, v16's chunked disaggregation verdict,
        v17's decode batch cap, v18's causal prefill, v19's decode batch draw, v20's one decode capacity rule,
        v21's DeepSeek-V3.2-Exp, v22's preemptrate budget steps, v23's MI355X bf16 figure, v24's MI355X
        links, v25's refitted calibration rows, v26's calibrated simulated drills, v27's compute-bound tpotbatch
        stacks, v28's simulated drills' centres or v29's pooled calibration rows, so the ladder's draw is v8's;
        v30's H100 PCIe driver total keeps the draw and moves its card line, v31's per-collective TP cost,
        v32's A100 40GB row and v33's KV degrees that hold the weights leave it as it was) always draws this
        problem for seed 5.

        DeepSeek-V3 (tests/engine/test_param_count.py): 671,026,419,200 parameters. H100 PCIe, as nvidia-smi
        reports it (v30): 8 × 81,559 MiB = 652,472 MiB = 637.18 GiB; × 0.90 = 573.46. int4 at 4.5 bits:
        671,026,419,200 × 4.5 / 8 = 377,452,360,800 B = 351.53 GiB. Budget 573.462 − 351.530 − 8 × 3 = 197.93 GiB.
        fp8 MLA latent: 61 × (512 + 64) × 1 = 35,136 B per token, copied on each of the 8 cards
        (docs/architecture.md §12): × 8 × 8,192 = 2.14 GiB → ⌊92.30⌋ = 92 users; paged ⌈2,350/16⌉ = 147 blocks =
        2,352 tokens × 35,136 × 8 = 0.6157 GiB → ⌊321.47⌋ = 321 users.
        """
        assert GENERATOR_VERSION == 33, "a new generator version draws new problems: re-derive this one"
        url = client.post("/drills/ladder/new/?seed=5", {"save": "1"})["Location"]

        # Every step blank, counted as unanswered when the candidate asks: each message names the expected value.
        response = client.post(url, {"blanks": "count"})

        assert ProblemInstance.objects.get().inputs == {
            "model": "deepseek-v3", "gpu": "h100-pcie-80gb", "gpus": 8, "weights_dtype": "int4",
            "kv_dtype": "fp8", "context": 8192, "utilization": 0.9, "reserve_gib": 3.0, "avg_tokens": 2350,
            "block_size": 16,
        }
        steps = step_items(response)
        expected = {
            "card_gib": "637.18 GiB", "usable_gib": "573.46 GiB", "weights_gib": "351.53 GiB",
            "kv_budget_gib": "197.93 GiB", "kv_bytes_per_token": "35,136 B", "per_user_gib": "2.14 GiB",
            "users_worst_case": "92 users", "users_paged": "321 users",
        }
        for key, shown in expected.items():
            assert f"No answer given; expected {shown}." in steps[key], key
        text = page_text(response)
        assert "H100 PCIe 80GB" in text
        assert "81,559 MiB as the driver reports it" in text


class TestGeneration:
    @pytest.mark.parametrize("family", ["ladder", "kv", "params", "weights"])
    def test_the_same_seed_gives_the_same_inputs(self, family):
        assert generate_inputs(family, 42) == generate_inputs(family, 42)

    @pytest.mark.parametrize("family", ["ladder", "kv", "weights"])
    def test_different_seeds_give_different_problems(self, family):
        drawn = {json.dumps(generate_inputs(family, seed), sort_keys=True) for seed in range(20)}

        assert len(drawn) >= 15

    def test_an_unknown_family_has_no_generator(self):
        with pytest.raises(KeyError):
            generate_inputs("no-such-family", 1)

    def test_about_nine_ladder_problems_in_ten_fit_and_the_others_serve_no_one(self):
        ladder = FAMILIES["ladder"]
        fitting = 0
        for seed in range(300):
            inputs = generate_inputs("ladder", seed)
            result = ladder.run(inputs)
            users = result.values["users_worst_case"]
            if users >= 1:
                fitting += 1
                if inputs["gpus"] > 1:  # the smallest degree: half as many cards serve no one
                    assert ladder.run({**inputs, "gpus": inputs["gpus"] // 2}).values["users_worst_case"] == 0
            else:
                assert users == 0
                assert inputs["gpus"] == 1
                assert result.extra["fits"] is False

        assert 0.80 <= fitting / 300 <= 0.97

    def test_generated_problems_use_catalog_ids_and_fp8_only_on_fp8_cards(self):
        models = {entry["id"] for entry in json.loads((CATALOG_DIR / "models.json").read_text())}
        gpus = {entry["id"]: entry for entry in json.loads((CATALOG_DIR / "gpus.json").read_text())}
        for seed in range(200):
            inputs = generate_inputs("ladder", seed)
            assert inputs["model"] in models
            assert inputs["gpu"] in gpus
            if "fp8" in (inputs["weights_dtype"], inputs["kv_dtype"]):
                # The A100s list fp8_dense as null: no fp8 tensor cores on Ampere.
                assert gpus[inputs["gpu"]]["tflops"].get("fp8_dense"), (seed, inputs)

    def test_generated_contexts_stay_within_the_model_limit(self):
        limits = {entry["id"]: (entry.get("config") or {}).get("max_position_embeddings")
                  for entry in json.loads((CATALOG_DIR / "models.json").read_text())}
        for family in ("ladder", "kv"):
            for seed in range(150):
                inputs = generate_inputs(family, seed)
                limit = limits[inputs["model"]] or 8192
                assert inputs["context"] <= limit, (family, seed, inputs)

    def test_kv_problems_cover_every_attention_kind(self):
        kinds = Counter(ATTENTION_KIND[generate_inputs("kv", seed)["model"]] for seed in range(100))

        assert set(kinds) == {"MHA", "GQA", "MQA", "MLA", "window"}


# --- the catalog snapshot -----------------------------------------------------------


@pytest.fixture
def h100_shrunk_in_the_catalog():
    """The live catalog's H100 SXM edited to report 40,960 MiB; restored afterwards."""
    catalog = default_catalog()
    original = catalog.gpus["h100-sxm5-80gb"]
    entry = copy.deepcopy(original.entry)
    entry["memory"]["nvidia_smi_total_MiB"] = 40960
    entry["memory"]["nvidia_smi_total_bytes"] = 40960 * 2**20
    catalog.gpus["h100-sxm5-80gb"] = gpu_from_entry(entry)
    yield
    catalog.gpus["h100-sxm5-80gb"] = original


@pytest.mark.django_db
class TestSnapshot:
    @pytest.fixture
    def client(self, candidate):
        """Logged in: these tests read the stored problem."""
        from django.test import Client

        logged_in = Client()
        logged_in.force_login(candidate)
        return logged_in

    def test_a_problem_stores_the_catalog_entries_it_was_drawn_from(self, client):
        client.post("/drills/ladder/new/?seed=5", {"save": "1"})

        problem = ProblemInstance.objects.get()
        assert problem.snapshot["models"] == [raw_entry("models", problem.inputs["model"])]
        assert problem.snapshot["gpus"] == [raw_entry("gpus", problem.inputs["gpu"])]

    def test_the_solution_follows_the_stored_snapshot(self, client):
        # The snapshot's card edited to 40,960 MiB = 40 GiB: usable 36.00; budget 36 − 14.9575 − 3
        # = 18.04 GiB; worst ⌊18.04 / 1⌋ = 18; paged ⌊18.04 / 0.28125⌋ = ⌊64.15⌋ = 64.
        problem = make_problem()
        problem.snapshot["gpus"][0]["memory"]["nvidia_smi_total_MiB"] = 40960
        problem.save()

        steps = step_items(client.post(problem.get_absolute_url(), {"blanks": "count"}))

        assert "expected 40.00 GiB." in steps["card_gib"]
        assert "expected 36.00 GiB." in steps["usable_gib"]
        assert "expected 18.04 GiB." in steps["kv_budget_gib"]
        assert "expected 18 users." in steps["users_worst_case"]
        assert "expected 64 users." in steps["users_paged"]

    def test_a_stored_problem_keeps_its_numbers_when_the_catalog_changes(self, client,
                                                                           h100_shrunk_in_the_catalog):
        problem = make_problem()
        assert FAMILIES["ladder"].run({}).values["card_gib"] == 40.0  # the catalog did change

        steps = step_items(client.post(problem.get_absolute_url(), {"blanks": "count"}))

        assert "expected 79.65 GiB." in steps["card_gib"]
        assert "expected 53 users." in steps["users_worst_case"]
        assert "expected 191 users." in steps["users_paged"]
        assert "81,559 MiB as the driver reports it" in page_text(client.get(problem.get_absolute_url()))


# --- grading on the page ------------------------------------------------------------


@pytest.mark.django_db
class TestGradingOnThePage:
    @pytest.fixture
    def client(self, owner_client):
        """The problem's owner: a stored problem is nobody else's page (a visitor grades a seed: see below)."""
        return owner_client

    def test_answers_are_graded_with_verdicts_expected_values_and_worked_substitutions(self, client):
        problem = make_problem()

        response = client.post(problem.get_absolute_url(), {**ALL_VERDICTS_ANSWERS, "blanks": "count"})

        assert response.status_code == 200
        steps = step_items(response)
        assert "Expected 53 users." in steps["users_worst_case"]
        assert "even with no weights at all, 79.65 GiB holds at most 79 such users" in steps["users_worst_case"]
        assert "Utilisation fraction skipped" in steps["usable_gib"]
        assert 'href="/errata/#two-user-counts"' in steps["usable_gib"]
        assert "Follows from your earlier values (61.69 GiB)" in steps["kv_budget_gib"]
        assert "Close: 6.8% off 131,072 B" in steps["kv_bytes_per_token"]
        # the worked substitution of each step, with the right values
        assert "2 × 32 × 8 × 128 × 2 B = 131,072 B" in steps["kv_bytes_per_token"]
        assert "71.68 GiB − 14.96 GiB − 1 × 3.00 GiB = 53.73 GiB" in steps["kv_budget_gib"]
        assert "1 × 81,559 MiB = 79.65 GiB" in steps["card_gib"]
        # 1 + 0 + 0 + 1 + 0.5 + 0 + 0 + 1 = 3.5 / 8 = 44 %
        assert "Score 44 %" in page_text(response)

    def test_every_verdict_kind_can_appear_on_the_page(self, client):
        problem = make_problem()

        response = client.post(problem.get_absolute_url(), {**ALL_VERDICTS_ANSWERS, "blanks": "count"})

        classes = verdict_classes(response)
        assert classes == {
            "card_gib": "correct", "usable_gib": "misconception", "weights_gib": "unreadable",
            "kv_budget_gib": "carried_forward", "kv_bytes_per_token": "close", "per_user_gib": "wrong",
            "users_worst_case": "impossible", "users_paged": "correct",
        }
        assert set(classes.values()) == set(VERDICT_KINDS)
        text = page_text(response)
        for label in ("Correct", "Carried forward", "Close", "Misconception", "Impossible", "Wrong",
                      "No answer"):  # a typed unreadable step is refused, never graded, on this page
            assert f"verdict-badge\">{label}</span>" in text

    def test_a_visitor_posting_to_a_stored_problem_is_sent_to_log_in_and_stores_nothing(self):
        from django.test import Client

        problem = make_problem()

        response = Client().post(problem.get_absolute_url(), {**ALL_VERDICTS_ANSWERS, "blanks": "count"})

        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert Attempt.objects.count() == 0
        assert StepAnswer.objects.count() == 0

    def test_the_typed_answers_stay_in_their_boxes(self, client):
        problem = make_problem()

        response = client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "2*32*8*128*2", "blanks": "count"})

        assert 'value="2*32*8*128*2"' in response.content.decode()

    def test_a_kv_problem_is_graded_on_its_three_steps(self, client):
        # Mistral-7B at 32,768: 2 × 32 × 8 × 128 × 2 = 131,072 B; every layer windowed at 4,096:
        # 131,072 × 4,096 / 2^30 = 0.50 GiB; ignoring the window gives 4.00 GiB.
        problem = make_problem("kv", {"model": "mistral-7b-v0.1", "kv_dtype": "bf16", "context": 32768})

        response = client.post(problem.get_absolute_url(),
                               {"kv_bytes_per_token": "128 KiB", "kv_replication": "1", "per_user_gib": "4"})

        assert verdict_classes(response) == {"kv_bytes_per_token": "correct", "kv_replication": "correct",
                                             "per_user_gib": "misconception"}
        assert "Sliding window ignored" in step_items(response)["per_user_gib"]


@pytest.mark.django_db
class TestGradingAsACandidate:
    def test_an_attempt_stores_every_step(self, candidate_client, candidate):
        problem = make_problem()
        token = started_token(candidate_client.get(problem.get_absolute_url()))
        answers = {**ALL_VERDICTS_ANSWERS, "weights_gib": "16.06", "kv_bytes_per_token": "128 KiB",
                   "per_user_gib": ""}

        response = candidate_client.post(problem.get_absolute_url(), {**answers, "started": token, "blanks": "count"})

        assert response.status_code == 200
        attempt = Attempt.objects.get()
        assert attempt.user == candidate
        assert attempt.problem == problem
        rows = {row.key: row for row in StepAnswer.objects.filter(attempt=attempt)}
        assert [row.key for row in attempt.steps.all()] == LADDER_KEYS
        assert [row.position for row in attempt.steps.all()] == list(range(8))

        weights = rows["weights_gib"]  # 16.06 = the weights in GB typed as GiB
        assert (weights.raw_input, weights.parsed_value, weights.verdict, weights.misconception) == (
            "16.06", 16.06, "misconception", "gb-gib-mix")
        assert weights.expected == pytest.approx(14.957527, rel=1e-6)
        assert weights.unit == "GiB"
        kv = rows["kv_bytes_per_token"]
        assert (kv.raw_input, kv.parsed_value, kv.verdict, kv.misconception, kv.expected) == (
            "128 KiB", 131072.0, "correct", "", 131072.0)
        blank = rows["per_user_gib"]
        assert (blank.raw_input, blank.parsed_value, blank.verdict, blank.credit) == ("", None, "unreadable", 0.0)
        budget = rows["kv_budget_gib"]  # own usable 79.65 − own weights 16.06 − 3 = 60.59; 61.69 is not that
        assert budget.verdict == "misconception"
        assert budget.misconception == "skipped-utilization"  # 79.6475 − 14.9575 − 3 = 61.69
        worst = rows["users_worst_case"]
        assert (worst.parsed_value, worst.verdict, worst.expected) == (500.0, "impossible", 53.0)
        # correct: card, kv, paged; the rest 0 → 3 / 8
        assert attempt.score == pytest.approx(3 / 8)
        assert 0 <= attempt.time_taken_s < 60
        assert attempt.started_at is not None
        assert "Saved" in page_text(response)

    def test_time_taken_runs_from_the_signed_start(self, candidate_client):
        problem = make_problem()
        started = sign_start(timezone.now() - timedelta(seconds=90))

        candidate_client.post(problem.get_absolute_url(),
                              {"users_worst_case": "53", "started": started, "blanks": "count"})

        assert 90 <= Attempt.objects.get().time_taken_s < 120

    @pytest.mark.parametrize("forged", [
        "1700000000",                                                         # a bare timestamp
        signing.dumps(0.0, salt="some-other-salt"),                           # signed for something else
        "not-a-token",
    ], ids=["bare-timestamp", "other-salt", "not-a-token"])      # fixed ids: the signed token holds the time
    def test_a_forged_start_is_ignored(self, candidate_client, forged):
        problem = make_problem()

        response = candidate_client.post(problem.get_absolute_url(),
                                         {"users_worst_case": "53", "started": forged, "blanks": "count"})

        assert response.status_code == 200
        attempt = Attempt.objects.get()
        assert attempt.time_taken_s is None
        assert attempt.started_at is None
        assert attempt.score == pytest.approx(1 / 8)

    def test_a_start_in_the_future_records_no_time(self, candidate_client):
        problem = make_problem()
        started = sign_start(timezone.now() + timedelta(hours=1))

        candidate_client.post(problem.get_absolute_url(),
                              {"users_worst_case": "53", "started": started, "blanks": "count"})

        assert Attempt.objects.get().time_taken_s is None

    def test_each_submission_is_a_new_attempt(self, candidate_client):
        problem = make_problem()

        candidate_client.post(problem.get_absolute_url(), {"users_worst_case": "53", "blanks": "count"})
        candidate_client.post(problem.get_absolute_url(), {"users_worst_case": "191", "blanks": "count"})

        assert Attempt.objects.count() == 2
        assert sorted(StepAnswer.objects.filter(key="users_worst_case").values_list("verdict", flat=True)) == [
            "correct", "misconception"]


@pytest.mark.django_db
class TestHtmx:
    def test_an_htmx_post_returns_only_the_answers_form(self, htmx_client, candidate):
        htmx_client.force_login(candidate)
        problem = make_problem()

        response = htmx_client.post(problem.get_absolute_url(), {**ALL_VERDICTS_ANSWERS, "blanks": "count"})

        assert response.status_code == 200
        body = response.content.decode().strip()
        assert body.startswith('<form id="answers"')
        # the interviewer's follow-up comes out of band, after the form (issue 33 item 1)
        form, followup = body.split('<section id="followup"', 1)
        assert form.strip().endswith("</form>")
        assert followup.startswith(' class="card shadow-sm mt-3" hx-swap-oob="true"')
        assert "<html" not in body
        assert "The question" not in body
        assert verdict_classes(response)["users_worst_case"] == "impossible"
        assert "Score 44 %" in html.unescape(body)

    def test_an_htmx_post_by_a_candidate_is_stored(self, htmx_client, candidate):
        htmx_client.force_login(candidate)
        problem = make_problem()

        response = htmx_client.post(problem.get_absolute_url(), {"users_paged": "191", "blanks": "count"})

        assert "<html" not in response.content.decode()
        assert Attempt.objects.get().steps.get(key="users_paged").verdict == "correct"

    def test_an_htmx_get_returns_the_whole_page(self, htmx_client, candidate):
        htmx_client.force_login(candidate)
        problem = make_problem()

        assert "<html" in htmx_client.get(problem.get_absolute_url()).content.decode()


@pytest.mark.django_db
class TestHostileAnswers:
    @pytest.fixture
    def client(self, owner_client):
        return owner_client

    def test_an_answer_over_500_characters_is_reported_not_crashed(self, candidate_client):
        problem = make_problem()

        response = candidate_client.post(problem.get_absolute_url(), {"card_gib": "7" * 600, "blanks": "count"})

        assert response.status_code == 200
        assert verdict_classes(response) == {}  # refused: nothing graded, no expected value shown
        assert "is 600 characters long; answers are limited to 200 characters" in page_text(response)
        assert Attempt.objects.count() == 0

    def test_an_answer_over_200_characters_is_unreadable_with_the_limit(self, client):
        problem = make_problem()

        response = client.post(problem.get_absolute_url(), {"card_gib": "1+" * 150 + "1", "blanks": "count"})

        assert verdict_classes(response) == {}
        assert "answers are limited to 200 characters" in step_items(response)["card_gib"]

    def test_an_over_long_answer_is_not_reported_as_no_answer(self, candidate_client):
        problem = make_problem()
        typed = "7" * 600

        response = candidate_client.post(problem.get_absolute_url(), {"card_gib": typed, "blanks": "count"})

        step = step_items(response)["card_gib"]
        assert "No answer given" not in step and "Blank:" not in step
        assert f'value="{typed}"' in step  # kept in its box to fix

    @pytest.mark.parametrize("typed", [
        "٥٣",              # Arabic-Indic digits
        "53\u200b",        # zero-width space
        "\u202e35",        # right-to-left override
        "53 👥",
        "53\x00",          # a NUL byte
        "ｕｓｅｒｓ",        # full-width letters
    ])
    def test_odd_unicode_is_unreadable_not_an_error(self, client, typed):
        problem = make_problem()

        response = client.post(problem.get_absolute_url(),
                               {"users_worst_case": typed, "users_paged": "191", "blanks": "count"})

        assert response.status_code == 200
        assert verdict_classes(response) == {}  # refused with the parser's message, nothing graded
        assert "invalid-feedback d-block" in step_items(response)["users_worst_case"]
        assert "1 could not be read" in page_text(response)

    def test_full_width_digits_are_graded(self, client):
        # Issue 29: full-width digits were refused as unreadable; they are read as digits now (verdict changes from
        # unreadable to correct for the right count).
        problem = make_problem()

        response = client.post(problem.get_absolute_url(),
                               {"users_worst_case": "５３", "users_paged": "１９１", "blanks": "count"})

        assert response.status_code == 200
        assert "invalid-feedback d-block" not in step_items(response)["users_worst_case"]
        assert "could not be read" not in page_text(response)

    def test_a_script_tag_in_an_answer_is_escaped(self, client):
        problem = make_problem()
        attack = "<script>alert(1)</script>"

        response = client.post(problem.get_absolute_url(),
                               {"weights_gib": attack, "users_paged": '"><img src=x>', "blanks": "count"})

        body = response.content.decode()
        assert response.status_code == 200
        assert attack not in body
        assert "<img src=x>" not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert "Could not read" in step_items(response)["weights_gib"]

    def test_a_zero_per_user_answer_does_not_break_the_page(self, client):
        # Regression: the carried-forward user count used to divide by the typed 0 (a 500).
        problem = make_problem()

        response = client.post(problem.get_absolute_url(),
                               {"per_user_gib": "0", "users_worst_case": "5", "blanks": "count"})

        assert response.status_code == 200
        assert verdict_classes(response)["per_user_gib"] == "impossible"
        assert verdict_classes(response)["users_worst_case"] == "wrong"


@pytest.mark.django_db
class TestNotFound:
    @pytest.mark.parametrize("url", ["/drills/nope/", "/drills/nope/new/", "/drills/nope/1/",
                                     "/drills/no-such-family/new/"])
    def test_an_unknown_family_is_404(self, client, url):
        assert client.get(url).status_code == 404

    def test_a_problem_under_another_familys_address_is_404(self, owner_client):
        client = owner_client
        problem = make_problem()

        assert client.get(f"/drills/ladder/{problem.pk}/").status_code == 200
        assert client.get(f"/drills/kv/{problem.pk}/").status_code == 404
        assert client.post(f"/drills/kv/{problem.pk}/", {"kv_bytes_per_token": "1"}).status_code == 404

    def test_a_missing_problem_is_404(self, owner_client):
        assert owner_client.get("/drills/ladder/999999/").status_code == 404


@pytest.mark.django_db
class TestEveryCatalogEntryRenders:
    @pytest.fixture
    def client(self, owner_client):
        return owner_client

    @pytest.mark.parametrize("model", sorted(ATTENTION_KIND))
    def test_a_kv_problem_on_every_catalog_model_shows_and_grades(self, client, model):
        problem = make_problem("kv", {"model": model, "kv_dtype": "bf16", "context": 4096})

        shown = client.get(problem.get_absolute_url())
        graded = client.post(problem.get_absolute_url(), {"kv_bytes_per_token": "1", "blanks": "count"})

        assert shown.status_code == graded.status_code == 200
        assert model in statement_of(shown)
        assert set(verdict_classes(graded)) == {"kv_bytes_per_token", "kv_replication", "per_user_gib"}

    @pytest.mark.parametrize("gpu", [entry["id"] for entry in json.loads((CATALOG_DIR / "gpus.json").read_text())])
    def test_a_ladder_problem_on_every_catalog_card_shows_and_grades(self, client, gpu):
        problem = make_problem("ladder", {**REFERENCE_INPUTS, "gpu": gpu})

        shown = client.get(problem.get_absolute_url())
        graded = client.post(problem.get_absolute_url(), {"card_gib": "1", "blanks": "count"})

        assert shown.status_code == graded.status_code == 200
        assert raw_entry("gpus", gpu)["name"] in page_text(shown)
        assert len(verdict_classes(graded)) == 8


# --- rendering and solving once -----------------------------------------------------------------------------


class TestAnswerBoxes:
    @pytest.mark.django_db
    def test_a_box_with_an_error_is_marked_invalid_and_keeps_what_was_typed(self, client):
        # The box is drawn by one template partial (drills/_answer_step.html#box), its error pointed at by id.
        page = client.post("/drills/ladder/new/?seed=5", {"card_gib": "7O GiB", "usable_gib": "71.68"}).content.decode()

        box = re.search(r'<input type="text" name="card_gib"[^>]*>', page).group(0)
        assert box == (
            '<input type="text" name="card_gib" id="id_card_gib" value="7O GiB" class="form-control answer-input '
            'is-invalid" autocomplete="off" spellcheck="false" inputmode="text" maxlength="10000" aria-invalid="true" '
            'aria-describedby="id_card_gib-error">')
        assert '<div class="invalid-feedback d-block" id="id_card_gib-error">' in page
        other = re.search(r'<input type="text" name="usable_gib"[^>]*>', page).group(0)
        assert 'value="71.68"' in other and "aria-invalid" not in other

    def test_a_too_long_open_answer_is_marked_invalid(self):
        from drills.reviews.forms import OpenAnswerForm

        form = OpenAnswerForm({"answer": "x" * 20_001, "version": "0"})
        assert not form.is_valid()
        assert 'aria-invalid="true"' in str(form["answer"])


@pytest.mark.django_db
class TestSolvedOnce:
    def test_the_same_problem_loaded_twice_is_solved_once_in_the_process(self):
        problem = make_problem()

        first = ProblemInstance.objects.get(pk=problem.pk).solve()
        again = ProblemInstance.objects.get(pk=problem.pk).solve()

        assert again is first
        assert (first.values["users_worst_case"], first.values["users_paged"]) == (53, 191)

    def test_other_numbers_are_solved_afresh(self):
        reference = make_problem()
        # Half the context: 0.50 GiB per user, ⌊53.73 / 0.5⌋ = 107 users worst case (paged is unchanged).
        shorter = make_problem(inputs={**REFERENCE_INPUTS, "context": 4096}, seed=1)

        assert shorter.solve() is not reference.solve()
        assert shorter.solve().values["users_worst_case"] == 107
        assert reference.solve().values["users_worst_case"] == 53


def test_the_review_forms_hidden_inputs_are_byte_for_byte_djangos():
    from drills.reviews.forms import OpenAnswerForm, RateForm

    for form in (OpenAnswerForm(initial={"version": 3, "started": "token:1"}),
                 RateForm(2, {"version": "-1", "started": "x\"<", "rating": "auto"})):
        form.is_valid()
        for key in ("version", "started"):
            field = form[key]
            assert str(field) == field.as_widget(widget=forms.HiddenInput(field.field.widget.attrs))
    assert str(OpenAnswerForm(initial={"version": 3})["version"]) == (
        '<input type="hidden" name="version" value="3" id="id_version">')


@pytest.mark.django_db
class TestVisitorsStoreNothing:
    """An anonymous ``GET /drills/<family>/new/`` stored a row each time (issue 21, finding 6): now nothing."""

    def test_a_visitor_is_sent_to_a_seeded_address_and_nothing_is_stored(self, client):
        response = client.get("/drills/ladder/new/")
        assert response.status_code == 302
        assert re.fullmatch(r"/drills/ladder/new/\?seed=\d+", response["Location"])
        for _ in range(3):
            page = client.get("/drills/ladder/new/?seed=5")
            assert page.status_code == 200
        assert ProblemInstance.objects.count() == 0

    def test_the_page_is_drawn_from_the_seed_and_grades_without_storing(self, client):
        page = client.get("/drills/ladder/new/?seed=5")
        problem = ProblemInstance(family="ladder", seed=5, generator_version=GENERATOR_VERSION,
                                  inputs=generate_inputs("ladder", 5))
        assert problem.inputs["model"] in page_text(page)
        assert 'action="/drills/ladder/new/?seed=5"' in page.content.decode()
        graded = client.post("/drills/ladder/new/?seed=5", {"card_gib": "1", "blanks": "count"})
        assert graded.status_code == 200 and "Graded but not saved" in page_text(graded)
        assert ProblemInstance.objects.count() == 0 and Attempt.objects.count() == 0
