"""The permission matrix: EVERY URL of the product (walked from the URL resolver) against every role.

Roles: anonymous, ``candidate`` (demo, in carol's cohort), ``other`` (eve, a
candidate in no cohort), ``coach`` (carol), ``other_coach`` (dave) and
``staff`` (sam). Parametrised URLs are built with real objects owned by the
candidate or the coach. A URL the resolver knows but this file does not
classify fails the test: a new URL must say who may open it.

Each expectation is the status of a GET: 200, 302 (to the login page for
anonymous visitors), 403, 404 or 405 (POST-only endpoints; anonymous visitors
are sent to log in first where the view asks for a login).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.tokens import default_token_generator
from django.core.cache import cache
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from coaching import services
from drills.critique.services import grade_critique
from drills.models import BankItem, Card, CritiqueAttempt, LabRun, ProblemInstance
from drills.problems.grading import grade_problem
from drills.problems.storage import store_attempt
from drills.reviews.services import record_open_review
from llm_grading.models import Grading

pytestmark = pytest.mark.django_db

ROLES = ("anon", "candidate", "other", "coach", "other_coach", "staff")
LOGIN = 302

# Shorthands: (anon, candidate, other candidate, coach, other coach, staff).
PUBLIC = (200,) * 6
LOGGED_IN = (LOGIN, 200, 200, 200, 200, 200)
OWNER = (LOGIN, 200, 404, 404, 404, 404)          # the candidate's own object: nobody else, not even staff
OWNER_POST = (LOGIN, 405, 405, 405, 405, 405)
POST_ONLY = (405,) * 6
LOGIN_POST = (LOGIN, 405, 405, 405, 405, 405)
COACH_PAGE = (LOGIN, 403, 403, 200, 200, 200)      # a coach's own list or form
COACH_OBJECT = (LOGIN, 403, 403, 200, 404, 200)    # carol's object (or her candidate): not dave's
COACH_POST = (LOGIN, 403, 403, 405, 405, 405)
MY_ASSIGNMENT = (LOGIN, 200, 404, 404, 404, 404)   # only the candidates it is for

EXPECTED: dict[str, tuple[int, ...]] = {
    "home": PUBLIC, "healthz": PUBLIC,
    "floor": (404,) * 6,  # the benchmark floor answers only with BENCH_FLOOR=true (off here)
    "floor_write": POST_ONLY,  # its write floor: POST only, then a 404 unless BENCH_FLOOR=true
    "signup": (200, 302, 302, 302, 302, 302),  # logged in: sent home
    "login": PUBLIC, "logout": POST_ONLY,
    "password_change": LOGGED_IN, "password_change_done": LOGGED_IN,
    "password_reset": PUBLIC, "password_reset_done": PUBLIC, "password_reset_confirm": PUBLIC,
    "password_reset_complete": PUBLIC,
    "calculators:index": PUBLIC, "calculators:calculator": PUBLIC,
    "drills:index": PUBLIC, "drills:design": PUBLIC, "drills:critique": PUBLIC,
    "drills:critique_attempt": OWNER, "drills:critique_assess": OWNER_POST,
    "drills:critique_grade": OWNER_POST,  # sends the candidate's own attempt to their model: POST only
    "drills:design_answer": LOGIN_POST,  # a design answer sent to the candidate's model: POST only
    "drills:new": (302,) * 6,  # no seed: sent to a fresh seed's address (reading stores nothing)
    "drills:problem": OWNER,  # the candidate's own problem (coaches read it through their pages)
    "drills:followup": OWNER,  # the follow-ups of the candidate's own problem (issue 33)
    "drills:followup-drawn": (302,) * 6,  # without ?seed=N: sent to a new problem, worked before its follow-up
    "reviews:bank": PUBLIC, "reviews:bank_apkg": PUBLIC,
    "reviews:deck_add": LOGIN_POST, "reviews:deck_remove": LOGIN_POST, "reviews:deck_undo": LOGIN_POST,
    # The coach's own question: her cohort's candidate, the coach and staff; nobody else.
    "reviews:bank_item": (404, 200, 404, 200, 404, 200),
    "reviews:review": LOGGED_IN, "reviews:card": OWNER,
    "reviews:reveal": OWNER_POST, "reviews:suggest": OWNER_POST, "reviews:rate": OWNER_POST,
    "reviews:answer": OWNER_POST, "reviews:result": OWNER,
    "reviews:settings": LOGGED_IN, "reviews:export_deck": LOGGED_IN, "reviews:export_history": LOGGED_IN,
    "reviews:progress": LOGGED_IN,
    "lab:index": PUBLIC, "lab:run": OWNER,
    "lab:calibrate": PUBLIC, "lab:calibration": OWNER, "lab:calibration_apply": OWNER_POST,
    "lab:calibration_stop": LOGIN_POST,
    "coaching:share_calibration": COACH_POST, "coaching:shared_calibrations": LOGGED_IN,
    "coaching:apply_shared_calibration": LOGIN_POST,
    "rounds:index": LOGGED_IN, "rounds:start": LOGIN_POST,
    "rounds:round": (LOGIN, 302, 404, 404, 404, 404),  # to the current item
    "rounds:clock": OWNER, "rounds:finish": OWNER_POST,
    "rounds:report": (LOGIN, 302, 404, 404, 404, 404),  # back to the round while it runs
    "rounds:deck": OWNER_POST, "rounds:item": OWNER, "rounds:save": OWNER_POST, "rounds:reveal": OWNER_POST,
    "rounds:submit": OWNER_POST, "rounds:confirm_finish": OWNER,
    "rounds:again": OWNER_POST,
    "coaching:dashboard": COACH_PAGE, "coaching:dashboard_tables": COACH_PAGE, "coaching:cohort_new": COACH_POST,
    "coaching:item_search": COACH_PAGE,
    # The cohort's grading endpoint holds its coach's key: her page alone (a superuser gets a 404 too).
    "coaching:cohort_endpoint": (LOGIN, 403, 403, 200, 404, 404), "coaching:cohort_endpoint_remove": COACH_POST,
    "coaching:cohort": COACH_OBJECT,
    "coaching:cohort_invite": COACH_POST, "coaching:cohort_remove": COACH_POST,
    "coaching:candidate": COACH_OBJECT, "coaching:attempt": COACH_OBJECT, "coaching:review": COACH_OBJECT,
    "coaching:assignment": COACH_OBJECT, "coaching:questions": COACH_PAGE, "coaching:question_new": COACH_PAGE,
    "coaching:question_preview": COACH_POST, "coaching:question_copy": COACH_POST,
    "coaching:question_edit": COACH_OBJECT, "coaching:sets": COACH_PAGE, "coaching:set_new": COACH_PAGE,
    "coaching:set": COACH_OBJECT, "coaching:set_add": COACH_POST, "coaching:entry_remove": COACH_POST,
    "coaching:entry_move": COACH_POST, "coaching:set_assign": COACH_OBJECT,
    "coaching:my_assignments": LOGGED_IN, "coaching:my_assignment": MY_ASSIGNMENT,
    "coaching:start_timed": LOGIN_POST, "coaching:start_entry": LOGIN_POST,
    "coaching:invitation": LOGGED_IN,
    "api:index": PUBLIC, "api:schema": PUBLIC, "api:models": PUBLIC, "api:model": PUBLIC, "api:gpus": PUBLIC,
    "api:gpu": PUBLIC, "api:families": PUBLIC, "api:family": PUBLIC, "api:calc": PUBLIC,
    "api:not_found": (404,) * 6,
    "runbook:index": PUBLIC, "runbook:chapter": PUBLIC, "runbook:glossary": PUBLIC, "runbook:errata": PUBLIC,
    "runbook:reading": PUBLIC, "runbook:search": PUBLIC,
    "favicon": (301,) * 6,  # to the SVG icon under static/
    "simulator:page": PUBLIC, "simulator:fidelity": PUBLIC, "api:simulate": PUBLIC,
    "api:simulate_result": (404,) * 6,  # public, but this id was never queued (a queued call's id answers anyone)
    "start": LOGIN_POST,  # the first-run steps post here (time zone, path, first deck)
    # A person's own data: always the signed-in user's own, so no object of anyone else's can be named.
    "account:overview": LOGGED_IN, "account:export": LOGGED_IN, "account:delete": LOGGED_IN,
    "account:leave": (LOGIN, 405, 405, 405, 405, 405),  # POST only; leaving someone else's cohort is refused there
    # Grading by the user's own model: their settings, and their own gradings (nobody else's, not even staff's).
    "llm_grading:settings": LOGGED_IN, "llm_grading:remove": LOGIN_POST,
    "llm_grading:grading": OWNER, "llm_grading:retry": OWNER_POST, "llm_grading:accept": OWNER_POST,
}

# The admin: staff only (everyone else is sent to the admin's login page).
ADMIN = (302, 302, 302, 302, 302, 200)
ADMIN_MISSING = (302,) * 6  # staff are redirected: to the index (no such row) or to the change page
ADMIN_EXCEPTIONS = {
    "admin:login": (200, 200, 200, 200, 200, 302),  # non-staff see "not authorised"; staff go to the index
    "admin:logout": (302, 302, 302, 302, 302, 405),
    "admin:autocomplete": (302, 302, 302, 302, 302, 403),  # needs its query parameters
    "admin:drills_reviewlog_add": (302, 302, 302, 302, 302, 403),  # review logs are append-only
    "admin:drills_reviewlog_delete": (302, 302, 302, 302, 302, 403),
    # django-axes: its login-attempt records are written by axes only, never added by hand.
    "admin:axes_accessattempt_add": (302, 302, 302, 302, 302, 403),
    "admin:axes_accesslog_add": (302, 302, 302, 302, 302, 403),
    "admin:axes_accessfailurelog_add": (302, 302, 302, 302, 302, 403),
    "admin:view_on_site": (302,) * 6,
}


def walk(patterns, prefix: str = "", namespace: str | None = None):
    """(name, pattern) of every URL, namespaces joined with ':'."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = pattern.namespace
            ns = f"{namespace}:{inner}" if namespace and inner else inner or namespace
            yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), ns)
        elif isinstance(pattern, URLPattern):
            yield (f"{namespace}:{pattern.name}" if namespace else pattern.name), prefix + str(pattern.pattern), \
                pattern


