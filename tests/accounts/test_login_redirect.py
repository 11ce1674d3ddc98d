"""A log-in that interrupts an htmx request or a form post leads back to the page (issue 28, item 2).

The browser half (the typed answer kept in sessionStorage and put back after logging in) is
``tests/e2e/test_session_ended.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from django.contrib.staticfiles import finders
from django.template.loader import get_template
from django.test import Client

REVEAL = "/review/card/7/reveal/"


def next_of(url: str) -> str | None:
    parts = urlsplit(url)
    assert parts.path == "/accounts/login/"
    return parse_qs(parts.query).get("next", [None])[0]


class TestHtmx:
    def test_it_answers_a_full_page_redirect_to_log_in_with_next_the_page(self, db):
        response = Client().post(REVEAL, headers={
            "HX-Request": "true", "HX-Current-URL": "http://testserver/review/?deck=all"})

        assert response.status_code == 200  # htmx follows HX-Redirect only on a response it reads
        assert next_of(response["HX-Redirect"]) == "/review/?deck=all"
        assert response["HX-Trigger"] == "login-required"
        assert response.content == b""

    def test_a_page_on_another_site_is_never_the_next_address(self, db):
        response = Client().post(REVEAL, headers={
            "HX-Request": "true", "HX-Current-URL": "https://evil.example/phish/"})

        assert next_of(response["HX-Redirect"]) == "/"

    def test_without_hx_current_url_it_goes_home_after_log_in(self, db):
        response = Client().get("/progress/", headers={"HX-Request": "true"})

        assert next_of(response["HX-Redirect"]) == "/"

    def test_a_logged_in_htmx_request_is_untouched(self, candidate_client):
        response = candidate_client.get("/progress/", headers={
            "HX-Request": "true", "HX-Current-URL": "http://testserver/progress/"})

        assert response.status_code == 200
        assert "HX-Redirect" not in response


class TestStaleCsrfToken:
    def test_an_htmx_post_without_a_valid_token_is_refused_and_reloads_its_page(self, candidate):
        client = Client(enforce_csrf_checks=True)
        client.force_login(candidate)

        response = client.post(REVEAL, headers={"HX-Request": "true",
                                                "HX-Current-URL": "http://testserver/review/?deck=all"})

        assert response.status_code == 403  # still refused: the view never ran
        assert response["HX-Redirect"] == "/review/?deck=all"
        assert response["HX-Trigger"] == "login-required"

    def test_a_plain_post_without_a_token_gets_the_403_page_alone(self, candidate):
        client = Client(enforce_csrf_checks=True)
        client.force_login(candidate)

        response = client.post(REVEAL)

        assert response.status_code == 403 and "HX-Redirect" not in response


class TestPlainRequests:
    def test_a_form_post_logs_in_back_to_the_page_it_was_on(self, db):
        response = Client().post(REVEAL, headers={"Referer": "http://testserver/review/"})

        assert response.status_code == 302
        assert next_of(response["Location"]) == "/review/"

    def test_a_form_post_from_elsewhere_logs_in_to_the_home_page(self, db):
        response = Client().post(REVEAL, headers={"Referer": "https://evil.example/"})

        assert next_of(response["Location"]) == "/"

    def test_a_get_keeps_its_own_address_as_next(self, db):
        response = Client().get("/progress/?tab=charts")

        assert response.status_code == 302
        assert next_of(response["Location"]) == "/progress/?tab=charts"

    def test_logging_in_from_an_interrupted_post_lands_on_a_page_that_answers(self, candidate, password):
        client = Client()
        login_url = client.post(REVEAL, headers={"Referer": "http://testserver/review/"})["Location"]

        response = client.post(login_url, {"username": "alice", "password": password}, follow=True)

        assert response.redirect_chain[-1][0] == "/review/"
        assert response.status_code == 200


class TestServerErrorPage:
    def test_it_is_styled_from_a_stylesheet_not_an_inline_style(self):
        html = get_template("500.html").render()

        assert "<style" not in html and "style=" not in html
        assert "{#" not in html and "Standalone" not in html  # its comment stays a comment
        href = re.search(r'<link rel="stylesheet" href="/static/([^"]+)">', html).group(1)
        css = Path(finders.find(href)).read_text()
        assert "body.server-error" in css and 'class="server-error"' in html

    def test_it_renders_even_when_the_static_manifest_is_missing(self, settings):
        settings.STORAGES = {**settings.STORAGES, "staticfiles": {
            "BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"}}
        settings.STATIC_ROOT = "/nonexistent-static-root"

        html = get_template("500.html").render()

        assert '<link rel="stylesheet" href="/static/css/server-error.css">' in html


def test_the_script_that_keeps_typed_text_is_on_every_page(client, db):
    assert b'src="/static/js/keep-typed.js"' in client.get("/").content
    assert '"login-required"' in Path(finders.find("js/keep-typed.js")).read_text()
