"""The grading pages: the endpoint settings (a write-only key), the review card graded point by point, the coach's
endpoint for a cohort (and the candidate told so), deletion with the account, the export without the key."""

from __future__ import annotations

import io
import zipfile
from html import escape

import pytest
from django.utils import timezone

from coaching import services as coaching
from drills.models import Card, ReviewLog
from drills.reviews.scheduling import add_to_deck
from home.data import delete_account, export_zip
from llm_grading.models import Endpoint, Grading
from tests.factories import UserFactory
from tests.llm_grading.conftest import KEY, PLACE

pytestmark = pytest.mark.django_db


def test_it_saves_an_endpoint_and_never_shows_the_key(candidate_client, candidate, chat_server):
    response = candidate_client.post("/grading/settings/", {"base_url": chat_server.base_url + "/", "model": "grader",
                                                            "api_key": KEY}, follow=True)
    assert "Saved: your open answers are now graded by this endpoint." in response.content.decode()
    row = Endpoint.objects.get(owner=candidate)
    assert row.base_url == chat_server.base_url and row.api_key() == KEY and KEY not in row.api_key_token
    page = candidate_client.get("/grading/settings/").content.decode()
    assert KEY not in page and row.api_key_token not in page
    assert "A key is stored (encrypted; it is never shown)" in page
    # Saving again with the key left blank keeps it; "remove the stored key" removes it.
    candidate_client.post("/grading/settings/", {"base_url": chat_server.base_url, "model": "other"})
    row.refresh_from_db()
    assert (row.model, row.api_key()) == ("other", KEY)
    candidate_client.post("/grading/settings/", {"base_url": chat_server.base_url, "model": "other",
                                                 "forget_key": "on"})
    row.refresh_from_db()
    assert row.api_key_token == ""


def test_a_bad_base_url_is_one_sentence_and_keeps_what_was_typed(candidate_client):
    response = candidate_client.post("/grading/settings/", {"base_url": "api.example.com/v1", "model": "m"})
    page = response.content.decode()
    assert response.status_code == 200
    assert "Read &#x27;api.example.com/v1&#x27;: expected a URL starting with https://" in page
    assert 'value="api.example.com/v1"' in page and not Endpoint.objects.exists()


def _reveal(client, card, answer, htmx=False):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/review/card/{card.pk}/reveal/", {"version": card.version, "answer": answer},
                       headers=headers)


def test_a_review_card_is_graded_and_the_rating_follows_what_is_accepted(candidate_client, candidate, design_item,
                                                                         endpoint, chat_server, recorded_grade):
    add_to_deck(candidate, [design_item], now=timezone.now())
    card = Card.objects.get(user=candidate, item=design_item)
    page = _reveal(candidate_client, card, recorded_grade["answer"], htmx=True).content.decode()
    grading = Grading.objects.get(user=candidate, origin=Grading.REVIEW, origin_id=card.pk)
    assert "Sent for grading" in page and f'hx-get="/grading/{grading.pk}/?mode=review"' in page
    assert chat_server.requests == []  # the reveal answers at once; the poll grades
    fragment = candidate_client.get(f"/grading/{grading.pk}/?mode=review", headers={"HX-Request": "true"})
    text = fragment.content.decode()
    assert text.count('class="badge llm-verdict llm-verdict-met"') == 2
    assert text.count("llm-verdict-partly") == 2 and text.count('llm-verdict-not"') == 2
    assert "Suggested score: <strong>Hard</strong>" in text
    assert 'name="rating" value="2"' in text and "Accept: Hard" in text
    assert "How many nodes does the prefill of 1,000 prompts a second keep busy, apart from decode?" in text
    assert "The prompt sent to your model" in text and "CANDIDATE&#x27;S ANSWER" in text
    # Accepting the suggestion records the review with it.
    candidate_client.post(f"/review/card/{card.pk}/rate/", {"version": card.version, "answer": recorded_grade["answer"],
                                                             "rating": "2", "grading": grading.pk})
    log = ReviewLog.objects.get(user=candidate)
    grading.refresh_from_db()
    assert (log.rating, grading.accepted_rating, grading.accepted) == (2, 2, True)


