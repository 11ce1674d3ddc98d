"""Critique drills: loaded from ``critiques/*.yaml``, graded, stored per candidate and self-assessed.

The scoring rule (drills/critique/services.py): score = found ÷ planted − 0.1 × false flags, clamped to 0–1; a
flag on a line that only carries a planted error's consequence counts neither way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from drills.critique.services import FALSE_FLAG_PENALTY, grade_critique, read_flags
from drills.models import BankItem, CritiqueAttempt, CritiqueMark
from runbook.loading import ContentError, load_content
from runbook.shortcodes import resolve
from tests.factories import UserFactory
from tests.page_text import visible
from tests.runbook.content_trees import load_design_content, write_tree

pytestmark = pytest.mark.django_db


# Twenty lines; errors planted on 3, 7 and 12; line 8 only repeats line 7's consequence.
LINES = [f"Line {n} of the doc." for n in range(1, 21)]
LINES[2] = "Card: 80 GB − 14.96 GiB = 65 GiB."
LINES[6] = "KV per token: 2 × 32 × 32 × 128 × 2 bytes."
LINES[7] = "Per user: 4 GiB."
LINES[11] = "If a card fails we re-run tomorrow."

CRITIQUE = "\n".join([
    "slug: small-doc",
    "title: A small doc",
    "prompt: Review it.",
    "model_answer: The three issues.",
    "rubric: [Ranks the issues]",
    "roles: [engineer]",
    "lines:",
    *[f"  - \"{line}\"" for line in LINES],
    "planted:",
    "  - line: 3",
    "    category: gb-gib-mix",
    "    explanation: GB minus GiB.",
    "    corrected: >-",
    "      {{value ladder.kv_budget_gib}}",
    "  - line: 7",
    "    category: gqa-ignored",
    "    explanation: Query heads, not K/V heads.",
    "    corrected: >-",
    "      {{value kv.kv_bytes_per_token}}",
    "    carried: [8]",
    "  - line: 12",
    "    category: missing-failure-handling",
    "    explanation: No spare.",
    "    corrected: >-",
    "      {{note fleet.3 gpus_per_replica=8 spares=1}}",
    "",
])

DETAILS = {
    "lines": LINES,
    "planted": [
        {"line": 3, "category": "gb-gib-mix", "explanation": "GB minus GiB.", "corrected": "x", "carried": []},
        {"line": 7, "category": "gqa-ignored", "explanation": "Query heads.", "corrected": "y", "carried": [8]},
        {"line": 12, "category": "missing-failure-handling", "explanation": "No spare.", "corrected": "z",
         "carried": []},
    ],
}


@pytest.fixture
def tree(tmp_path) -> Path:
    return write_tree(tmp_path / "fixtures", {"critiques/small-doc.yaml": CRITIQUE})


@pytest.fixture
def real_critiques(tmp_path):
    """The repository's critique drills (with the reading list and design prompts), loaded."""
    return load_design_content(tmp_path, "the critique drills do not load")


def flags_post(flags: dict[int, str]) -> dict:
    data = {"flag": [str(line) for line in flags]}
    data.update({f"why_{line}": why for line, why in flags.items()})
    return data


# On overnight-summaries (fixtures/critiques/overnight-summaries.yaml): planted 7, 12, 13, 20, 23;
# 10 carries 7, 16 and 17 carry 13, 24 carries 23. This answer flags 7, 13, 23 (found), 10 (carried)
# and 8 (no error: a false flag) — found 3 of 5, one false flag: 3/5 − 0.1 × 1 = 0.5.
OVERNIGHT_ANSWER = {7: "Subtracts decimal GB from GiB.", 13: "The ceiling is single-stream, not per sequence.",
                    23: "No spare and no checkpoint.", 10: "Follows from line 7.", 8: "Looks too big."}


