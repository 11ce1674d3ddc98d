"""A cohort with an assigned set and some progress: the data the HTTP benchmark and the query-count tests measure.

Not used by the site itself; it builds through the same services a coach's clicks go through.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from coaching import dashboard_cache, services
from coaching.models import Assignment, Cohort, Membership, QuestionSet
from drills.models import BankItem, Card, ProblemInstance
from drills.problems.grading import submit
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import record_open_review


def cohort_with_progress(coach, people: list, *, name: str, now: datetime) -> tuple[Cohort, Assignment]:
    """Put ``people`` (candidate users) in a new cohort of ``coach`` named ``name``, assign it a set, and give
    every tenth candidate graded work and a review, so that every table of the coach dashboard has rows.

    The set holds the first published open question and the ladder template fixed to Llama-3.1-70B; it is due
    two days after ``now``. Needs the content loaded (``load_content``): the question and the ladder template.
    Returns the cohort and the assignment.
    """
    cohort = services.create_cohort(coach, name)
    Membership.objects.bulk_create([Membership(cohort=cohort, candidate=person) for person in people])
    # bulk_create sends no signal: the dashboards and the candidates' coaches it changes are bumped here.
    dashboard_cache.bump_for_candidates([person.pk for person in people], cohort_ids=[cohort.pk])
    dashboard_cache.memberships_changed()
    question = BankItem.objects.published().filter(kind=BankItem.OPEN).order_by("pk").first()
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")
    question_set = QuestionSet.objects.create(coach=coach, title=f"{name} week", instructions="Work it.")
    services.add_entry(question_set, item=question)
    entry = services.add_entry(question_set, item=ladder, fixed_inputs={"model": "llama-3.1-70b"})
    assignment = services.assign(question_set, coach, cohort=cohort, due_at=now + timedelta(days=2))
    for person in people[::10]:
        url = services.start_entry(assignment, person, entry, now=now)
        problem = ProblemInstance.objects.get(pk=int(url.rstrip("/").split("/")[-1]))
        submit(problem, person, {"card_gib": "1"})
        add_to_deck(person, [question], now=now)
        card = Card.objects.get(user=person, item=question)
        record_open_review(person, card.pk, card.version, None, answer="Fewer KV heads.", ticked=[0], now=now)
    return cohort, assignment
