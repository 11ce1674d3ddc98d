"""Every POST that acts on someone's object, sent by every role that does not own it, changes nothing.

The objects come from ``tests/url_table.py``'s world: the candidate (alice) and her cards, rounds, critique
attempt and assignment; a stranger (bob) with a card and a round of his own; the coach (carol) with her cohort,
set and question, which alice joined; another coach (dave); staff (sam). For each POST endpoint and each object
it can name, every role that may not act on that object posts a form that would be valid for the owner, and:
the answer is a refusal (302 to the log-in page, 403, 404 or 405), and the whole database is the same before and
after (every row of every table but the session and log-in-attempt tables).
"""

from __future__ import annotations

import hashlib

import pytest
from django.apps import apps
from django.test import Client

from tests.factories import UserFactory
from tests.url_table import TABLE, Post, build_world, fill, site_patterns

pytestmark = pytest.mark.django_db

ANON, CANDIDATE, STRANGER, COACH, OTHER_COACH, STAFF = "anon", "candidate", "stranger", "coach", "other_coach", "staff"
ROLES = (ANON, CANDIDATE, STRANGER, COACH, OTHER_COACH, STAFF)
UNTRACKED_TABLES = {"django_session", "axes_accessattempt", "axes_accesslog", "axes_accessfailurelog"}


def owners(name: str, kwargs: dict, o) -> set[str] | None:
    """The roles that may act through ``name`` on the object ``kwargs`` names; ``None``: not object-scoped.

    Not object-scoped: endpoints that act on the caller's own data whatever the path says (sign-up, deck,
    settings, lab, starting a round, a new problem, a coach's new question or set, joining by invitation).
    """
    pk = kwargs.get("pk")
    if name.startswith("reviews:") and name.split(":")[1] in {"reveal", "suggest", "rate", "answer"}:
        return {STRANGER} if pk == o.bob_card_pk else {CANDIDATE}
    if name.startswith("rounds:") and name != "rounds:start":
        return {STRANGER} if pk == o.bob_round_pk else {CANDIDATE}
    if name == "drills:problem":  # alice's stored problem: grading it as anyone else stores no attempt
        return {CANDIDATE}
    if name in {"drills:critique_assess", "drills:critique_grade"}:
        return {CANDIDATE}
    if name in {"coaching:cohort_invite", "coaching:cohort_remove", "coaching:set", "coaching:set_add",
                "coaching:entry_remove", "coaching:entry_move", "coaching:set_assign"}:
        return {COACH}  # staff status alone grants no coach rights (DESIGN §7)
    if name == "coaching:question_edit":
        return {COACH} if pk == o.own_question.pk else set()
    if name in {"coaching:start_timed", "coaching:start_entry"}:
        return {CANDIDATE}
    if name in {"coaching:cohort_endpoint", "coaching:cohort_endpoint_remove"}:  # the cohort's own coach: her key
        return {COACH}
    if name == "lab:calibration_apply":  # one's own calibration only (a shared one through coaching)
        return {CANDIDATE} if pk == o.own_calibration.pk else {COACH}
    if name == "coaching:share_calibration":  # the cohort's coach, her own calibrations
        return {COACH}
    if name == "coaching:apply_shared_calibration":  # a member of a cohort it is shared with
        return {CANDIDATE} if pk == o.coach_calibration.pk else set()
    if name == "account:leave":  # only a member leaves, and only her own membership
        return {CANDIDATE} if pk == o.cohort.pk else set()
    return None


def payload(name: str, world, o) -> dict:
    """A form that would be accepted from the owner: the endpoint's fields with plausible values."""
    values = {"version": "1", "rating": "3", "answer": "forged answer", "said_aloud": "", "ticked": ["0"],
              "started": "", "scratch": "forged", "self_score": "3", "flag": ["1"], "direction": "up",
              "title": "Forged title", "instructions": "Forged", "item": str(o.ladder.pk), "round": "capacity",
              "fixed_inputs": "{}", "target": f"candidate:{o.candidate.pk}", "due_at": "2031-01-01T10:00",
              "time_limit_min": "", "prompt": "Forged prompt", "model_answer": "Forged", "rubric": "a",
              "tags": "kv", "misconceptions": "", "difficulty": "2"}
    entry = TABLE[name]
    fields = list(entry.fields) + list(world.fields.get(name, []))
    return {field: values.get(field, "1") for field in fields}


def snapshot() -> str:
    """A digest of every row of every tracked table (sorted), to compare the database before and after."""
    digest = hashlib.sha256()
    for model in sorted(apps.get_models(), key=lambda m: m._meta.db_table):
        if model._meta.db_table in UNTRACKED_TABLES or model._meta.proxy:
            continue
        rows = sorted(repr(sorted(row.items())) for row in model._default_manager.values())
        digest.update(f"{model._meta.db_table}:{len(rows)}:{''.join(rows)}".encode())
    return digest.hexdigest()


@pytest.fixture
def clients(candidate, coach):
    """A world, and one logged-in client per role."""
    world = build_world(candidate, coach)
    users = {CANDIDATE: candidate, STRANGER: world.objects.bob, COACH: coach,
             OTHER_COACH: UserFactory(username="dave", role="coach"), STAFF: UserFactory(username="sam", is_staff=True)}
    o = world.objects
    o.bob_card_pk = next(k["pk"] for k in world.kwargs["reviews:rate"] if k["pk"] not in
                         (o.open_card.pk, o.problem_card.pk))
    o.bob_round_pk = next(k["pk"] for k in world.kwargs["rounds:finish"] if k["pk"] not in
                          (o.phone.pk, o.critique_round.pk))
    by_role = {ANON: Client()}
    for role, user in users.items():
        by_role[role] = Client()
        by_role[role].force_login(user)
    return world, by_role


def test_no_role_acts_on_an_object_it_does_not_own(clients, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    world, by_role = clients
    o, routes = world.objects, site_patterns()
    before, sent, wrong = snapshot(), 0, []
    for name, entry in TABLE.items():
        if not isinstance(entry, Post):
            continue
        for kwargs in world.kwargs.get(name, [{}]):
            allowed = owners(name, kwargs, o)
            if allowed is None:
                continue
            path = fill(routes[name], kwargs)
            for role in ROLES:
                if role in allowed:
                    continue
                response = by_role[role].post(path, payload(name, world, o))
                sent += 1
                status = response.status_code
                refused = status in (403, 404, 405) or (status == 302 and "/login/" in response["Location"])
                if not refused:
                    wrong.append(f"{name} {path} as {role}: {status}")
    assert not wrong, "accepted from a role that does not own the object:\n" + "\n".join(wrong)
    assert snapshot() == before, "a refused POST changed the database"
    assert sent > 150


def test_the_owner_payloads_are_real(clients):
    """The control: the same forms from the owners do change the database (so the refusals above mean something)."""
    world, by_role = clients
    o, routes = world.objects, site_patterns()
    before = snapshot()
    response = by_role[CANDIDATE].post(fill(routes["reviews:rate"], {"pk": o.open_card.pk}),
                                       payload("reviews:rate", world, o))
    assert response.status_code in (200, 302)
    response = by_role[COACH].post(fill(routes["coaching:set"], {"pk": o.question_set.pk}),
                                   payload("coaching:set", world, o))
    assert response.status_code in (200, 302)
    assert snapshot() != before
