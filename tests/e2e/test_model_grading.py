"""A design answer graded point by point by the user's own model, in a real browser (issue 34).

The model is the local chat-completions server of tests/llm_grading (recorded replies on 127.0.0.1). The
candidate writes a design answer on the prompt's page and on a review card; the page fills in by htmx polling
with each rubric point met / partly / not and its quote, the suggested score, two follow-up questions and the
prompt sent; accepting records the score. ``SCREENSHOTS=dir`` keeps screenshots of the pages at 390 and 1366 px.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import needs
from tests.factories import UserFactory
from tests.llm_grading.chat_server import ChatServer, Reply, completion, recorded

from .test_candidate import log_in

expect = needs.module("playwright.sync_api").expect

pytestmark = [pytest.mark.browser]

SLUG = "design-capacity-math"


@pytest.fixture
def candidate(transactional_db):
    return UserFactory(username="alice", role="candidate")


@pytest.fixture
def model_server():
    grade = Path(__file__).resolve().parents[1] / "llm_grading" / "replies" / "design_capacity_math_grade.json"
    import json

    data = json.loads(grade.read_text())
    with ChatServer() as server:
        server.replies["qwen2.5-7b-instruct"] = Reply(200, completion(data["content"]), delay_s=0.4)
        server.answer = data["answer"]
        yield server


def shoot(page, name: str, part: str = "") -> None:
    """Screenshots of the page (and of the element ``part``) at 390 and 1366 px wide, into ``$SCREENSHOTS``."""
    folder = os.environ.get("SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for width in (390, 1366):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(200)
        page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"), full_page=True)
        if part:
            page.locator(part).first.screenshot(path=str(Path(folder) / f"{name}-part-{width}.png"))
    page.set_viewport_size({"width": 1280, "height": 900})


def test_a_design_answer_is_graded_point_by_point(live_server, page, content, candidate, model_server):
    from drills.models import BankItem, Card, ReviewLog
    from drills.reviews.scheduling import add_to_deck
    from llm_grading.models import Grading

    # The settings page: base URL, model and key; the key is never shown back.
    log_in(page, live_server.url, "alice", "/grading/settings/")
    page.fill("input[name='base_url']", model_server.base_url)
    page.fill("input[name='model']", "qwen2.5-7b-instruct")
    page.fill("input[name='api_key']", "sk-browser-test-key-42")
    page.locator("form:has(input[name='base_url']) [type='submit']").click()
    expect(page.locator(".alert-success, [role='status']").first).to_contain_text("Saved")
    assert "sk-browser-test-key-42" not in page.content()
    shoot(page, "grading-settings")

    # The design prompt's page: write, send, watch it fill in.
    page.goto(f"{live_server.url}/drills/design/{SLUG}/")
    page.fill("#design-answer", model_server.answer)
    page.get_by_role("button", name="Grade my answer").click()
    section = page.locator("section.llm-grading")
    expect(section.locator(".llm-point")).to_have_count(6, timeout=15_000)
    expect(section.locator(".llm-verdict-met")).to_have_count(2)
    expect(section.locator(".llm-verdict-partly")).to_have_count(2)
    expect(section.locator(".llm-verdict-not")).to_have_count(2)
    expect(section.locator(".llm-point").nth(0)).to_contain_text("realistically 65–85 % of that")
    expect(section.locator(".llm-suggestion")).to_contain_text("Suggested score: Hard")
    expect(section.locator(".llm-follow-ups li")).to_have_count(2)
    section.locator("details.llm-prompt summary").click()
    expect(section.locator(".llm-prompt-text").nth(1)).to_contain_text("6. Costs prefill separately from decode")
    shoot(page, "design-graded", "section.llm-grading")
    section.get_by_role("button", name="Accept: Hard").click()
    expect(page.locator("body")).to_contain_text("Recorded: Hard.")
    grading = Grading.objects.get(origin=Grading.DESIGN)
    assert (grading.accepted_rating, grading.status) == (2, Grading.DONE)
    sent = model_server.requests[0]
    assert sent["headers"]["Authorization"] == "Bearer sk-browser-test-key-42"
    assert sent["body"]["response_format"]["type"] == "json_schema"

    # The same answer on a review card: the rating recorded is the one accepted.
    item = BankItem.objects.get(slug=SLUG)
    add_to_deck(candidate, [item])
    card = Card.objects.get(user=candidate, item=item)
    page.goto(f"{live_server.url}/review/card/{card.pk}/")
    page.fill("#review-card textarea[name='answer']", model_server.answer)
    page.locator(".review-answer-form [type='submit']").click()
    graded = page.locator("#review-card section.llm-grading")
    expect(graded.locator(".llm-point")).to_have_count(6, timeout=15_000)
    shoot(page, "review-card-graded", "#review-card")
    graded.get_by_role("button", name="Accept: Hard").click()
    page.wait_for_url(f"{live_server.url}/review/")
    assert ReviewLog.objects.get(user=candidate).rating == 2


def test_a_failure_keeps_the_answer_and_offers_self_scoring(live_server, page, content, candidate, model_server):
    from llm_grading.models import Endpoint

    model_server.replies["qwen2.5-7b-instruct"] = Reply(429, recorded("openai_rate_limit"))
    Endpoint.objects.create(owner=candidate, base_url=model_server.base_url, model="qwen2.5-7b-instruct")
    log_in(page, live_server.url, "alice", f"/drills/design/{SLUG}/")
    page.fill("#design-answer", model_server.answer)
    page.get_by_role("button", name="Grade my answer").click()
    alert = page.locator("section.llm-grading .alert-warning")
    expect(alert).to_contain_text("Your endpoint is rate-limiting requests (HTTP 429)", timeout=15_000)
    expect(alert).to_contain_text("Your answer is kept: score it yourself below, or try again.")
    expect(page.locator("#design-answer")).to_have_value(model_server.answer)
    shoot(page, "design-failed")
    model_server.replies["qwen2.5-7b-instruct"] = Reply(200, completion(
        recorded("vllm_completion")["choices"][0]["message"]["content"] or "not json"))
    page.get_by_role("button", name="Grade again").click()
    expect(page.locator("section.llm-grading .alert-warning")).to_contain_text(
        "did not match the grading schema", timeout=15_000)


def test_a_coach_sets_a_cohort_endpoint_and_the_member_is_told(live_server, new_context, content, candidate,
                                                               model_server):
    from coaching import services as coaching

    coach = UserFactory(username="carol", role="coach")
    cohort = coaching.create_cohort(coach, "Spring")
    coaching.accept_invitation(coaching.invite(cohort), candidate)
    coach_page = new_context().new_page()
    log_in(coach_page, live_server.url, "carol", f"/coach/cohorts/{cohort.pk}/")
    coach_page.get_by_role("link", name="Grading endpoint").click()
    coach_page.fill("input[name='base_url']", model_server.base_url)
    coach_page.fill("input[name='model']", "qwen2.5-7b-instruct")
    coach_page.locator("form:has(input[name='base_url']) [type='submit']").click()
    expect(coach_page.locator("body")).to_contain_text("Saved: members of Spring without an endpoint of their own")
    shoot(coach_page, "cohort-endpoint")

    page = new_context().new_page()
    log_in(page, live_server.url, "alice", "/grading/settings/")
    expect(page.locator(".alert-info")).to_contain_text("Your answers are now sent to the endpoint your coach carol "
                                                        "set for Spring")
    page.goto(f"{live_server.url}/drills/design/{SLUG}/")
    expect(page.locator("#your-answer")).to_contain_text("the endpoint your coach set for Spring")
    page.fill("#design-answer", model_server.answer)
    page.get_by_role("button", name="Grade my answer").click()
    section = page.locator("section.llm-grading")
    expect(section.locator(".llm-point")).to_have_count(6, timeout=15_000)
    expect(section).to_contain_text("Graded by your coach's model")
    shoot(page, "design-graded-by-coach", "section.llm-grading")


def test_the_grading_pages_pass_axe(live_server, page, content, candidate, model_server):
    """axe-core finds no serious or critical violation on the settings, a graded design answer, a failed one."""
    from tests import needs

    from .test_axe import AXE, Scanner

    needs.file(AXE, "run `npm ci` at the repository root (.ci/run does)")
    scanner = Scanner(page, live_server.url)
    log_in(page, live_server.url, "alice", "/grading/settings/")
    scanner.scan("grading settings, no endpoint")
    page.fill("input[name='base_url']", "ftp://nowhere")
    page.fill("input[name='model']", "qwen2.5-7b-instruct")
    page.locator("form:has(input[name='base_url']) [type='submit']").click()
    expect(page.locator(".invalid-feedback")).to_contain_text("expected a URL starting with https://")
    scanner.scan("grading settings, a refused base URL")
    page.fill("input[name='base_url']", model_server.base_url)
    page.locator("form:has(input[name='base_url']) [type='submit']").click()
    expect(page.locator("body")).to_contain_text("Saved")
    page.goto(f"{live_server.url}/drills/design/{SLUG}/")
    page.fill("#design-answer", model_server.answer)
    page.get_by_role("button", name="Grade my answer").click()
    expect(page.locator("section.llm-grading .llm-point")).to_have_count(6, timeout=15_000)
    page.locator("section.llm-grading details.llm-prompt summary").click()
    scanner.scan("design answer graded, prompt open")
    model_server.replies["qwen2.5-7b-instruct"] = Reply(401, {"error": "Unauthorized"})
    page.fill("#design-answer", model_server.answer + " And a spare node.")
    page.get_by_role("button", name="Grade my answer").click()
    expect(page.locator("section.llm-grading .alert-warning")).to_contain_text("HTTP 401", timeout=15_000)
    scanner.scan("design answer, grading failed")
    scanner.check()
