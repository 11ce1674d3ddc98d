"""A design prompt in a timed round and a critique's reasons, graded by the local chat-completions server."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from drills.critique.services import grade_critique
from drills.models import CritiqueAttempt, CritiqueMark, RoundTemplate
from drills.rounds.services import start_round
from llm_grading.models import Grading
from tests.factories import UserFactory
from tests.llm_grading.chat_server import Reply, completion
from tests.url_table import CRITIQUE_DETAILS

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


def test_a_design_answer_in_a_round_is_graded_and_the_self_score_follows(candidate_client, candidate, design_item,
                                                                          endpoint, recorded_grade):
    template = RoundTemplate.objects.create(slug="design-only", kind="design-only", title="One design prompt",
                                            duration_s=3600, slots=[{"kind": "design"}])
    round_ = start_round(candidate, template, timezone.now())
    item = round_.items.get()
    before = candidate_client.get(f"/rounds/{round_.pk}/1/").content.decode()
    assert "Revealing sends your written answer, with the rubric, to grader at http://127.0.0.1:" in before
    candidate_client.post(f"/rounds/{round_.pk}/1/reveal/", {"answer": recorded_grade["answer"], "present": "1"})
    grading = Grading.objects.get(user=candidate, origin=Grading.ROUND, origin_id=item.pk)
    assert grading.page_url == f"/rounds/{round_.pk}/1/"
    page = candidate_client.get(f"/rounds/{round_.pk}/1/").content.decode()
    assert f'hx-get="/grading/{grading.pk}/?mode=round"' in page
    assert 'id="score-auto" checked' in page  # nothing suggested yet: "from my ticks" stays the default
    fragment = candidate_client.get(f"/grading/{grading.pk}/?mode=round", headers=HX).content.decode()
    assert f'name="self_score" value="2" id="score-model-{grading.pk}" checked' in fragment
    assert "Accept your model&#x27;s score: Hard" in fragment or "Accept your model's score: Hard" in fragment
    page = candidate_client.get(f"/rounds/{round_.pk}/1/").content.decode()
    assert 'id="score-auto" checked' not in page  # the model's score is the one checked now
    candidate_client.post(f"/rounds/{round_.pk}/1/submit/", {"confirm": "yes",
                                                             "version": item.version, "self_score": "2",
                                                             "grading": grading.pk, "present_ticks": "1"})
    item.refresh_from_db()
    grading.refresh_from_db()
    assert (item.self_score, grading.accepted_rating, grading.accepted) == (2, 2, True)
    # No point ticked: accepting counts the points the model judged met (1 and 3) as the ticks, 2 of 6.
    assert item.ticked == [0, 2] and item.grade == pytest.approx(2 / 6)


def _critique_attempt(candidate, critique):
    grade = grade_critique(CRITIQUE_DETAILS, {3: "It uses the 64 query heads; Llama-70B has 8 KV heads.",
                                             5: "Restarting everything at once drops every conversation."})
    return CritiqueAttempt.record(critique, candidate, grade)


@pytest.fixture
def critique(db):
    from drills.models import BankItem

    return BankItem.objects.create(slug="tiny-doc", kind=BankItem.CRITIQUE, prompt="Review this document.",
                                   model_answer="", details=CRITIQUE_DETAILS)


def test_a_critiques_reasons_are_graded_and_proposed_as_the_self_assessment(candidate_client, candidate, critique,
                                                                             endpoint, chat_server):
    grade = {"points": [{"point": 1, "verdict": "met", "evidence": "Llama-70B has 8 KV heads"},
                        {"point": 2, "verdict": "partly", "evidence": "drops every conversation"}],
             "suggested_score": 3, "follow_ups": ["How large is the KV cache per token with 8 KV heads?",
                                                  "What does a rolling restart need from the load balancer?"]}
    chat_server.replies["grader"] = Reply(200, completion(json.dumps(grade)))
    attempt = _critique_attempt(candidate, critique)
    page = candidate_client.get(attempt.get_absolute_url()).content.decode()
    assert "Grade my reasons" in page
    response = candidate_client.post(f"/drills/critique/{critique.slug}/attempts/{attempt.pk}/grade/")
    assert response["Location"] == attempt.get_absolute_url() + "#model-grading"
    grading = Grading.objects.get(user=candidate, origin=Grading.CRITIQUE, origin_id=attempt.pk)
    assert grading.rubric == ["Line 3: Use 8 KV heads.", "Line 5: Roll gradually."]
    assert grading.answer == ("Line 3: It uses the 64 query heads; Llama-70B has 8 KV heads.\n"
                              "Line 5: Restarting everything at once drops every conversation.")
    fragment = candidate_client.get(f"/grading/{grading.pk}/?mode=critique", headers=HX).content.decode()
    assert "Use these as my self-assessment" in fragment and "drops every conversation" in fragment
    candidate_client.post(f"/drills/critique/{critique.slug}/attempts/{attempt.pk}/assess/",
                          {"from_grading": grading.pk})
    ratings = dict(CritiqueMark.objects.filter(attempt=attempt, outcome=CritiqueMark.FOUND)
                   .values_list("line", "self_rating"))
    grading.refresh_from_db()
    assert ratings == {3: "got", 5: "partly"} and grading.accepted


def test_another_users_grading_proposes_nothing(candidate_client, candidate, critique, endpoint, chat_server):
    attempt = _critique_attempt(candidate, critique)
    bob = UserFactory(username="bob", role="candidate")
    theirs = Grading.objects.create(user=bob, item=critique, origin=Grading.CRITIQUE, origin_id=attempt.pk,
                                    question="q", rubric=["a", "b"], answer="a", status=Grading.DONE,
                                    result={"points": [{"point": 1, "verdict": "not", "evidence": ""},
                                                       {"point": 2, "verdict": "not", "evidence": ""}]},
                                    suggested_rating=1)
    candidate_client.post(f"/drills/critique/{critique.slug}/attempts/{attempt.pk}/assess/",
                          {"from_grading": theirs.pk, "rating_3": "got"})
    ratings = dict(CritiqueMark.objects.filter(attempt=attempt, outcome=CritiqueMark.FOUND)
                   .values_list("line", "self_rating"))
    assert ratings == {3: "got", 5: ""}