@pytest.fixture
def loaded(db):
    """The repository's content (chapters, questions, critiques, design prompts, problem templates)."""
    from runbook.loading import load_content

    cache.clear()
    load_content(Path(django_settings.BASE_DIR) / "fixtures")


@pytest.fixture
def objects(loaded, world, h):
    """Real objects for every parametrised URL, owned by the candidate (demo) or the coach (carol)."""
    demo, coach = world.demo, world.coach
    problem_entry = world.set.entries.get(item=world.ladder)
    problem = ProblemInstance.objects.get(pk=int(services.start_entry(world.assignment, demo, problem_entry)
                                                 .rstrip("/").split("/")[-1]))
    attempt = store_attempt(problem, demo, grade_problem(problem, h.answers(problem)), None)
    card = Card.objects.get(user=demo, item=world.question)
    outcome = record_open_review(demo, card.pk, card.version, None, answer="x", ticked=[0])
    log = card.logs.get()
    critique_item = BankItem.objects.published().filter(kind=BankItem.CRITIQUE).first()
    critique = CritiqueAttempt.record(critique_item, demo, grade_critique(critique_item.details, {}))
    design = BankItem.objects.published().filter(kind=BankItem.DESIGN).first()
    run = LabRun.objects.create(user=demo, model="llama-3.1-70b", gpu="h200-sxm-141gb", gpus=1,
                                weights_dtype="bf16", kv_dtype="bf16")
    grading = Grading.objects.create(user=demo, item=design, origin=Grading.DESIGN, origin_id=design.pk,
                                     question="q", rubric=["a"], answer="a", status=Grading.DONE,
                                     result={"points": [{"point": 1, "verdict": "met", "evidence": "a"}]},
                                     suggested_rating=4)
    timed = services.assign(world.set, coach, candidate=demo, due_at=h.now() + timedelta(days=3), time_limit_s=600)
    round_ = services.start_timed(timed, demo)
    from calculators.models import Calibration
    from runbook.models import Chapter

    calibration = Calibration.objects.create(owner=demo, name="mine", model="llama-3.1-8b", gpu="h100-sxm5-80gb",
                                             gpus=1, weights_dtype="bf16", kv_dtype="bf16",
                                             values={"step_overhead_ms": 1.5, "bandwidth_efficiency": 0.8,
                                                     "prefill_mfu": 0.6},
                                             fit={}, source_format="typed", source_text="input=512 output=128")
    entry = world.set.entries.first()
    kwargs = {
        "lab:calibration": {"pk": calibration.pk}, "lab:calibration_apply": {"pk": calibration.pk},
        "coaching:share_calibration": {"pk": world.cohort.pk},
        "coaching:apply_shared_calibration": {"pk": calibration.pk},
        "password_reset_confirm": {"uidb64": urlsafe_base64_encode(force_bytes(demo.pk)), "token": "bad-token"},
        "calculators:calculator": {"family": "ladder"},
        "drills:design": {"slug": design.slug}, "drills:critique": {"slug": critique_item.slug},
        "drills:critique_attempt": {"slug": critique_item.slug, "pk": critique.pk},
        "drills:critique_assess": {"slug": critique_item.slug, "pk": critique.pk},
        "drills:critique_grade": {"slug": critique_item.slug, "pk": critique.pk},
        "drills:design_answer": {"slug": design.slug},
        "drills:new": {"family": "ladder"}, "drills:problem": {"family": "ladder", "pk": problem.pk},
        "drills:followup": {"family": "ladder", "pk": problem.pk}, "drills:followup-drawn": {"family": "ladder"},
        "reviews:bank_item": {"slug": world.question.slug},
        **{f"reviews:{n}": {"pk": card.pk} for n in ("card", "reveal", "suggest", "rate", "answer")},
        "reviews:result": {"pk": log.pk},
        "lab:run": {"pk": run.pk},
        "rounds:start": {"slug": "capacity"},
        **{f"rounds:{n}": {"pk": round_.pk} for n in ("round", "clock", "finish", "confirm_finish", "report", "deck")},
        **{f"rounds:{n}": {"pk": round_.pk, "position": 1} for n in ("item", "save", "reveal", "submit", "again")},
        "coaching:cohort": {"pk": world.cohort.pk}, "coaching:cohort_invite": {"pk": world.cohort.pk},
        "coaching:cohort_endpoint": {"pk": world.cohort.pk}, "coaching:cohort_endpoint_remove": {"pk": world.cohort.pk},
        "coaching:cohort_remove": {"pk": world.cohort.pk, "user_pk": demo.pk},
        "coaching:candidate": {"pk": demo.pk}, "coaching:attempt": {"pk": attempt.pk},
        "coaching:review": {"pk": log.pk}, "coaching:assignment": {"pk": world.assignment.pk},
        "coaching:question_edit": {"pk": world.question.pk}, "coaching:set": {"pk": world.set.pk},
        "coaching:set_add": {"pk": world.set.pk},
        "coaching:entry_remove": {"pk": world.set.pk, "entry_pk": entry.pk},
        "coaching:entry_move": {"pk": world.set.pk, "entry_pk": entry.pk},
        "coaching:set_assign": {"pk": world.set.pk},
        "coaching:my_assignment": {"pk": world.assignment.pk}, "coaching:start_timed": {"pk": timed.pk},
        "coaching:start_entry": {"pk": world.assignment.pk, "entry_pk": entry.pk},
        "coaching:invitation": {"token": world.invitation.token},
        "api:model": {"model_id": "llama-3.1-70b"}, "api:gpu": {"gpu_id": "h200-sxm-141gb"},
        "api:simulate_result": {"token": "0" * 64},
        "api:family": {"slug": "ladder"}, "api:calc": {"slug": "ladder"}, "api:not_found": {"rest": "nope"},
        "account:leave": {"pk": world.cohort.pk},
        **{f"llm_grading:{n}": {"pk": grading.pk} for n in ("grading", "retry", "accept")},
        "runbook:chapter": {"slug": Chapter.objects.order_by("number").first().slug},
    }
    assert outcome is not None and default_token_generator
    return kwargs


