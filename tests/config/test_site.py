"""The site skeleton: home page, layout, health check, error pages, static files."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.messages import constants as message_levels
from django.contrib.messages.storage.base import Message
from django.contrib.staticfiles import finders
from django.template.loader import get_template, render_to_string
from django.test import RequestFactory
from django.views.defaults import server_error

from tests.paths import REPO_ROOT

BASE_DIR = REPO_ROOT


@pytest.mark.django_db
class TestHomePage:
    def test_it_describes_the_product_and_links_to_calculators_and_drills(self, client):
        response = client.get("/")

        assert response.status_code == 200
        assert "home.html" in [t.name for t in response.templates]
        html = response.content.decode()
        assert "LLM Serving Prep" in html
        assert 'href="/calculators/ladder/"' in html
        assert 'href="/drills/"' in html

    def test_the_menu_and_footer_open_the_calculators_index_the_simulator_and_the_lab(self, client):
        html = client.get("/").content.decode()
        menu = html.split('<ul class="navbar-nav me-auto">', 1)[1].split("</ul>", 1)[0]
        footer = html.split('<footer', 1)[1]

        assert re.findall(r'href="([^"]+)"', menu) == ["/runbook/", "/calculators/", "/simulator/", "/lab/",
                                                       "/drills/"]
        assert 'href="/calculators/">Calculators</a>' in footer and "/calculators/ladder/" not in footer
        assert 'href="/simulator/">Simulator</a>' in footer and 'href="/lab/">Lab</a>' in footer

    def test_no_template_holds_a_comment_over_several_lines(self):
        """``{# … #}`` ends on its own line: one spread over two lines is printed on the page as text."""
        spread = [str(path.relative_to(BASE_DIR)) for path in (BASE_DIR / "templates").rglob("*.html")
                  if re.search(r"\{#(?:(?!#\}).)*\n", path.read_text())]
        assert spread == []

    def test_it_offers_log_in_and_sign_up_to_visitors(self, client):
        html = client.get("/").content.decode()

        assert 'href="/accounts/login/"' in html
        assert 'href="/accounts/signup/"' in html
        assert 'action="/accounts/logout/"' not in html

    def test_it_shows_the_username_and_a_post_logout_form_when_logged_in(self, candidate_client):
        html = candidate_client.get("/").content.decode()

        assert "alice" in html
        assert re.search(r'<form method="post" action="/accounts/logout/"', html)
        assert 'href="/accounts/signup/"' not in html

    def test_it_loads_only_local_css_and_scripts(self, client):
        html = client.get("/").content.decode()

        sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html)
        assert any(s.endswith("vendor/bootstrap/css/bootstrap.min.css") for s in sources)
        assert any(s.endswith("vendor/bootstrap/js/bootstrap.bundle.min.js") for s in sources)
        assert any("django_htmx/htmx-2" in s for s in sources), "htmx comes from django-htmx"
        assert all(s.startswith("/") for s in sources), sources

    def test_it_gives_htmx_the_csrf_token(self, client):
        response = client.get("/")

        token = response.cookies["csrftoken"].value
        match = re.search(r"hx-headers='(\{[^']*\})'", response.content.decode())
        assert match
        assert len(json.loads(match.group(1))["X-CSRFToken"]) == 64
        assert token  # the page set the cookie the token belongs to

    def test_it_is_mobile_friendly(self, client):
        html = client.get("/").content.decode()

        assert 'name="viewport"' in html
        assert "navbar-toggler" in html

    def test_htmx_requests_are_recognised(self, htmx_client):
        response = htmx_client.get("/")

        assert response.status_code == 200
        assert response.wsgi_request.htmx
        assert not response.wsgi_request.htmx.boosted

    def test_it_refuses_post(self, client):
        assert client.post("/").status_code == 405


class TestMessagesPartial:
    def test_the_messages_area_renders_alone_for_htmx_swaps(self):
        html = render_to_string(
            "base.html#messages",
            {"messages": [Message(message_levels.ERROR, "Could not save.")]},
        )

        assert 'id="messages"' in html
        assert "alert-danger" in html
        assert "Could not save." in html
        assert "<nav" not in html

    def test_partial_tags_need_no_load(self):
        from django.template import engines

        template = engines["django"].from_string(
            "{% partialdef greeting %}hi {{ name }}{% endpartialdef %}[{% partial greeting %}]"
        )
        assert template.render({"name": "bob"}) == "[hi bob]"


@pytest.mark.django_db
class TestHealthz:
    def test_it_answers_200_when_the_database_answers(self, client):
        response = client.get("/healthz")

        assert response.status_code == 200
        assert response.json() == {"status": "ok", "database": "ok"}
        assert "no-cache" in response["Cache-Control"]

    def test_it_answers_503_when_the_database_is_unreachable(self, tmp_path):
        # A real unreachable database: SQLite cannot open a file in a missing directory.
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{tmp_path}/missing-dir/db.sqlite3",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        env.pop("DEBUG", None)
        script = (
            "import django; django.setup();"
            "from django.test import Client;"
            "r = Client().get('/healthz');"
            "print(r.status_code, r.content.decode())"
        )
        result = subprocess.run(
            [sys.executable, "-c", script],
            cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120,
        )

        assert result.returncode == 0, result.stderr
        status, body = result.stdout.strip().splitlines()[-1].split(" ", 1)
        assert status == "503"
        assert json.loads(body) == {"status": "error", "database": "unreachable"}


