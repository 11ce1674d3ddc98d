"""The signed-in home page (issue 20): the candidate's day, from their own data, and the first-run steps."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from datetime import timezone as dt_timezone

import pytest
from django.utils import timezone

from accounts.models import TimeZonePreference
from calculators.engine.mistakes import MISCONCEPTIONS
from coaching import services as coaching
from coaching.models import QuestionSet
from drills.models import Attempt, Card, ProblemInstance, ReviewSettings, StepAnswer
from drills.problems.generation import create_problem
from drills.reviews.scheduling import add_to_deck
from home.overview import home_for
from runbook.models import Chapter, Document, ReadingPath
from tests.factories import BankItemFactory, ChapterFactory, CohortFactory

pytestmark = pytest.mark.django_db


def chapter(number: int, slug: str) -> Chapter:
    found = ChapterFactory(number=number, slug=slug, title=slug.split("-", 1)[1].title(), reading_minutes=12)
    Document.objects.create(number=number, slug=slug, title=found.title, chapter=found)
    return found


@pytest.fixture
def world(candidate, coach):
    """Chapters 05 and 06 on the cram path (06 first), one open question in each."""
    fifth, sixth = chapter(5, "05-prefill-and-decode"), chapter(6, "06-kv-cache")
    ReadingPath.objects.create(slug="cram", title="The cram path", description="Fast.", document_numbers=[6, 5])
    questions = {}
    for found in (fifth, sixth):
        questions[found.number] = BankItemFactory(slug=f"q-{found.number}", prompt="Why?", model_answer="Because.",
                                                  rubric=["A"], chapter=found, roles=[])
    return {"chapters": (fifth, sixth), "questions": questions}


def misconception_step(user, family: str, ident: str, position: int) -> None:
    problem = create_problem(family, seed=position, user=user)
    attempt = Attempt.objects.create(problem=problem, user=user, score=0.5)
    StepAnswer.objects.create(attempt=attempt, position=1, key="kv_bytes_per_token", unit="B", raw_input="1",
                              parsed_value=1, verdict="misconception", credit=0, misconception=ident, expected=2)


def test_a_new_candidate_sees_the_three_first_run_steps(candidate_client, world):
    page = candidate_client.get("/").content.decode()

    assert "Three steps to start" in page
    assert 'name="time_zone" id="first-run-zone"' in page
    assert 'name="path" value="cram"' in page and "The cram path · 2 chapters" in page
    assert "Pick a path first" in page
    assert "Size the cluster before they ask" not in page  # not the visitors' landing page


def test_each_path_says_what_it_is_for_so_two_of_sixteen_chapters_differ(candidate_client, world):
    ReadingPath.objects.create(slug="one-week", title="The one-week path", position=1,
                               description="Days one to five take a track each.", document_numbers=[5, 6])
    ReadingPath.objects.create(slug="full", title="The full path", position=2,
                               description="The week, then *hardware*.", document_numbers=[5, 6])

    page = candidate_client.get("/").content.decode()

    assert 'aria-describedby="path-about-one-week">The one-week path · 2 chapters</button>' in page
    assert '<p class="small text-body-secondary mb-0 mt-1" id="path-about-one-week">Days one to five' in page
    assert 'id="path-about-full">The week, then <em>hardware</em>.</p>' in page


def test_the_first_run_steps_set_the_zone_and_path_then_offer_the_first_chapter(candidate_client, candidate, world):
    candidate_client.post("/accounts/start/", {"time_zone": "Europe/Paris"})
    candidate_client.post("/accounts/start/", {"path": "cram"})
    row = ReviewSettings.objects.get(user=candidate)
    assert (TimeZonePreference.objects.get(user=candidate).time_zone, row.reading_path) == ("Europe/Paris", "cram")

    page = candidate_client.get("/").content.decode()
    assert 'name="chapter" value="06-kv-cache"' in page  # the path's first chapter, not the lowest number

    response = candidate_client.post("/bank/deck/add/", {"chapter": "06-kv-cache", "next": "/"})
    assert response["Location"] == "/"
    page = candidate_client.get("/").content.decode()
    assert "Three steps to start" not in page
    assert '<span class="display-6 fw-bold" id="home-due-today">1</span>' in page
    assert "05 · Prefill-And-Decode" in page or "Prefill-And-Decode" in page  # next on the path: 05


def test_a_candidate_who_chooses_utc_finishes_the_time_zone_step(candidate_client, candidate, world):
    """UTC is a time zone one can live in (and a headless browser reports): choosing it is the step done; before,
    the step was done only for a zone other than UTC, so such a candidate saw the first-run steps for ever."""
    assert "Three steps to start" in candidate_client.get("/").content.decode()
    candidate_client.post("/accounts/start/", {"time_zone": "UTC"})
    candidate_client.post("/accounts/start/", {"path": "cram"})
    candidate_client.post("/bank/deck/add/", {"chapter": "06-kv-cache", "next": "/"})

    page = candidate_client.get("/").content.decode()
    assert TimeZonePreference.objects.get(user=candidate).time_zone == "UTC"
    assert "Three steps to start" not in page


def test_an_unknown_zone_or_path_changes_nothing(candidate_client, candidate, world):
    candidate_client.post("/accounts/start/", {"time_zone": "Mars/Olympus", "path": "nope"})
    assert not TimeZonePreference.objects.filter(user=candidate).exists()
    assert not ReviewSettings.objects.filter(user=candidate).exclude(reading_path="").exists()


def test_the_home_numbers(candidate, coach, world):
    now = datetime(2026, 3, 2, 10, 0, tzinfo=dt_timezone.utc)
    seventh = chapter(7, "07-attention-variants")
    ReadingPath.objects.filter(slug="cram").update(document_numbers=[6, 5, 7])
    ReviewSettings.objects.create(user=candidate, reading_path="cram",
                                  interview_date=date(2026, 3, 12))
    add_to_deck(candidate, [world["questions"][6]], now=now - timedelta(hours=1))
    Card.objects.filter(user=candidate).update(state=Card.REVIEW, step=None, stability=10.0, difficulty=5.0,
                                               last_review=now - timedelta(days=2), due=now + timedelta(days=3))
    CohortFactory(coach=coach, name="C", members=[candidate])
    fresh = QuestionSet.objects.create(coach=coach, title="Fresh set")
    coaching.add_entry(fresh, item=world["questions"][5])
    coaching.assign(fresh, coach, candidate=candidate, due_at=now + timedelta(days=2), now=now - timedelta(days=1))
    old = QuestionSet.objects.create(coach=coach, title="Old set")
    coaching.add_entry(old, item=world["questions"][6])
    coaching.assign(old, coach, candidate=candidate, due_at=now + timedelta(days=1), now=now - timedelta(days=20))
    for n in range(3):
        misconception_step(candidate, "kv", "query-heads-for-kv-heads", n)
    misconception_step(candidate, "ladder", "bits-for-bytes", 9)

    home = home_for(candidate, now)

    # The assigned set put chapter 05's question in the deck, due at once; 06's falls due in 3 days.
    assert (home.review_day.day, home.due_today, home.deck_size) == (date(2026, 3, 2), 1, 2)
    assert [count for _, count in home.forecast] == [1, 0, 0, 1, 0, 0, 0]
    assert [(row.assignment.question_set.title, row.is_new) for row in home.assignments] == [
        ("Old set", False), ("Fresh set", True)]  # soonest due first; new = not started, assigned ≤ 7 days ago
    # The interview's day begins at 04:00 on the 12th: the 06 card (S = 10 days, last reviewed 28 Feb 10:00)
    # is then 11 days 18 hours old, (1 + 0.98035 · 11.75/10)^-0.1542 = 0.8885 (FSRS-6, w20 = 0.1542; 0.8933 at
    # 11 whole days); the 05 card was never reviewed: no prediction, so it does not count (issue 28 item 6),
    # and it is counted apart. Mean if stopped now: 0.8885.
    assert home.interview.days_left == 10
    assert (home.interview.reviewed, home.interview.new) == (1, 1)
    assert home.interview.if_stopped == pytest.approx(0.8885, abs=1e-4)
    assert home.interview.if_kept_up >= home.interview.if_stopped
    assert home.next_chapter == seventh and not home.path_done  # 06 and 05 have questions in the deck
    assert [(m.id, m.family, m.count) for m in home.mistakes] == [("query-heads-for-kv-heads", "kv", 3),
                                                                  ("bits-for-bytes", "ladder", 1)]
    assert home.mistakes[0].title == MISCONCEPTIONS["query-heads-for-kv-heads"].title


def test_a_card_failed_today_is_not_100_percent_tomorrow_and_new_cards_are_counted_apart(candidate, world):
    """The tester's home page: an interview tomorrow, one card reviewed today (failed, S = 0.5 days, at 08:00),
    one never reviewed. It read "100 % if you keep up, 100 % if you stop now": FSRS's
    ``get_card_retrievability`` counts whole days, and 20 hours is 0 of them, R = 1; and the new card was left
    out without a word. The day begins at 04:00 on the 3rd, 20 hours = 0.8333 days after the review:
    (1 + 0.98035 · 0.8333/0.5)^-0.1542 = 2.63392^-0.1542 = 0.8613 (FSRS-6, f = 0.9^(-1/0.1542) − 1 = 0.98035).
    The card is due after the day, so keeping up changes nothing."""
    from drills.reviews.scheduling import interview_start, scheduler_for

    now = datetime(2026, 3, 2, 10, 0, tzinfo=dt_timezone.utc)
    settings = ReviewSettings.objects.create(user=candidate, interview_date=date(2026, 3, 3))
    add_to_deck(candidate, [world["questions"][5], world["questions"][6]], now=now - timedelta(hours=3))
    Card.objects.filter(user=candidate, item=world["questions"][6]).update(
        state=Card.REVIEW, step=None, stability=0.5, difficulty=8.0, last_review=now - timedelta(hours=2),
        due=now + timedelta(days=3))
    card = Card.objects.get(user=candidate, item=world["questions"][6])
    target = interview_start(settings, now)
    assert target == datetime(2026, 3, 3, 4, 0, tzinfo=dt_timezone.utc)
    assert scheduler_for(settings).get_card_retrievability(card.to_fsrs(), target) == 1.0  # whole days: 0

    interview = home_for(candidate, now).interview

    assert (interview.days_left, interview.reviewed, interview.new) == (1, 1, 1)
    assert interview.if_stopped == pytest.approx(0.8613, abs=1e-4)
    assert interview.if_kept_up == pytest.approx(0.8613, abs=1e-4)


def test_the_page_says_which_cards_the_expected_recall_covers(candidate_client, candidate, world):
    ReviewSettings.objects.create(user=candidate, interview_date=timezone.localdate() + timedelta(days=1))
    add_to_deck(candidate, [world["questions"][5], world["questions"][6]])
    Card.objects.filter(user=candidate, item=world["questions"][6]).update(
        state=Card.REVIEW, step=None, stability=0.2, difficulty=8.0, last_review=timezone.now() - timedelta(hours=2),
        due=timezone.now() + timedelta(days=3))

    page = " ".join(candidate_client.get("/").content.decode().split())

    # Between 2 and 26 hours to the day's start at S = 0.2 days: 95 % at most, never 100 %.
    assert "Expected recall on the day, over the 1 card you have reviewed:" in page
    assert "100 %" not in page
    assert ('<span id="home-recall-new">1 card never reviewed is not in it: FSRS predicts nothing before a first '
            "review.</span>") in page


def test_the_page_shows_the_countdown_assignments_and_a_drill_per_mistake(candidate_client, candidate, coach, world):
    TimeZonePreference.objects.create(user=candidate, time_zone="Europe/Paris")
    ReviewSettings.objects.create(user=candidate, reading_path="cram",
                                  interview_date=timezone.localdate() + timedelta(days=5))
    add_to_deck(candidate, [world["questions"][6]])
    misconception_step(candidate, "kv", "query-heads-for-kv-heads", 1)
    CohortFactory(coach=coach, name="C", members=[candidate])
    fresh = QuestionSet.objects.create(coach=coach, title="Fresh set")
    coaching.add_entry(fresh, item=world["questions"][5])
    coaching.assign(fresh, coach, candidate=candidate, due_at=timezone.now() + timedelta(days=2))

    page = candidate_client.get("/").content.decode()

    assert 'id="home-days-left">' in page and "Expected recall on the day" in page
    assert "Fresh set</a>\n              <span class=\"badge text-bg-primary\">new</span>" in page
    assert 'href="/drills/kv/new/"' in page
    assert ProblemInstance.objects.filter(family="kv").count() == 1
    assert candidate_client.get("/drills/kv/new/").status_code == 302  # one click draws a fresh problem