def _admin_url(route: str) -> tuple[str, bool]:
    """A concrete admin URL from its route, and whether the object it names exists.

    Object routes (``<app>/<model>/<object_id>/…``) use the model's first row
    (a missing row makes the admin redirect staff to its index).
    """
    import re

    from django.apps import apps
    from django.contrib.contenttypes.models import ContentType

    from coaching.models import Cohort

    url = "/" + route
    if "<app_label>" in route or "(?P<app_label>" in route:
        return "/admin/coaching/", True
    if "content_type_id" in route:
        cohort = Cohort.objects.first()
        return f"/admin/r/{ContentType.objects.get_for_model(Cohort).pk}/{cohort.pk}/", True
    found = True
    if "<" in route:
        app_label, model_name = route.split("/")[1:3]
        row = apps.get_model(app_label, model_name)._default_manager.order_by("pk").first()
        found = row is not None
        url = re.sub(r"<(?:\w+:)?(?:object_id|id)>", str(row.pk if row else 999999), url)
    assert "<" not in url and "(?P" not in url, url
    return url, found


def test_every_url_answers_every_role_as_expected(world, objects, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    users = {"anon": None, "candidate": world.demo, "other": world.eve, "coach": world.coach,
             "other_coach": world.dave, "staff": world.sam}
    clients = {}
    for role, user in users.items():
        clients[role] = Client()
        if user is not None:
            clients[role].force_login(user)

    seen, unclassified, mismatches, checked = set(), [], [], 0
    for name, route, _ in walk(get_resolver().url_patterns):
        if name in seen or route in seen:
            continue
        seen.update({name, route})
        if name.startswith("admin:"):
            url, found = _admin_url(route)
            expected = ADMIN_EXCEPTIONS.get(name, ADMIN if found and name != "admin:None" else ADMIN_MISSING)
        else:
            if name not in EXPECTED:
                unclassified.append(f"{name} ({route})")
                continue
            url = reverse(name, kwargs=objects.get(name, {}))
            expected = EXPECTED[name]
        for role, want in zip(ROLES, expected):
            response = clients[role].get(url)
            got = response.status_code
            checked += 1
            if name.startswith("admin:") and role != "staff" and want == 302 and got == 302:
                assert "/admin/" in response["Location"], (name, role)
            if got != want:
                mismatches.append(f"{name} {url} as {role}: expected {want}, got {got}")
            elif got == LOGIN and role == "anon" and \
                    not name.startswith(("admin:", "drills:new", "drills:followup-drawn")) and \
                    name not in ("api:not_found",):
                assert response["Location"].startswith(django_settings.LOGIN_URL) or \
                    "/login/" in response["Location"], (name, response["Location"])
    assert not unclassified, "URLs with no expectation (classify them in EXPECTED):\n" + "\n".join(unclassified)
    assert not mismatches, "\n".join(mismatches)
    assert checked > 6 * 150