class TestLoading:
    def test_a_critique_file_loads_as_a_bank_item_with_its_lines_and_planted_errors(self, tree):
        report = load_content(tree)

        item = BankItem.objects.get(slug="small-doc")
        assert report.tallies["critiques"].created == 1
        assert item.kind == "critique" and item.topic == "Design reviews" and item.chapter is None
        assert item.source_path == "critiques/small-doc.yaml"
        assert item.details["title"] == "A small doc"
        assert item.details["lines"] == LINES
        assert [p["line"] for p in item.details["planted"]] == [3, 7, 12]
        gqa = item.details["planted"][1]
        assert gqa == {"line": 7, "category": "gqa-ignored", "label": "GQA ignored (query heads used for the cache)",
                       "erratum": "checked-gqa-ratios", "explanation": "Query heads, not K/V heads.",
                       "corrected": "{{value kv.kv_bytes_per_token}}", "carried": [8]}

    def test_a_second_load_changes_nothing_and_questions_leave_critiques_alone(self, tree):
        load_content(tree)
        write_tree(tree, {"questions/design.yaml": "- slug: q-one\n  prompt: Why?\n  model_answer: Because.\n"})

        report = load_content(tree)

        assert report.tallies["critiques"].unchanged == 1 and not report.tallies["critiques"].changed
        assert report.tallies["questions"].created == 1
        # Beside the problem templates, which load with every run (one per drill family).
        assert set(BankItem.objects.exclude(kind=BankItem.PROBLEM).values_list("slug", flat=True)) == {"small-doc",
                                                                                                      "q-one"}

    def test_a_removed_critique_file_removes_the_drill(self, tree):
        load_content(tree)
        write_tree(tree, {"critiques/other.yaml": CRITIQUE.replace("slug: small-doc", "slug: other")})
        (tree / "critiques" / "small-doc.yaml").unlink()

        report = load_content(tree)

        assert report.tallies["critiques"].removed == 1
        assert list(BankItem.objects.exclude(kind=BankItem.PROBLEM).values_list("slug", flat=True)) == ["other"]

    def test_a_bad_shortcode_in_a_correction_fails_with_its_file_and_line(self, tree):
        path = tree / "critiques" / "small-doc.yaml"
        path.write_text(CRITIQUE.replace("{{value kv.kv_bytes_per_token}}", "{{value kv.bytes_per_token}}"))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        line = CRITIQUE.splitlines().index("      {{value kv.kv_bytes_per_token}}") + 1
        assert len(caught.value.errors) == 1
        assert caught.value.errors[0].startswith(f"{path}:{line}: {{{{value kv.bytes_per_token}}}}: ")
        assert BankItem.objects.count() == 0

    def test_a_bad_shortcode_in_a_document_line_names_its_line(self, tree):
        path = tree / "critiques" / "small-doc.yaml"
        path.write_text(CRITIQUE.replace('"Line 5 of the doc."', '"Line 5 has {{value ladder.usrs}}."'))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        line = CRITIQUE.splitlines().index('  - "Line 5 of the doc."') + 1
        assert caught.value.errors[0].startswith(f"{path}:{line}: {{{{value ladder.usrs}}}}: ")

    @pytest.mark.parametrize("change, message", [
        (("category: gqa-ignored", "category: typo"), "no category 'typo'"),
        (("  - line: 12\n", "  - line: 21\n"), "'line' should be a whole number from 1 to 20, not 21"),
        (("      {{value ladder.kv_budget_gib}}", "      53.73 GiB"), "'corrected' should give the right value as "
                                                                      "an engine shortcode"),
        (("    carried: [8]", "    carried: [12]"), "line 12 is both a planted error and carried from line 7"),
        (("  - line: 12\n", "  - line: 3\n"), "line 3 already holds planted error 1"),
    ])
    def test_malformed_planted_errors_are_errors_with_the_file(self, tree, change, message):
        path = tree / "critiques" / "small-doc.yaml"
        path.write_text(CRITIQUE.replace(*change))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        assert any(message in error and error.startswith(f"{path}:") for error in caught.value.errors), \
            caught.value.errors

    def test_a_short_document_is_a_warning(self, tree):
        short = CRITIQUE.split("lines:")[0] + "lines:\n" + "\n".join(f"  - \"{line}\"" for line in LINES[:12]) + \
            "\nplanted:" + CRITIQUE.split("planted:")[1]
        write_tree(tree, {"critiques/small-doc.yaml": short})

        report = load_content(tree)

        assert any("12 lines; a critique document has 15 to 40" in warning for warning in report.warnings)

    def test_the_real_drills_load_and_each_plants_errors_of_the_register(self, real_critiques):
        items = list(BankItem.objects.filter(kind="critique"))
        assert len(items) >= 3
        categories = set()
        for item in items:
            assert 15 <= len(item.details["lines"]) <= 40, item.slug
            assert len(item.details["planted"]) >= 4, item.slug
            categories |= {p["category"] for p in item.details["planted"]}
        assert {"gb-gib-mix", "sparse-tflops", "stopped-at-weights", "gqa-ignored", "non-buyable-gpu-count",
                "cache-offset-as-hit-rate", "missing-failure-handling"} <= categories


