"""Fuzz every form and POST endpoint of the site with hypothesis.

The endpoints come from the URLconf (``tests/url_table.py``): a test fails as
soon as a URL pattern appears that the table does not describe, so the table
cannot go stale. For every view that accepts POST, hypothesis sends arbitrary
form data — any Unicode (NUL and right-to-left marks included), numbers that
are not numbers (``²``, ``1e309``, ``nan``, Arabic-Indic digits), huge and
empty values, missing fields, repeated fields, ids and slugs of real objects
and of other users' — as an anonymous visitor, a candidate and a coach, as a
plain form post and as htmx (``HX-Request: true``), to real objects (cards,
rounds, sets, …) and to ids that do not exist. Views that bind a form to the
query string (the calculators, the bank filters, search) get the same
treatment on GET. Every response must be:

- never a 5xx (the test client re-raises a view's exception, so a bug shows
  with its traceback);
- when it shows a form error, a page that holds what the user typed in each
  text field (input kept), HTML-escaped as the template renders it.

Each example runs in a savepoint that is rolled back, so every request meets
the same world. Examples per endpoint: ``FUZZ_EXAMPLES`` (default 30).
"""

from __future__ import annotations

import os
from urllib.parse import quote

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.test import Client
from django.utils.html import escape
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coaching.models import Cohort
from tests.url_table import TABLE, Get, Post, Skip, build_world, fill, site_patterns, skipped_prefix, url_patterns

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "30"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

ROLES = ("anonymous", "candidate", "coach")
# A page shows a form error with one of these (crispy's and the hand-written templates').
ERROR_MARKERS = ("invalid-feedback", "is-invalid", "errorlist", "alert-danger", "alert-warning")

# Text that has broken parsers before: NUL (PostgreSQL refuses it in text), digits that str.isdigit()
# accepts but int() does not, overflowing and non-finite numbers, markup, path tricks, bidi marks.
NASTY = [
    "", " ", "\x00", "a\x00b", "0", "-1", "²", "¹²", "١٢٣", "½", "1e309", "-1e309", "nan", "inf", "-0",
    "9" * 40, "1.5", "0x10", "1_000", "on", "true", "up", "down", "auto", "1", "2", "3", "4",
    "<script>alert(1)</script>", "'; DROP TABLE auth_user;--", "%00", "../../etc/passwd", "😀" * 20,
    "\u202eevil", "a\r\nb", "{{7*7}}", "2026-02-30", "2026-13-01T25:61", "9999-12-31", "0001-01-01",
    "UTC", "Mars/Olympus_Mons", "0.9", "0.5", "12,5", "  7  ",
]
text = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)
huge = st.integers(5_000, 60_000).map(lambda n: ("ab\u00e9 " * n)[:n])


def values(pool: list[str]) -> st.SearchStrategy[str]:
    """One field value: arbitrary text, a nasty string, an integer, a real id/slug, or a huge string."""
    return st.one_of(text, st.sampled_from(NASTY), st.sampled_from(NASTY),
                     st.integers(-(2**70), 2**70).map(str), st.sampled_from(pool), st.sampled_from(pool), huge)


def form_data(names: list[str], pool: list[str]) -> st.SearchStrategy[dict]:
    """Each known field missing, one value or several; plus up to two unknown keys."""
    one = values(pool)
    field = st.one_of(st.none(), one, one, one, st.lists(one, min_size=2, max_size=3))
    extra = st.dictionaries(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                                    min_size=1, max_size=12), one, max_size=2)
    return st.builds(lambda known, more: {**more, **{k: v for k, v in known.items() if v is not None}},
                     st.fixed_dictionaries({name: field for name in names}), extra)


def path_kwargs(route: str, real: list[dict]) -> st.SearchStrategy[dict]:
    """Path arguments: mostly real objects, else arbitrary (huge ints, odd slugs) for the route's converters."""
    import re

    converters = re.findall(r"<(?:(\w+):)?(\w+)>", route)
    if not converters:
        return st.just({})

    def converter_value(kind: str):
        if kind == "int":
            return st.one_of(st.integers(0, 10**6), st.integers(0, 10**25)).map(str)
        if kind == "slug":
            return st.from_regex(r"\A[-a-zA-Z0-9_]{1,40}\Z")
        return st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40).map(
            lambda s: quote(s, safe=""))

    fuzzed = st.fixed_dictionaries({name: converter_value(kind or "str") for kind, name in converters})
    if not real:
        return fuzzed
    return st.one_of(st.sampled_from(real), st.sampled_from(real), st.sampled_from(real), fuzzed)


