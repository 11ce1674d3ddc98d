"""CSRF audit: every POST endpoint refuses a request without a token; htmx posts carry one.

The POST endpoints are those of ``tests/url_table.py`` (built from the URLconf;
``tests/config/test_fuzz_forms.py`` fails when a URL is missing from it), plus the
admin's login. Each is posted to with ``Client(enforce_csrf_checks=True)`` —
anonymous and logged in, plain and with ``HX-Request: true`` — and must answer
403. As a control, the same post with the token the page put in
``<body hx-headers='{"X-CSRFToken": …}'>`` (what htmx sends) is not refused.
The only ``csrf_exempt`` views are the JSON API's, each justified below.
"""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from tests.paths import REPO_ROOT
from tests.url_table import TABLE, Post, build_world, fill, post_endpoints, site_patterns, url_patterns

pytestmark = pytest.mark.django_db

TEMPLATES_DIR = REPO_ROOT / "templates"
HX_HEADERS = re.compile(r"""<body[^>]*\shx-headers='([^']*)'""")

# Views allowed to skip CSRF, and why: the JSON API keeps no session state and
# changes nothing (every view is a read or a pure computation; POST /calc/ only
# carries a pasted config.json too long for a query string). A forged request
# can do nothing a plain GET could not; with the check, a token-less POST would
# get Django's HTML 403 instead of the API's JSON 405/400.
EXEMPT = {
    "api:index": "read-only catalog",
    "api:schema": "read-only OpenAPI document",
    "api:models": "read-only catalog",
    "api:model": "read-only catalog",
    "api:gpus": "read-only catalog",
    "api:gpu": "read-only catalog",
    "api:families": "read-only catalog",
    "api:family": "read-only catalog",
    "api:calc": "pure computation: stores nothing, reads no session",
    "api:simulate": "pure computation: reads no session; only caches its result under the inputs' hash",
    "api:simulate_result": "read-only: a queued simulation's outcome, looked up by its unguessable id",
    "api:not_found": "JSON 404 for any other /api/v1/ path",
}


@pytest.fixture
def world(candidate, coach):
    """Real objects for the URLs' ids (tests/url_table.py)."""
    return build_world(candidate, coach)


def _paths(world) -> list[tuple[str, str]]:
    routes = site_patterns()
    found = [(name, fill(routes[name], (world.kwargs.get(name) or [{}])[0])) for name in post_endpoints()]
    return found + [("admin:login", reverse("admin:login"))]


def _token_from_page(client: Client) -> str:
    """The CSRF token a page gives htmx, read from ``<body hx-headers=…>``."""
    page = client.get(reverse("home"))
    assert page.status_code == 200
    match = HX_HEADERS.search(page.content.decode())
    assert match, "base.html's <body> has no hx-headers attribute"
    headers = json.loads(match.group(1))
    assert set(headers) == {"X-CSRFToken"} and len(headers["X-CSRFToken"]) >= 32, headers
    return headers["X-CSRFToken"]


@pytest.mark.parametrize("role", ["anonymous", "candidate", "coach"])
@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_every_post_endpoint_refuses_a_post_without_token(world, role, htmx):
    """403 from every POST endpoint when the CSRF token is missing (the view never runs)."""
    client = Client(enforce_csrf_checks=True, headers={"HX-Request": "true"} if htmx else {})
    if role != "anonymous":
        client.force_login(getattr(world.objects, role))
    accepted = {}
    for name, path in _paths(world):
        response = client.post(path, {"title": "forged", "name": "forged", "item": "kv-formula"})
        if response.status_code != 403:
            accepted[name] = response.status_code
    assert not accepted, f"accepted a POST without a CSRF token: {accepted}"


def test_a_wrong_token_is_refused_too(world):
    """A token that is not the session's (a forger's guess) is as good as none."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.objects.candidate)
    _token_from_page(client)
    response = client.post(reverse("reviews:settings"), {"time_zone": "UTC"}, headers={"X-CSRFToken": "x" * 64})
    assert response.status_code == 403


def test_the_token_htmx_sends_is_accepted_everywhere(world, coach):
    """The control: with the page's token in ``X-CSRFToken`` no endpoint answers 403 (a superuser passes all)."""
    coach.is_superuser = True  # staff status alone passes no coach check (DESIGN §7)
    coach.save(update_fields=["is_superuser"])
    refused = {}
    for name, path in _paths(world):
        client = Client(enforce_csrf_checks=True, headers={"HX-Request": "true"})
        client.force_login(coach)
        token = _token_from_page(client)
        response = client.post(path, {}, headers={"X-CSRFToken": token})
        if response.status_code == 403:
            refused[name] = response.content.decode()[:200]
    assert not refused, f"refused although the token was sent: {refused}"


@pytest.mark.parametrize("logged_in", [False, True])
def test_every_page_gives_htmx_the_csrf_token(candidate, logged_in):
    """``base.html`` puts the session's token on ``<body>`` for every htmx request of the page."""
    client = Client(enforce_csrf_checks=True)
    if logged_in:
        client.force_login(candidate)
    token = _token_from_page(client)
    # The token is the one the middleware checks: the cookie was set by the same response.
    assert settings.CSRF_COOKIE_NAME in client.cookies
    assert client.post(reverse("logout")).status_code == 403
    response = client.post(reverse("logout"), headers={"X-CSRFToken": token})
    assert response.status_code == 200 and b"logged out" in response.content.lower()


def test_every_template_that_posts_with_htmx_extends_base():
    """A template with ``hx-post`` (or put/patch/delete) sits inside base.html's ``<body hx-headers>``: it
    extends base.html, or it is a partial that only templates inside base.html include."""
    texts = {str(path.relative_to(TEMPLATES_DIR)): path.read_text() for path in TEMPLATES_DIR.rglob("*.html")}

    def inside_base(name: str, seen: frozenset = frozenset()) -> bool:
        if re.search(r'{%\s*extends\s+"base\.html"', texts[name]):
            return True
        includers = [other for other, text in texts.items()
                     if re.search(r'{%\s*include\s+"' + re.escape(name) + '"', text) and other not in seen]
        return bool(includers) and all(inside_base(other, seen | {name}) for other in includers)

    orphans = [name for name, text in texts.items()
               if re.search(r"\shx-(post|put|patch|delete)=", text) and not inside_base(name)]
    assert not orphans, f"htmx posts outside base.html (no CSRF header): {orphans}"
    base = (TEMPLATES_DIR / "base.html").read_text()
    assert """hx-headers='{"X-CSRFToken": "{{ csrf_token }}"}'""" in base


def test_only_the_justified_views_are_csrf_exempt():
    """Every ``csrf_exempt`` view of the URLconf is listed in EXEMPT with its reason, and nothing else is."""
    exempt = {name or route for route, name, view in url_patterns() if getattr(view, "csrf_exempt", False)}
    assert exempt == set(EXEMPT)
    assert not exempt & set(TABLE), "a view of the fuzz table is csrf_exempt"
    assert all(isinstance(TABLE[name], Post) for name in post_endpoints())