@pytest.mark.django_db
class TestErrorPages:
    def test_an_unknown_address_gets_our_404_page(self, client):
        response = client.get("/no-such-page/")

        assert response.status_code == 404
        assert "404.html" in [t.name for t in response.templates]
        assert b"Page not found" in response.content
        assert b'href="/"' in response.content

    def test_the_500_page_renders_without_any_context(self):
        assert "Something went wrong" in get_template("500.html").render()

    def test_the_500_handler_uses_our_page(self):
        response = server_error(RequestFactory().get("/"))

        assert response.status_code == 500
        assert b"Something went wrong on our side" in response.content

    def test_the_403_page_asks_visitors_to_log_in(self, rf):
        from django.contrib.auth.models import AnonymousUser
        from django.core.exceptions import PermissionDenied
        from django.views.defaults import permission_denied

        request = rf.get("/drills/secret/")
        request.user = AnonymousUser()
        response = permission_denied(request, PermissionDenied())

        assert response.status_code == 403
        assert b"log in" in response.content

    def test_a_form_address_opened_directly_gets_our_405_page(self, candidate_client):
        # Starting a round is a form's target only: reloaded or bookmarked, it was a blank 405.
        response = candidate_client.get("/rounds/start/capacity/")

        assert response.status_code == 405
        assert response["Allow"] == "POST"
        assert "405.html" in [t.name for t in response.templates]
        html = response.content.decode()
        assert "This address takes a form submission" in html
        assert 'href="/"' in html  # no Referer: the home page

    def test_the_405_page_links_back_to_the_page_the_visitor_came_from(self, candidate_client):
        response = candidate_client.get("/rounds/start/capacity/", HTTP_REFERER="http://testserver/rounds/")

        assert response.status_code == 405
        assert 'href="http://testserver/rounds/"' in response.content.decode()

    def test_the_405_page_does_not_link_back_to_another_site(self, candidate_client):
        response = candidate_client.get("/rounds/start/capacity/", HTTP_REFERER="https://evil.example/")

        assert response.status_code == 405
        assert "evil.example" not in response.content.decode()

    def test_a_405_with_its_own_body_is_left_alone(self, client):
        # The JSON API words its own refusals.
        response = client.put("/api/v1/calc/ladder/")

        assert response.status_code == 405
        assert "405.html" not in [t.name for t in response.templates]


class TestRequestLog:
    """A refusal (403, 404) is one line in the server log; a server error keeps its traceback."""

    def test_a_403_logs_one_line_without_the_traceback(self, candidate_client, caplog):
        with caplog.at_level("WARNING", logger="django.request"):
            response = candidate_client.get("/coach/")

        assert response.status_code == 403
        records = [r for r in caplog.records if r.name == "django.request"]
        assert [r.getMessage() for r in records] == ["Forbidden (Permission denied): /coach/"]
        assert records[0].exc_info is None
        assert "Traceback" not in caplog.text and "This page is for coaches." not in caplog.text

    def test_a_404_logs_one_line_without_the_traceback(self, candidate_client, caplog):
        with caplog.at_level("WARNING", logger="django.request"):
            response = candidate_client.get("/review/card/999999/")

        assert response.status_code == 404
        records = [r for r in caplog.records if r.name == "django.request"]
        assert [r.getMessage() for r in records] == ["Not Found: /review/card/999999/"]
        assert "Traceback" not in caplog.text

    def test_a_500_keeps_its_traceback(self, caplog):
        from django.core.handlers.exception import response_for_exception

        request = RequestFactory().get("/boom/")
        try:
            raise RuntimeError("boom")
        except RuntimeError as error:  # Django's own handling of an uncaught exception, logging included
            with caplog.at_level("ERROR", logger="django.request"):
                response = response_for_exception(request, error)

        assert response.status_code == 500
        records = [r for r in caplog.records if r.name == "django.request"]
        assert [r.getMessage() for r in records] == ["Internal Server Error: /boom/"]
        assert records[0].exc_info is not None
        assert "Traceback" in caplog.text and "RuntimeError: boom" in caplog.text


class TestStaticFiles:
    @pytest.mark.parametrize(
        "path",
        [
            "vendor/bootstrap/css/bootstrap.min.css",
            "vendor/bootstrap/js/bootstrap.bundle.min.js",
            "vendor/bootstrap/LICENSE",
            "css/app.css",
            "django_htmx/htmx-2.min.js",
        ],
    )
    def test_it_is_found_locally(self, path):
        assert finders.find(path), path

    def test_bootstrap_is_version_5(self):
        css = Path(finders.find("vendor/bootstrap/css/bootstrap.min.css")).read_text()
        assert re.match(r"@charset \"UTF-8\";/\*!\s+\* Bootstrap\s+v5\.", css)


class TestFavicon:
    def test_every_page_links_the_icon_and_favicon_ico_leads_to_it(self, client, db):
        home = client.get("/").content.decode()
        assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in home

        response = client.get("/favicon.ico")

        assert response.status_code == 301 and response["Location"] == "/static/img/favicon.svg"
        from django.contrib.staticfiles import finders

        assert "<svg" in Path(finders.find("img/favicon.svg")).read_text()