def client_for(role: str, htmx: bool, sessions: dict[str, str]) -> Client:
    """A fresh client in ``role``'s session (none for anonymous), sending ``HX-Request`` when ``htmx``."""
    client = Client(headers={"HX-Request": "true"} if htmx else {})
    if role in sessions:
        client.cookies[django_settings.SESSION_COOKIE_NAME] = sessions[role]
    return client


def logged_in_sessions(world) -> dict[str, str]:
    """Role → session key of a login made once (a logout inside an example is rolled back with it)."""
    keys = {}
    for role in ("candidate", "coach"):
        client = Client()
        client.force_login(getattr(world.objects, role))
        keys[role] = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    return keys


def single_text(value) -> str | None:
    """A posted value that a re-rendered text field would show (one non-blank string), else ``None``."""
    return value if isinstance(value, str) and value.strip() else None


def check_response(name: str, entry, response, data: dict, world, method: str) -> None:
    """No 5xx; a form error keeps every echoed text field's input."""
    assert response.status_code < 500, f"{method} {name}: {response.status_code}"
    if method != "POST" or response.status_code not in (200, 400, 422) or response.has_header("HX-Redirect"):
        return  # HX-Redirect: an htmx request sent to log in first (config/login_redirect.py), no form shown
    if "html" not in response.get("Content-Type", ""):
        return
    body = response.content.decode()
    shows_error = any(marker in body for marker in ERROR_MARKERS)
    if not (shows_error or entry.always_echo):
        return
    for field in (*entry.echo, *world.echo.get(name, ())):
        value = data.get(field)
        typed = single_text(value.replace("\x00", "\ufffd") if isinstance(value, str) else None)
        if typed is None:
            continue
        # A template shows the value as given, escaped (NUL shown as U+FFFD: config.middleware.NulMiddleware).
        assert escape(typed) in body, (
            f"POST {name}: the form error page lost what was typed in {field!r} ({typed[:60]!r}…)")


@pytest.fixture
def world(candidate, coach):
    """The objects the URLs name (see :func:`tests.url_table.build_world`)."""
    return build_world(candidate, coach)


def _run(name: str, entry, world, data_strategy) -> None:
    route = site_patterns()[name]
    sessions = logged_in_sessions(world)

    @FUZZ_SETTINGS
    @given(st.sampled_from(ROLES), st.booleans(), path_kwargs(route, world.kwargs.get(name, [])), data_strategy)
    def fuzz(role, htmx, kwargs, data):
        path = fill(route, kwargs)
        with transaction.atomic():
            client = client_for(role, htmx, sessions)
            if isinstance(entry, Post):
                response = client.post(path, data)
                check_response(name, entry, response, data, world, "POST")
                if entry.get_query:
                    check_response(name, entry, client.get(path, data), data, world, "GET")
            else:
                check_response(name, entry, client.get(path, data), data, world, "GET")
            transaction.set_rollback(True)

    fuzz()


POSTS = sorted(name for name, entry in TABLE.items() if isinstance(entry, Post))
GET_FORMS = sorted(name for name, entry in TABLE.items() if isinstance(entry, Get) and entry.query)


@pytest.mark.parametrize("name", POSTS)
def test_post_endpoint_survives_fuzzing(name, world):
    """Arbitrary form data, any role, plain or htmx: never a 5xx; a form error keeps the input."""
    entry = TABLE[name]
    names = [*entry.fields, *world.fields.get(name, ())]
    _run(name, entry, world, form_data(names, world.pool))


@pytest.mark.parametrize("name", GET_FORMS)
def test_query_string_form_survives_fuzzing(name, world):
    """Arbitrary query strings on the pages whose form binds ``request.GET``: never a 5xx."""
    entry = TABLE[name]
    names = [*entry.query, *world.fields.get(name, ())]
    _run(name, entry, world, form_data(names, world.pool))


# --- the table covers the URLconf --------------------------------------------------------------


def test_every_url_pattern_is_in_the_fuzz_table():
    """A new URL must be added to tests/url_table.py (as Post, Get or Skip) before it ships."""
    missing = sorted(set(site_patterns()) - set(TABLE))
    assert not missing, f"URL patterns missing from tests/url_table.py TABLE: {missing}"
    stale = sorted(set(TABLE) - set(site_patterns()))
    assert not stale, f"TABLE names no longer in the URLconf: {stale}"


def test_only_admin_and_api_patterns_are_skipped_wholesale():
    """The skipped prefixes hold only Django's admin and the schemathesis-tested API."""
    skipped = {route.split("/", 1)[0] for route, _, _ in url_patterns() if skipped_prefix(route)}
    assert skipped == {"admin", "api"}