class TestGrading:
    def test_found_missed_false_and_carried_flags_and_the_score(self):
        grade = grade_critique(DETAILS, {3: "units", 8: "too big", 10: "looks odd", 12: "no spare"})

        assert [p.line for p in grade.found] == [3, 12]
        assert [p.line for p in grade.missed] == [7]
        assert [f.line for f in grade.false_flags] == [10]
        assert [(f.line, f.carried_from) for f in grade.carried_flags] == [(8, 7)]
        assert grade.found[0].why == "units"
        # 2 found of 3 planted, one false flag: 2/3 − 0.1 = 0.5667
        assert grade.score == pytest.approx(2 / 3 - 0.1)
        assert grade.working == "2 ÷ 3 − 0.1 × 1 = 0.57"
        assert [grade.status_of(n) for n in (3, 7, 8, 10, 1)] == ["found", "missed", "carried", "false_flag", ""]

    def test_the_score_is_clamped_to_zero_and_one(self):
        nothing_right = grade_critique(DETAILS, {1: "", 2: "", 4: "", 5: ""})
        everything = grade_critique(DETAILS, {3: "", 7: "", 12: "", 8: ""})

        assert nothing_right.score == 0.0  # 0/3 − 0.4, kept at 0
        assert nothing_right.working.endswith(", kept at 0")
        assert everything.score == 1.0     # 3/3, the carried flag costs nothing
        assert FALSE_FLAG_PENALTY == 0.1

    def test_flags_from_a_form_ignore_lines_that_do_not_exist(self):
        flags = read_flags(LINES, ["3", "0", "21", "x", "7"], {"3": "  units  ", "7": "y" * 5000})

        assert list(flags) == [3, 7]
        assert flags[3] == "units" and len(flags[7]) == 2000


class TestDrillPage:
    def test_the_drill_shows_every_numbered_line_with_a_flag_and_a_reason_box(self, client, real_critiques):
        item = BankItem.objects.get(slug="overnight-summaries")

        response = client.get("/drills/critique/overnight-summaries/")

        page = response.content.decode()
        assert response.status_code == 200
        assert page.count('name="flag"') == len(item.details["lines"])
        assert page.count('name="why_') == len(item.details["lines"])
        assert "{{" not in page
        assert "0.1 for each line flagged that holds no planted error" in page

    def test_a_candidate_completes_a_drill_and_sees_the_grade(self, candidate_client, candidate, real_critiques):
        response = candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))

        attempt = CritiqueAttempt.objects.get()
        assert response.status_code == 302 and response["Location"] == attempt.get_absolute_url()
        assert (attempt.user, attempt.planted_count, attempt.found_count, attempt.false_flag_count) == (
            candidate, 5, 3, 1)
        assert attempt.score == pytest.approx(0.5)  # 3/5 − 0.1 × 1
        outcomes = dict(attempt.marks.values_list("line", "outcome"))
        assert outcomes == {7: "found", 12: "missed", 13: "found", 20: "missed", 23: "found", 8: "false_flag",
                            10: "carried"}

        text = visible(candidate_client.get(attempt.get_absolute_url()))
        assert "Your grade 50 %" in text
        assert "3 found" in text and "2 missed" in text and "1 wrongly flagged" in text
        assert "Score: 3 ÷ 5 − 0.1 × 1 = 0.50" in text

    def test_the_engines_corrected_values_and_the_planted_explanation_sit_beside_the_why(
            self, candidate_client, real_critiques):
        candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))
        attempt = CritiqueAttempt.objects.get()

        page = candidate_client.get(attempt.get_absolute_url()).content.decode()
        text = visible(candidate_client.get(attempt.get_absolute_url()))

        # Line 7: 71.68 − 14.96 − 3 = 53.73 GiB, the ladder in GiB throughout.
        assert resolve("worked", "ladder.kv_budget_gib").text == "71.68 GiB − 14.96 GiB − 1 × 3.00 GiB = 53.73 GiB"
        assert "Corrected by the engine: 71.68 GiB − 14.96 GiB − 1 × 3.00 GiB = 53.73 GiB" in text
        # Line 12 (missed): the dense bf16 peak, 989.4 TFLOP/s.
        assert "989.4 TFLOP/s dense" in text
        # Line 13: the real per-card rate at the cache-limited batch.
        assert resolve("value", "slo.tokens_per_s model=llama-3.1-8b gpus=1 context=3300").text in text
        block = page[page.index('id="planted-7"'):page.index('id="planted-12"')]
        assert "Subtracts decimal GB from GiB." in block and "the subtraction mixes them" in block
        assert 'href="/errata/#gb-gib-mix"' in block
        assert "{{" not in page

    def test_a_visitor_is_graded_but_nothing_is_stored(self, client, real_critiques):
        response = client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))

        assert response.status_code == 200
        assert "Your grade 50 %" in visible(response)
        assert "Graded but not saved" in visible(response)
        assert CritiqueAttempt.objects.count() == 0

    def test_an_htmx_post_swaps_the_drill_in_place(self, htmx_client, candidate, real_critiques):
        htmx_client.force_login(candidate)

        response = htmx_client.post("/drills/critique/overnight-summaries/", flags_post({13: "ceiling × batch"}))

        body = response.content.decode().strip()
        assert response.status_code == 200
        assert body.startswith('<div id="critique-drill">') and "<html" not in body
        assert "Score: 1 ÷ 5 = 0.20" in visible(response)
        assert CritiqueAttempt.objects.get().score == pytest.approx(0.2)

    def test_an_empty_submission_is_graded_zero(self, client, real_critiques):
        response = client.post("/drills/critique/chat-api-70b/", {})

        assert "Your grade 0 %" in visible(response)

    def test_a_decoy_line_that_is_right_counts_as_a_false_flag(self, client, real_critiques):
        # code-review-assistant line 5: Llama-2-13B is MHA (40 K/V heads), so its cache line is right.
        response = client.post("/drills/critique/code-review-assistant/", flags_post({5: "GQA ignored"}))

        text = visible(response)
        assert "1 wrongly flagged" in text and "Your grade 0 %" in text

    def test_an_all_at_once_rollout_is_its_own_planted_error(self, client, real_critiques):
        # chat-api-70b line 19 ("restarting every replica at once") is a deployment mistake in its own right, not a
        # consequence of line 18: flagged alone it is found, one of the six planted (7, 8, 10, 15, 18, 19).
        response = client.post("/drills/critique/chat-api-70b/", flags_post({19: "no canary, full outage"}))

        text = visible(response)
        assert "Score: 1 ÷ 6 = 0.17" in text
        assert "carries line 18" not in text

    def test_unknown_drills_are_404(self, client, real_critiques):
        assert client.get("/drills/critique/no-such-doc/").status_code == 404
        assert client.get("/drills/critique/design-capacity-math/").status_code == 404