def test_a_review_card_rated_otherwise_records_the_change(candidate_client, candidate, design_item, endpoint,
                                                          recorded_grade):
    add_to_deck(candidate, [design_item], now=timezone.now())
    card = Card.objects.get(user=candidate, item=design_item)
    _reveal(candidate_client, card, recorded_grade["answer"])
    grading = Grading.objects.get(user=candidate)
    candidate_client.get(f"/grading/{grading.pk}/")
    candidate_client.post(f"/review/card/{card.pk}/rate/", {"version": card.version, "answer": recorded_grade["answer"],
                                                             "rating": "3", "grading": grading.pk})
    grading.refresh_from_db()
    assert (ReviewLog.objects.get(user=candidate).rating, grading.accepted_rating, grading.accepted) == (3, 3, False)


def test_without_an_endpoint_the_review_card_is_as_before(candidate_client, candidate, design_item):
    add_to_deck(candidate, [design_item], now=timezone.now())
    card = Card.objects.get(user=candidate, item=design_item)
    page = _reveal(candidate_client, card, "Some answer.").content.decode()
    assert "Rubric: tick the points you covered" in page and "llm-grading" not in page
    assert not Grading.objects.exists()


def test_the_review_page_says_where_an_answer_goes_only_with_an_endpoint(candidate_client, candidate, design_item,
                                                                         chat_server):
    # The review page asks with the due card whether an endpoint grades the answer (an EXISTS), and reads it then.
    add_to_deck(candidate, [design_item], now=timezone.now())
    assert "llm-sent-to" not in candidate_client.get("/review/").content.decode()
    Endpoint.objects.create(owner=candidate, base_url=chat_server.base_url, model="grader")
    page = candidate_client.get("/review/").content.decode()
    assert (f"Revealing sends your written answer, with the rubric, to grader at {chat_server.base_url}, "
            "to be graded.") in page


def test_a_failure_keeps_the_answer_and_offers_self_scoring(candidate_client, candidate, design_item, endpoint,
                                                            chat_server, recorded_grade):
    from tests.llm_grading.chat_server import Reply

    chat_server.replies["grader"] = Reply(429, {"error": {"message": "Slow down."}})
    add_to_deck(candidate, [design_item], now=timezone.now())
    card = Card.objects.get(user=candidate, item=design_item)
    _reveal(candidate_client, card, recorded_grade["answer"])
    grading = Grading.objects.get(user=candidate)
    text = candidate_client.get(f"/grading/{grading.pk}/?mode=review", headers={"HX-Request": "true"}).content.decode()
    assert ("Your endpoint is rate-limiting requests (HTTP 429): try again in a minute (it said: Slow down). Your "
            "answer is kept: score it yourself below, or try again.") in text
    assert "Grade again" in text
    chat_server.replies.pop("grader")
    retried = candidate_client.post(f"/grading/{grading.pk}/retry/", {"mode": "review"},
                                    headers={"HX-Request": "true"})
    assert retried.status_code == 200 and Grading.objects.filter(user=candidate).count() == 2


def test_a_coach_endpoint_grades_members_who_are_told(coach_client, coach, candidate, candidate_client, design_item,
                                                      chat_server, recorded_grade):
    cohort = coaching.create_cohort(coach, "Spring")
    coaching.accept_invitation(coaching.invite(cohort), candidate)
    response = coach_client.post(f"/coach/cohorts/{cohort.pk}/grading/", {"base_url": chat_server.base_url,
                                                                    "model": "grader", "api_key": KEY})
    assert response.status_code == 302
    settings_page = candidate_client.get("/grading/settings/").content.decode()
    assert "Your answers are now sent to the endpoint your coach carol set for" in settings_page
    assert KEY not in settings_page
    add_to_deck(candidate, [design_item], now=timezone.now())
    card = Card.objects.get(user=candidate, item=design_item)
    before = candidate_client.get(f"/review/card/{card.pk}/").content.decode()
    assert (f"Revealing sends your written answer, with the rubric, to grader at {chat_server.base_url}, the endpoint "
            "your coach set for Spring, to be graded.") in before
    _reveal(candidate_client, card, recorded_grade["answer"])
    grading = Grading.objects.get(user=candidate)
    text = candidate_client.get(f"/grading/{grading.pk}/?mode=review", headers={"HX-Request": "true"}).content.decode()
    assert "Graded by your coach's model" in text
    assert "the endpoint your coach set for Spring: your answer was sent to it" in text
    assert chat_server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"


