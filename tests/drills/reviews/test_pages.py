"""The bank, review, settings and progress pages: without JavaScript, with htmx, and only one's own data."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts.models import TimeZonePreference
from drills.followups.services import chain
from drills.models import Attempt, BankItem, Card, ReviewLog, ReviewSettings
from drills.reviews.scheduling import EASY, GOOD, RATING_RULE, add_to_deck, calendar_today, local_today
from drills.reviews.services import drawn_problem, problem_for, record_open_review
from tests.factories import BankItemFactory


def hidden(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def due_card(user, item) -> Card:
    add_to_deck(user, [item])
    return Card.objects.get(user=user, item=item)


class TestBank:
    def test_it_lists_every_published_item_for_anyone(self, client, bank):
        BankItem.objects.filter(slug="kv-fp8").update(published=False)
        response = client.get("/bank/")
        html = response.content.decode()
        assert response.status_code == 200
        assert f"<strong>{BankItem.objects.published().count()}</strong> items" in html
        assert "Explain kv-formula." in html and "Explain kv-fp8." not in html
        assert "Capacity ladder — a fresh problem each time" in html
        assert "Log in to build a deck" in html

    @pytest.mark.parametrize("query, expected", [
        ("kind=problem&chapter=06-kv-cache", {"ladder", "kv"}),
        ("chapter=06-kv-cache&kind=open", {"kv-formula", "kv-paged", "kv-fp8"}),
        ("track=B&kind=open&difficulty=3", {"kv-paged"}),
        ("topic=Roofline+and+hardware", {"ridge", "roofline"}),  # the question and the roofline template
        ("role=manager&kind=open", {"kv-paged"}),
        ("q=kv-paged", {"kv-paged"}),
        ("chapter=no-such-chapter&kind=open&topic=Roofline+and+hardware", {"ridge"}),  # an unknown choice is ignored
    ])
    def test_filters_work_as_a_plain_get_form(self, client, bank, query, expected):
        html = client.get(f"/bank/?{query}").content.decode()
        shown = set(re.findall(r'href="/bank/([\w-]+)/"', html))
        assert shown == expected

    def test_htmx_swaps_only_the_results(self, client, bank):
        response = client.get("/bank/?kind=problem", headers={"HX-Request": "true", "HX-Target": "bank-results"})
        html = response.content.decode()
        assert html.lstrip().startswith('<div id="bank-results"')
        assert "<html" not in html and "Capacity ladder" in html

    def test_an_item_page_shows_the_model_answer_behind_a_reveal(self, client, bank):
        html = client.get("/bank/kv-paged/").content.decode()
        assert "<details" in html and "The model answer of kv-paged" in html and "Which to quote" in html

    def test_a_template_page_names_its_family_and_time_box(self, client, bank):
        html = client.get("/bank/ladder/").content.decode()
        assert "Reviewing this card draws a fresh capacity ladder problem" in html
        assert "Time box: 6 min" in html
        assert 'action="/drills/ladder/new/"' in html

    def test_adding_one_item_without_js_redirects_back(self, candidate_client, candidate, bank):
        response = candidate_client.post("/bank/deck/add/", {"item": "kv-paged", "next": "/bank/kv-paged/"})
        assert response.status_code == 302 and response["Location"] == "/bank/kv-paged/"
        assert Card.objects.get(user=candidate).item.slug == "kv-paged"
        html = candidate_client.get("/bank/kv-paged/").content.decode()
        assert "Review it now" in html and "In your deck" in html

    def test_adding_with_htmx_swaps_the_button(self, client, candidate, bank):
        client.force_login(candidate)
        response = client.post("/bank/deck/add/", {"item": "ridge"}, headers={"HX-Request": "true"})
        html = response.content.decode()
        assert html.lstrip().startswith("<form") and "In your deck" in html

    def test_adding_a_chapter_a_track_and_a_search(self, candidate_client, candidate, bank):
        candidate_client.post("/bank/deck/add/", {"chapter": "04-gpu-roofline"})
        assert set(Card.objects.filter(user=candidate).values_list("added_via", flat=True)) == {Card.VIA_CHAPTER}
        candidate_client.post("/bank/deck/add/", {"chapter": "06-kv-cache", "via": "finished"})
        assert Card.objects.get(user=candidate, item__slug="kv-fp8").added_via == Card.VIA_FINISHED
        candidate_client.post("/bank/deck/add/", {"track": "B"})
        candidate_client.post("/bank/deck/add/", {"filtered": "1", "kind": "problem", "topic": "Capacity planning"})
        assert Card.objects.get(user=candidate, item__slug="fleet").added_via == Card.VIA_FILTER

    def test_the_deck_needs_a_login(self, client, bank):
        response = client.post("/bank/deck/add/", {"item": "ridge"})
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        assert not Card.objects.exists()

    def test_taking_an_item_out(self, candidate_client, candidate, bank):
        due_card(candidate, bank["ridge"])
        candidate_client.post("/bank/deck/remove/", {"item": "ridge"})
        assert Card.objects.get(user=candidate).suspended


class TestReviewOpenQuestion:
    def test_the_whole_review_works_without_javascript(self, candidate_client, candidate, bank):
        card = due_card(candidate, bank["kv-paged"])
        html = candidate_client.get("/review/").content.decode()
        assert "1</strong> card due now (none relearning)" in html
        assert f'action="/review/card/{card.pk}/reveal/"' in html and 'method="post"' in html
        assert "The model answer of kv-paged" not in html  # not before answering

        refused = candidate_client.post(f"/review/card/{card.pk}/reveal/", {
            "version": hidden(html, "version"), "started": hidden(html, "started"), "answer": " "})
        assert "Write your answer, or tick" in refused.content.decode()

        revealed = candidate_client.post(f"/review/card/{card.pk}/reveal/", {
            "version": hidden(html, "version"), "started": hidden(html, "started"), "answer": "53 and 191."})
        page = revealed.content.decode()
        assert "The model answer of kv-paged" in page and "Rubric: tick the points you covered" in page
        assert "53 and 191." in page and f'action="/review/card/{card.pk}/rate/"' in page
        assert 'name="rating" value="auto"' in page

        rated = candidate_client.post(f"/review/card/{card.pk}/rate/", {
            "version": hidden(page, "version"), "started": hidden(page, "started"), "answer": "53 and 191.",
            "ticked": ["0", "1"], "rating": "auto"})
        assert rated.status_code == 302 and rated["Location"] == "/review/"
        log = ReviewLog.objects.get()
        # Two of three points: 67 % → Hard suggested and taken.
        assert (log.rating, log.suggested_rating, log.rubric_ticked, log.answer) == (2, 2, [0, 1], "53 and 191.")
        assert log.grade == pytest.approx(2 / 3)
        follow = candidate_client.get("/review/").content.decode()
        assert "Recorded: Hard." in follow
        # The next due time as the result page words it ("Next due Fri 4 Dec 2026, 14:05."), in the candidate's zone.
        due = timezone.localtime(log.due_after, ReviewSettings.for_user(candidate).tz)
        assert f"Next due {due:%a} {due.day} {due:%b %Y, %H:%M}." in follow

    def test_said_aloud_is_enough_and_is_recorded(self, candidate_client, candidate, bank):
        card = due_card(candidate, bank["ridge"])
        html = candidate_client.get("/review/").content.decode()
        data = {"version": hidden(html, "version"), "started": hidden(html, "started"), "said_aloud": "on"}
        assert "The model answer of ridge" in candidate_client.post(
            f"/review/card/{card.pk}/reveal/", data).content.decode()
        candidate_client.post(f"/review/card/{card.pk}/rate/", {**data, "rating": "3"})
        log = ReviewLog.objects.get()
        assert log.said_aloud and log.answer == "" and log.rating == GOOD

    def test_a_double_post_records_one_review(self, candidate_client, candidate, bank):
        card = due_card(candidate, bank["ridge"])
        data = {"version": "0", "answer": "x", "rating": "3"}
        first = candidate_client.post(f"/review/card/{card.pk}/rate/", data)
        second = candidate_client.post(f"/review/card/{card.pk}/rate/", {**data, "rating": "4"})
        assert first.status_code == second.status_code == 302
        assert ReviewLog.objects.count() == 1 and ReviewLog.objects.get().rating == GOOD
        assert "Already recorded" in candidate_client.get("/review/").content.decode()

    def test_htmx_reveal_swaps_the_card_and_ticks_update_the_suggestion(self, client, candidate, bank):
        client.force_login(candidate)
        card = due_card(candidate, bank["kv-formula"])
        html = client.get("/review/").content.decode()
        response = client.post(f"/review/card/{card.pk}/reveal/", {
            "version": hidden(html, "version"), "started": hidden(html, "started"), "answer": "2 × layers …"},
            headers={"HX-Request": "true", "HX-Target": "review-card"})
        fragment = response.content.decode()
        assert fragment.lstrip().startswith('<article class="card shadow-sm review-card" id="review-card"')
        assert 'hx-post="/review/card/%d/suggest/"' % card.pk in fragment

        suggestion = client.post(f"/review/card/{card.pk}/suggest/", {"ticked": ["0", "1", "2"]},
                                 headers={"HX-Request": "true"}).content.decode()
        assert suggestion.lstrip().startswith('<div id="ratings"')
        assert "<strong>Hard</strong> (3 of 4 points)" in suggestion  # 75 % is under 80 %
        assert "is-suggested" in suggestion and "rating-hard is-suggested" in suggestion

    def test_htmx_reveal_reads_the_settings_with_the_card_and_stores_none_when_missing(self, client, candidate,
                                                                                      bank):
        from drills.reviews.views import rating_buttons

        client.force_login(candidate)
        card = due_card(candidate, bank["kv-formula"])
        ReviewSettings.objects.filter(user=candidate).delete()
        data = {"version": str(card.version), "started": "", "answer": "2 × layers …"}
        first = client.post(f"/review/card/{card.pk}/reveal/", data, headers={"HX-Request": "true"})
        # Revealing records nothing: the defaults serve, and no settings row is written (issue 30).
        assert first.status_code == 200 and not ReviewSettings.objects.filter(user=candidate).exists()
        settings = ReviewSettings.stored_for(candidate)
        settings.desired_retention = 0.97
        settings.save()
        fragment = client.post(f"/review/card/{card.pk}/reveal/", data, headers={"HX-Request": "true"}).content
        for _, label, interval in rating_buttons(card, settings, timezone.now()):
            assert f"{label}<span class=\"rating-interval\"><span class=\"visually-hidden\">, next review in " \
                   f"</span>{interval}</span>" in fragment.decode()
        # Before the answer is revealed, nothing needs the settings: a missing row is not created.
        ReviewSettings.objects.filter(user=candidate).delete()
        blank = client.post(f"/review/card/{card.pk}/reveal/", {**data, "answer": ""}, headers={"HX-Request": "true"})
        assert blank.status_code == 200 and not ReviewSettings.objects.filter(user=candidate).exists()

    def test_nothing_due(self, candidate_client, candidate, bank):
        html = candidate_client.get("/review/").content.decode()
        assert "Your deck is empty" in html
        due_card(candidate, bank["ridge"])
        Card.objects.update(due=timezone.now() + timedelta(days=3))
        html = candidate_client.get("/review/").content.decode()
        assert "Nothing more is due today" in html and "Nothing left for today" in html


class TestReviewProblemTemplate:
    def test_a_variant_is_graded_and_rated_by_the_rule_stated_on_the_page(self, candidate_client, candidate, bank, h):
        card = due_card(candidate, bank["ladder"])
        html = candidate_client.get("/review/").content.decode()
        assert RATING_RULE.replace("→", "&rarr;") in html or RATING_RULE in html
        assert f'action="/review/card/{card.pk}/answer/"' in html and "Grade and record" in html
        card.refresh_from_db()
        problem = drawn_problem(card)
        assert f"seed {problem.seed}" in html
        answers = h.answers(problem)
        answers["weights_gib"] = "1"  # one slip: 7 of 8 steps
        links = chain(problem)  # the chain is the card (issue 33): its follow-ups answered right
        replies = {}
        for position, link in enumerate(links):
            replies[f"fu{position}-marked"] = list(link.moves)
            replies.update({f"fu{position}-value-{key}": repr(link.result.values[key]) for key in link.moves})
        response = candidate_client.post(f"/review/card/{card.pk}/answer/", {
            "version": hidden(html, "version"), "started": hidden(html, "started"), **answers, **replies})
        log = ReviewLog.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/review/result/{log.pk}/"
        # The problem scores 7/8; the card's grade is the mean of it and each link's 1.0: with three links
        # (7/8 + 3) ÷ 4 = 0.96875, at least 0.95 within the time box: Easy by the rule.
        assert log.attempt.score == pytest.approx(7 / 8) and len(links) == 3
        assert log.grade == pytest.approx(0.96875) and log.rating == EASY
        assert (log.problem.seed, log.problem.inputs) == (problem.seed, problem.inputs)  # the variant shown, stored

        result = candidate_client.get(response["Location"]).content.decode()
        assert "97 %" in result and "rated" in result and "Easy" in result  # the card's grade, then the problem's
        assert "The problem 88 % and its 3 follow-ups weigh the same in that score." in result
        assert re.findall(r'<tr class="verdict-(\w+)">', result) == ["correct"] * 2 + ["wrong"] + ["correct"] * 5
        assert RATING_RULE in result or RATING_RULE.replace("→", "&rarr;") in result

        again = candidate_client.post(f"/review/card/{card.pk}/answer/", {"version": "0", **answers})
        assert again["Location"] == response["Location"]
        assert Attempt.objects.count() == 1

    def test_refreshing_shows_the_same_variant(self, candidate_client, candidate, bank):
        due_card(candidate, bank["kv"])
        first = candidate_client.get("/review/").content.decode()
        second = candidate_client.get("/review/").content.decode()
        seed = re.search(r"seed (\d+)", first).group(1)
        assert f"seed {seed}" in second


class TestPermissions:
    def test_a_candidate_never_reaches_another_candidates_cards_or_history(self, client, candidate, bob, bank):
        card = due_card(candidate, bank["ridge"])
        log = record_open_review(candidate, card.pk, 0, GOOD).log
        ladder = due_card(candidate, bank["ladder"])
        problem_for(ladder)
        client.force_login(bob)

        assert client.get(f"/review/card/{card.pk}/").status_code == 404
        assert client.post(f"/review/card/{card.pk}/reveal/", {"version": "1", "answer": "x"}).status_code == 404
        assert client.post(f"/review/card/{card.pk}/rate/", {"version": "1", "rating": "3"}).status_code == 404
        assert client.post(f"/review/card/{ladder.pk}/answer/", {"version": "0"}).status_code == 404
        assert client.get(f"/review/result/{log.pk}/").status_code == 404
        assert ReviewLog.objects.count() == 1

        assert "Your deck is empty" in client.get("/review/").content.decode()
        assert "ridge" not in client.get("/review/export/deck.csv").content.decode()
        assert "ridge" not in client.get("/review/export/history.csv").content.decode()
        assert 'id="stat-reviews">0<' in client.get("/progress/").content.decode()
        assert "Not in your deck yet" in client.get("/bank/ridge/").content.decode()

    @pytest.mark.parametrize("url", ["/review/", "/progress/", "/review/settings/", "/review/export/deck.csv",
                                     "/review/export/history.csv"])
    def test_personal_pages_need_a_login(self, client, url):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


class TestSettingsAndProgress:
    def test_settings_are_a_plain_form_that_keeps_what_was_typed(self, candidate_client, candidate, db):
        html = candidate_client.get("/review/settings/").content.decode()
        assert 'type="date"' in html and 'value="Europe/Paris"' in html
        day = timezone.now().date() + timedelta(days=60)  # a past interview date is refused (test_interview_date)
        typed = f"{day:%Y-%m-%d}"
        bad = candidate_client.post("/review/settings/", {"interview_date": typed, "time_zone": "Mars/Base",
                                                          "desired_retention": "0.9"})
        page = bad.content.decode()
        assert bad.status_code == 200 and "is not a time zone name" in page and f'value="{typed}"' in page
        good = candidate_client.post("/review/settings/", {"interview_date": typed, "time_zone": "Asia/Tokyo",
                                                           "digest": "on", "desired_retention": "0.92"})
        assert good.status_code == 302
        row = ReviewSettings.objects.get(user=candidate)
        assert (row.interview_date, row.digest, row.desired_retention) == (day, True, 0.92)
        assert TimeZonePreference.objects.get(user=candidate).time_zone == "Asia/Tokyo"

    def test_a_retention_out_of_range_is_refused(self, candidate_client, candidate, db):
        page = candidate_client.post("/review/settings/", {"time_zone": "UTC", "desired_retention": "0.99"})
        assert "between 0.70 and 0.97" in page.content.decode()

    def test_the_progress_page_has_a_table_beside_every_chart_and_its_data(self, candidate_client, candidate, bank):
        card = due_card(candidate, bank["ridge"])
        record_open_review(candidate, card.pk, 0, GOOD, ticked=[0])
        html = candidate_client.get("/progress/").content.decode()
        charts = re.findall(r'data-chart="(\w+)"', html)
        assert charts == ["recall", "reviews", "forecast", "chapters", "steps", "misconceptions"]
        for name in charts:
            assert f'id="table-{name}"' in html
        assert '<script id="progress-data" type="application/json">' in html
        assert "/static/vendor/chartjs/chart.umd.min.js" in html and "cdn" not in html.lower()
        assert "04 · The GPU and the roofline" in html and "50 %" in html

    def test_the_interview_chart_appears_with_a_date(self, candidate_client, candidate, bank):
        # Ten calendar days from today (the review day turns at 04:00; an interview date is counted from midnight).
        today = calendar_today(ZoneInfo("UTC"), timezone.now())
        ReviewSettings.objects.create(user=candidate, interview_date=today + timedelta(days=10))
        due_card(candidate, bank["ridge"])
        html = candidate_client.get("/progress/").content.decode()
        assert 'data-chart="retention"' in html and 'id="table-retention"' in html
        review = candidate_client.get("/review/").content.decode()
        assert "10 days</strong> to go" in review and "Expected recall on the day" in review


def test_the_nav_links_to_the_bank_and_reviews(candidate_client, db):
    html = candidate_client.get(reverse("home")).content.decode()
    assert 'href="/bank/"' in html and 'href="/review/"' in html and 'href="/progress/"' in html


def test_a_chapter_page_offers_its_questions_for_the_deck_once_finished(client, candidate, bank):
    assert 'value="finished"' not in client.get("/runbook/06-kv-cache/").content.decode()  # anonymous
    client.force_login(candidate)
    html = client.get("/runbook/06-kv-cache/").content.decode()
    assert 'action="/bank/deck/add/"' in html and 'name="chapter" value="06-kv-cache"' in html
    response = client.post("/bank/deck/add/", {"chapter": "06-kv-cache", "via": "finished",
                                               "next": "/runbook/06-kv-cache/#questions"})
    assert response["Location"] == "/runbook/06-kv-cache/#questions"
    assert set(Card.objects.filter(user=candidate).values_list("added_via", flat=True)) == {Card.VIA_FINISHED}


def test_critique_drills_and_design_prompts_review_like_open_questions_with_their_details(candidate_client,
                                                                                         candidate, bank, h):
    critique = BankItemFactory(slug="doc-critique", rubric=["Finds line 2"], kind=BankItem.CRITIQUE,
                               prompt="Mark the lines.",
                               details={"title": "A plan", "lines": ["Card: 80 GB.", "Users: 60."],
                                        "planted": [{"line": 2, "label": "Utilisation skipped",
                                                     "explanation": "No 0.9.", "corrected": "53"}]})
    design = BankItemFactory(slug="design-one", rubric=["Runs the ladder"], kind=BankItem.DESIGN, prompt="Design it.",
                             details={"numbers": "53 users.", "levels": {"mid": ["Weights"], "senior": ["Ladder"],
                                                                          "staff": ["Cost"]},
                                      "follow_ups": [{"ask": "Why fp8?", "listen_for": "Halves the cache."}]})
    for item, before, after in ((critique, ["Card: 80 GB.", "Users: 60."], ["Line 2: Utilisation skipped."]),
                                (design, [], ["What each level says", "Why fp8?", "Halves the cache."])):
        card = due_card(candidate, item)
        html = candidate_client.get(f"/review/card/{card.pk}/").content.decode()
        assert all(text in html for text in before)
        revealed = candidate_client.post(f"/review/card/{card.pk}/reveal/", {
            "version": "0", "started": hidden(html, "started"), "said_aloud": "on"}).content.decode()
        assert all(text in revealed for text in after), after


def test_the_interview_countdown_counts_calendar_days_not_review_days(candidate_client, candidate, bank):
    """At 00:40 on the interview's day the review day is still yesterday (it turns at 04:00): the page says today."""
    from datetime import datetime

    from drills.reviews.forms import ReviewSettingsForm
    from drills.reviews.scheduling import days_to_interview

    settings_row = ReviewSettings.objects.create(user=candidate, interview_date=datetime(2026, 12, 4).date())
    just_after_midnight = datetime(2026, 12, 4, 0, 40, tzinfo=ZoneInfo("UTC"))
    assert local_today(ZoneInfo("UTC"), just_after_midnight) == datetime(2026, 12, 3).date()
    assert days_to_interview(settings_row, just_after_midnight) == 0
    assert days_to_interview(settings_row, datetime(2026, 12, 3, 23, 0, tzinfo=ZoneInfo("UTC"))) == 1
    assert days_to_interview(settings_row, datetime(2026, 12, 5, 0, 40, tzinfo=ZoneInfo("UTC"))) is None
    # A day before today's calendar date is refused by the settings form, whatever the hour.
    yesterday = calendar_today(ZoneInfo("UTC")) - timedelta(days=1)
    form = ReviewSettingsForm({"interview_date": yesterday.isoformat(), "time_zone": "UTC", "desired_retention": "0.9"},
                              instance=settings_row)
    assert not form.is_valid() and "interview_date" in form.errors
    # A date next year shows its year on the review page.
    settings_row.interview_date = calendar_today(ZoneInfo("UTC")) + timedelta(days=400)
    settings_row.save()
    due_card(candidate, bank["ridge"])
    page = candidate_client.get("/review/").content.decode()
    assert f"{settings_row.interview_date.day} {settings_row.interview_date:%b %Y})" in page