def test_the_table_says_which_views_take_post(world, coach):
    """Each ``Post`` view answers a POST with something other than 405; each ``Get`` view refuses POST (405).

    Checked as a superuser (who passes every login and coach check) with real objects in the path,
    so a 405 can only come from the view's allowed methods.
    """
    coach.is_superuser = True  # staff status alone passes no coach check (DESIGN §7)
    coach.save(update_fields=["is_superuser"])
    wrong = []
    for name, entry in TABLE.items():
        if isinstance(entry, Skip):
            continue
        route = site_patterns()[name]
        kwargs = (world.kwargs.get(name) or [{}])[0]
        with transaction.atomic():
            client = Client()  # a fresh session each time: the logout POST ends the one it is sent with
            client.force_login(coach)
            status = client.post(fill(route, kwargs), {}).status_code
            transaction.set_rollback(True)
        if isinstance(entry, Post) and status == 405:
            wrong.append(f"{name} is listed as Post but refuses POST")
        if isinstance(entry, Get) and status != 405:
            wrong.append(f"{name} is listed as Get but answered POST with {status}")
    assert not wrong, "\n".join(wrong)


# --- the defects the fuzzing found, pinned -------------------------------------------------------


def test_a_very_long_username_is_a_login_error_not_a_500(candidate):
    """Django's login form lets any length through to authenticate(); axes then stored it in a varchar(255)."""
    response = Client().post("/accounts/login/", {"username": "u" * 5000, "password": "whatever-123"})
    assert response.status_code == 200
    assert b"correct username and password" in response.content
    assert ("u" * 5000).encode() in response.content  # what was typed comes back


def test_a_nul_character_in_form_data_becomes_a_replacement_character(world):
    """PostgreSQL refuses NUL in text: a round answer and a cohort name are saved with U+FFFD in its place."""
    client = client_for("candidate", True, logged_in_sessions(world))
    phone = world.objects.phone
    open_item = phone.items.get(position=3)
    response = client.post(f"/rounds/{phone.pk}/3/save/", {"answer": "two\x00 caches", "scratch": "a\x00b"})
    assert response.status_code == 200
    open_item.refresh_from_db()
    assert (open_item.answer, open_item.scratch) == ("two\ufffd caches", "a\ufffdb")
    coach = client_for("coach", False, logged_in_sessions(world))
    assert coach.post("/coach/cohorts/new/", {"name": "Autumn\x00"}).status_code == 302
    assert Cohort.objects.filter(coach=world.objects.coach, name="Autumn\ufffd").exists()
    assert Client().get("/invite/ab%00cd/").status_code in (302, 404)


def test_superscript_digits_are_not_rubric_ticks(world):
    """``"²".isdigit()`` is true but ``int("²")`` fails: the tick parsers use isdecimal()."""
    client = client_for("candidate", True, logged_in_sessions(world))
    card = world.objects.open_card
    response = client.post(f"/review/card/{card.pk}/suggest/", {"ticked": ["²", "0", "١"]})
    assert response.status_code == 200
    assert b"(2 of 2 points)" in response.content
    phone = world.objects.phone
    assert client.post(f"/rounds/{phone.pk}/3/save/", {"answer": "x", "ticked": ["²", "0"]}).status_code == 200
    plain = client_for("candidate", False, logged_in_sessions(world))
    assert plain.post(f"/rounds/{phone.pk}/report/deck/", {"item": ["²", "9" * 40]}).status_code == 302


def test_a_bare_word_as_next_redirects_to_the_default(world):
    """``next=0`` made redirect() try to reverse a view named "0"; only site paths are followed now."""
    client = client_for("candidate", False, logged_in_sessions(world))
    response = client.post("/bank/deck/add/", {"item": world.objects.ladder.slug, "next": "0"})
    assert response.status_code == 302 and response["Location"] == "/review/"
    response = client.post("/bank/deck/remove/", {"item": world.objects.ladder.slug, "next": "home"})
    assert response.status_code == 302 and response["Location"] == f"/bank/{world.objects.ladder.slug}/"
    response = client.post("/bank/deck/add/", {"item": world.objects.ladder.slug, "next": "/bank/?q=kv"})
    assert response["Location"] == "/bank/?q=kv"


def test_rating_a_problem_card_by_hand_goes_back_to_the_card(world):
    """A rating posted for a problem template (graded by the rule, not rated) re-rendered it with the wrong form."""
    client = client_for("candidate", False, logged_in_sessions(world))
    card = world.objects.problem_card
    response = client.post(f"/review/card/{card.pk}/rate/", {"rating": "3", "version": card.version,
                                                            "answer": "x"})
    assert response.status_code == 302 and response["Location"] == f"/review/card/{card.pk}/"