def test_another_coach_cannot_see_a_cohort_endpoint(client, coach, design_item):
    cohort = coaching.create_cohort(coach, "Spring")
    client.force_login(UserFactory(username="dave", role="coach"))
    assert client.get(f"/coach/cohorts/{cohort.pk}/grading/").status_code == 404


def test_the_endpoint_goes_with_the_account_and_the_key_is_not_exported(candidate, endpoint, design_item,
                                                                        recorded_grade):
    from llm_grading import services

    services.run_here(services.request(candidate, design_item, recorded_grade["answer"], Grading.DESIGN,
                                       design_item.pk, **PLACE))
    archive = zipfile.ZipFile(io.BytesIO(export_zip(candidate)))
    everything = b"".join(archive.read(name) for name in archive.namelist())
    assert endpoint.base_url.encode() in everything and recorded_grade["answer"].encode() in everything
    assert KEY.encode() not in everything and endpoint.api_key_token.encode() not in everything
    delete_account(candidate)
    assert not Endpoint.objects.exists() and not Grading.objects.exists()


def test_a_coach_endpoint_goes_with_the_coach_not_with_the_cohort(coach, candidate, chat_server):
    """A cohort handed to another coach keeps its members, not the first coach's key."""
    dave = UserFactory(username="dave", role="coach")
    cohort = coaching.create_cohort(coach, "Spring")
    Endpoint.objects.create(owner=coach, cohort=cohort, base_url=chat_server.base_url, model="grader")
    delete_account(coach, successor=dave)
    cohort.refresh_from_db()
    assert cohort.coach == dave and not Endpoint.objects.exists()


def test_a_design_answer_on_its_page_is_graded(candidate_client, candidate, design_item, endpoint, recorded_grade):
    page = candidate_client.get(f"/drills/design/{design_item.slug}/").content.decode()
    assert "Your answer, graded by your model" in page and "Sent with the rubric to grader at http://127.0.0.1" in page
    response = candidate_client.post(f"/drills/design/{design_item.slug}/answer/", {"answer": recorded_grade["answer"]})
    assert response["Location"] == f"/drills/design/{design_item.slug}/#your-answer"
    grading = Grading.objects.get(user=candidate, origin=Grading.DESIGN, origin_id=design_item.pk)
    page = candidate_client.get(response["Location"]).content.decode()
    assert "Sent for grading against 6 rubric points" in page
    assert escape(recorded_grade["answer"]) in page  # kept in the box
    text = candidate_client.get(f"/grading/{grading.pk}/?mode=standalone", headers={"HX-Request": "true"})
    assert "Accept: Hard" in text.content.decode()
    candidate_client.post(f"/grading/{grading.pk}/accept/", {"rating": "2"})
    grading.refresh_from_db()
    assert grading.accepted_rating == 2 and grading.accepted
    # The system message carries the review scale's own rule.
    assert "under 50% of the points → Again, under 80% → Hard" in grading.messages[0]["content"]


def test_without_an_endpoint_the_design_page_only_points_to_the_settings(candidate_client, design_item):
    page = candidate_client.get(f"/drills/design/{design_item.slug}/").content.decode()
    assert "your-answer" not in page and "set an endpoint" in page
    response = candidate_client.post(f"/drills/design/{design_item.slug}/answer/", {"answer": "An answer."})
    assert response["Location"] == "/grading/settings/" and not Grading.objects.exists()