class TestStoredAttempts:
    def test_the_candidate_rates_each_found_error(self, candidate_client, real_critiques):
        candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))
        attempt = CritiqueAttempt.objects.get()
        url = f"/drills/critique/overnight-summaries/attempts/{attempt.pk}/assess/"

        response = candidate_client.post(url, {"rating_7": "got", "rating_13": "partly", "rating_23": "no",
                                               "rating_12": "got", "rating_8": "got"})

        assert response.status_code == 302 and response["Location"].endswith("#assess")
        ratings = dict(attempt.marks.exclude(self_rating="").values_list("line", "self_rating"))
        assert ratings == {7: "got", 13: "partly", 23: "no"}  # missed and false-flag lines take no rating
        attempt.refresh_from_db()
        assert attempt.assessed_at is not None
        page = candidate_client.get(attempt.get_absolute_url()).content.decode()
        assert 'id="rating-13-partly" value="partly" checked' in page
        # Found 7 (got), 13 (half), 23 (no) of 5 planted → 1.5/5 − 0.1 = 0.2, below 0.3 → 1 ("again").
        assert attempt.review_rating() == 1

    def test_an_htmx_assessment_returns_the_assessment_form(self, htmx_client, candidate, real_critiques):
        htmx_client.force_login(candidate)
        htmx_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))
        attempt = CritiqueAttempt.objects.get()

        response = htmx_client.post(f"/drills/critique/overnight-summaries/attempts/{attempt.pk}/assess/",
                                    {"rating_7": "got"})

        body = response.content.decode().strip()
        assert body.startswith('<form id="assess"') and "Self-assessment saved." in body
        assert CritiqueMark.objects.get(attempt=attempt, line=7).self_rating == "got"

    def test_another_candidate_never_sees_or_rates_the_attempt(self, candidate_client, real_critiques):
        candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))
        attempt = CritiqueAttempt.objects.get()
        bob = Client()
        bob.force_login(UserFactory(username="bob"))

        assert bob.get(attempt.get_absolute_url()).status_code == 404
        assert bob.post(f"{attempt.get_absolute_url()}assess/", {"rating_7": "no"}).status_code == 404
        assert CritiqueMark.objects.get(attempt=attempt, line=7).self_rating == ""
        assert "Your last try" not in bob.get("/drills/").content.decode()

    def test_a_visitor_is_sent_to_log_in(self, client, candidate_client, real_critiques):
        candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))
        attempt = CritiqueAttempt.objects.get()

        response = Client().get(attempt.get_absolute_url())

        assert response.status_code == 302 and "/accounts/login/" in response["Location"]

    def test_the_stored_grade_survives_a_change_to_the_drill(self, candidate_client, real_critiques):
        candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))
        attempt = CritiqueAttempt.objects.get()
        item = attempt.item
        item.details = {**item.details, "planted": item.details["planted"][:1]}
        item.save()

        text = visible(candidate_client.get(attempt.get_absolute_url()))

        assert "Your grade 50 %" in text and "2 missed" in text

    def test_the_drills_page_shows_the_candidates_latest_score(self, candidate_client, real_critiques):
        candidate_client.post("/drills/critique/overnight-summaries/", flags_post(OVERNIGHT_ANSWER))

        text = visible(candidate_client.get("/drills/"))

        assert "Your last try: 50 %" in text
