"""Accounts: sign-up, log in and out, password change and reset, demo accounts."""

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.core import mail
from django.core.management import call_command
from django.http import HttpRequest
from django.test import Client
from django.utils import timezone

from tests.factories import UserFactory

User = get_user_model()

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-brand-new-passphrase-42"


def logged_in_user_id(client):
    """The id of the user the client's session is logged in as, or None."""
    value = client.session.get(SESSION_KEY)
    return int(value) if value is not None else None


class TestSignUp:
    def signup_data(self, **overrides):
        data = {
            "username": "dana",
            "email": "dana@example.com",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
        }
        data.update(overrides)
        return data

    def test_it_shows_a_form_with_username_email_and_password_twice(self, client):
        html = client.get("/accounts/signup/").content.decode()

        for name in ("username", "email", "password1", "password2"):
            assert f'name="{name}"' in html

    def test_a_username_over_40_characters_is_refused_with_its_length_and_kept(self, client):
        """A 200-character name was accepted and ran off the phone menu; 40 is the limit, said beside the box."""
        page = client.get("/accounts/signup/").content.decode()
        box = re.search(r'<input[^>]*name="username"[^>]*>', page).group(0)
        assert "maxlength" not in box  # a browser would cut a paste silently
        assert "Up to 40 characters: letters, digits and @ . + - _ (no spaces)." in page

        response = client.post("/accounts/signup/", self.signup_data(username="d" * 200))
        page = response.content.decode()
        assert response.status_code == 200 and not get_user_model().objects.filter(email="dana@example.com").exists()
        assert "A username may have at most 40 characters; this one has 200. Choose a shorter one." in page
        assert f'value="{"d" * 200}"' in page
        assert client.post("/accounts/signup/", self.signup_data(username="d" * 40)).status_code == 302

    def test_an_invitation_link_survives_signing_up(self, client):
        # Logged out, an invitation link leads to the login page; its sign-up link carries the link on, and
        # the new account lands on the invitation (its Join button), not on the home page.
        login_page = client.get("/accounts/login/", {"next": "/invite/abc123/"}).content.decode()
        assert 'href="/accounts/signup/?next=/invite/abc123/"' in login_page
        form = client.get("/accounts/signup/", {"next": "/invite/abc123/"}).content.decode()
        assert '<input type="hidden" name="next" value="/invite/abc123/">' in form
        response = client.post("/accounts/signup/", {**self.signup_data(), "next": "/invite/abc123/"})
        assert response.status_code == 302 and response["Location"] == "/invite/abc123/"

    def test_a_next_address_off_the_site_is_ignored(self, client):
        response = client.post("/accounts/signup/", {**self.signup_data(), "next": "https://evil.example/"})
        assert response["Location"] == "/"

    def test_it_creates_the_user_and_logs_them_in(self, client):
        response = client.post("/accounts/signup/", self.signup_data(), follow=True)

        user = User.objects.get(username="dana")
        assert user.email == "dana@example.com"
        assert user.check_password(NEW_PASSWORD)
        assert logged_in_user_id(client) == user.pk
        assert response.redirect_chain == [("/", 302)]
        assert "Welcome, dana" in response.content.decode()

    def test_it_refuses_mismatched_passwords_and_keeps_what_was_typed(self, client):
        response = client.post("/accounts/signup/", self.signup_data(password2="something-else-7"))

        assert response.status_code == 200
        assert not User.objects.filter(username="dana").exists()
        html = response.content.decode()
        assert "password fields didn" in html
        assert 'value="dana"' in html
        assert 'value="dana@example.com"' in html

    def test_a_weak_password_is_refused_under_the_password_not_its_confirmation(self, client):
        response = client.post("/accounts/signup/", self.signup_data(password1="password", password2="password"))

        errors = response.context["form"].errors
        assert "This password is too common." in errors["password1"]
        assert "password2" not in errors
        html = response.content.decode()
        assert html.index("This password is too common.") < html.index('name="password2"')

    def test_it_refuses_an_email_another_account_uses(self, client, candidate):
        response = client.post("/accounts/signup/", self.signup_data(email="ALICE@example.com"))

        assert response.status_code == 200
        assert "already exists" in response.content.decode()
        assert not User.objects.filter(username="dana").exists()

    def test_it_requires_an_email(self, client):
        response = client.post("/accounts/signup/", self.signup_data(email=""))

        assert response.status_code == 200
        assert not User.objects.filter(username="dana").exists()

    def test_it_sends_logged_in_users_home(self, candidate_client):
        response = candidate_client.get("/accounts/signup/")

        assert response.status_code == 302
        assert response["Location"] == "/"


class TestLoginRateLimit:
    """django-axes: AXES_FAILURE_LIMIT (10) failures lock a username out from an IP address."""

    def fail(self, client, times):
        return [
            client.post("/accounts/login/", {"username": "alice", "password": f"wrong-{i}"})
            for i in range(times)
        ]

    def test_it_is_configured_as_documented(self, settings):
        assert settings.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"
        assert settings.MIDDLEWARE[-1] == "axes.middleware.AxesMiddleware"
        assert settings.AXES_FAILURE_LIMIT == 10
        assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60

    def test_nine_failures_still_let_the_right_password_in(self, client, candidate, password):
        assert [r.status_code for r in self.fail(client, 9)] == [200] * 9

        response = client.post("/accounts/login/", {"username": "alice", "password": password})

        assert response.status_code == 302
        assert logged_in_user_id(client) == candidate.pk

    def test_eleven_wrong_passwords_lock_out_with_a_clear_page(self, client, candidate, password):
        responses = self.fail(client, 11)

        assert [r.status_code for r in responses[:9]] == [200] * 9
        assert [r.status_code for r in responses[9:]] == [429, 429]
        html = responses[-1].content.decode()
        assert "Too many login attempts" in html
        assert "10 failed attempts" in html
        assert "0:15:00" in html

        refused = client.post("/accounts/login/", {"username": "alice", "password": password})

        assert refused.status_code == 429
        assert "Too many login attempts" in refused.content.decode()
        assert logged_in_user_id(client) is None

    def test_the_lockout_is_per_username_and_address(self, client, candidate, coach, password):
        self.fail(client, 11)

        other_user = client.post("/accounts/login/", {"username": "carol", "password": password})
        assert other_user.status_code == 302

        other_ip = Client(REMOTE_ADDR="10.0.0.9").post(
            "/accounts/login/", {"username": "alice", "password": password}
        )
        assert other_ip.status_code == 302

    def test_the_right_password_works_again_after_the_cool_off(self, client, candidate, password):
        from axes.models import AccessAttempt

        self.fail(client, 11)
        AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))

        response = client.post("/accounts/login/", {"username": "alice", "password": password})

        assert response.status_code == 302
        assert logged_in_user_id(client) == candidate.pk


class TestLogInAndOut:
    def test_the_right_password_logs_in_and_goes_home(self, client, candidate, password):
        response = client.post("/accounts/login/", {"username": "alice", "password": password})

        assert response.status_code == 302
        assert response["Location"] == "/"
        assert logged_in_user_id(client) == candidate.pk

    def test_it_follows_next_after_logging_in(self, client, candidate, password):
        response = client.post(
            "/accounts/login/",
            {"username": "alice", "password": password, "next": "/drills/"},
        )

        assert response["Location"] == "/drills/"

    def test_a_wrong_password_shows_an_error(self, client, candidate):
        response = client.post("/accounts/login/", {"username": "alice", "password": "nope"})

        assert response.status_code == 200
        assert "Please enter a correct username and password" in response.content.decode()
        assert logged_in_user_id(client) is None

    def test_the_login_page_links_to_sign_up_and_password_reset(self, client):
        html = client.get("/accounts/login/").content.decode()

        assert 'href="/accounts/signup/"' in html
        assert 'href="/accounts/password_reset/"' in html

    def test_logging_out_takes_a_post_and_ends_the_session(self, candidate_client):
        response = candidate_client.post("/accounts/logout/")

        assert response.status_code == 200
        assert "registration/logged_out.html" in [t.name for t in response.templates]
        assert logged_in_user_id(candidate_client) is None

    def test_logging_out_refuses_get(self, candidate_client, candidate):
        assert candidate_client.get("/accounts/logout/").status_code == 405
        assert logged_in_user_id(candidate_client) == candidate.pk


class TestPasswordChange:
    def test_it_needs_a_login(self, client):
        response = client.get("/accounts/password_change/")

        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")

    def test_it_changes_the_password_and_keeps_the_user_logged_in(
        self, candidate_client, candidate, password
    ):
        response = candidate_client.post(
            "/accounts/password_change/",
            {
                "old_password": password,
                "new_password1": NEW_PASSWORD,
                "new_password2": NEW_PASSWORD,
            },
            follow=True,
        )

        assert response.redirect_chain == [("/accounts/password_change/done/", 302)]
        assert "Password changed" in response.content.decode()
        candidate.refresh_from_db()
        assert candidate.check_password(NEW_PASSWORD)
        assert logged_in_user_id(candidate_client) == candidate.pk

    def test_a_weak_new_password_is_refused_under_the_new_password(self, candidate_client, password):
        response = candidate_client.post("/accounts/password_change/", {
            "old_password": password, "new_password1": "12345678", "new_password2": "12345678"})

        errors = response.context["form"].errors
        assert "This password is entirely numeric." in errors["new_password1"]
        assert "new_password2" not in errors

    def test_a_wrong_old_password_changes_nothing(self, candidate_client, candidate, password):
        response = candidate_client.post(
            "/accounts/password_change/",
            {
                "old_password": "not-it",
                "new_password1": NEW_PASSWORD,
                "new_password2": NEW_PASSWORD,
            },
        )

        assert response.status_code == 200
        candidate.refresh_from_db()
        assert candidate.check_password(password)


class TestPasswordReset:
    def test_the_emailed_link_sets_a_new_password(self, client, candidate):
        response = client.post("/accounts/password_reset/", {"email": "alice@example.com"})
        assert response["Location"] == "/accounts/password_reset/done/"

        assert len(mail.outbox) == 1
        message = mail.outbox[0]
        assert message.to == ["alice@example.com"]
        assert message.subject == "Reset your LLM Serving Prep password"
        link = re.search(r"http://testserver(/accounts/reset/\S+/)", message.body).group(1)

        # Django swaps the token in the link for a session-held one and redirects.
        set_password_page = client.get(link, follow=True)
        assert set_password_page.context["validlink"] is True
        form_url = set_password_page.redirect_chain[-1][0]
        done = client.post(
            form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
        )

        assert done["Location"] == "/accounts/reset/done/"
        candidate.refresh_from_db()
        assert candidate.check_password(NEW_PASSWORD)
        assert client.login(request=HttpRequest(), username="alice", password=NEW_PASSWORD)

    def test_a_used_link_no_longer_works(self, client, candidate):
        client.post("/accounts/password_reset/", {"email": "alice@example.com"})
        link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)
        form_url = client.get(link, follow=True).redirect_chain[-1][0]
        client.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})

        response = client.get(link, follow=True)

        assert response.context["validlink"] is False
        assert "does not work any more" in response.content.decode()

    def test_an_unknown_address_sends_nothing_and_reveals_nothing(self, client, candidate):
        response = client.post("/accounts/password_reset/", {"email": "nobody@example.com"})

        assert response["Location"] == "/accounts/password_reset/done/"
        assert mail.outbox == []


class TestCreateDemoAccounts:
    def run_command(self):
        out = StringIO()
        call_command("create_demo_accounts", stdout=out)
        return out.getvalue()

    def test_it_creates_the_groups_and_both_demo_logins(self):
        output = self.run_command()

        assert set(Group.objects.values_list("name", flat=True)) >= {"coach", "candidate"}
        demo = User.objects.get(username="demo")
        coach = User.objects.get(username="coach")
        assert demo.check_password("demo-candidate-2026")
        assert coach.check_password("demo-coach-2026")
        assert list(demo.groups.values_list("name", flat=True)) == ["candidate"]
        assert list(coach.groups.values_list("name", flat=True)) == ["coach"]
        assert "demo / demo-candidate-2026" in output
        assert "coach / demo-coach-2026" in output

    def test_running_it_again_changes_nothing(self):
        self.run_command()
        snapshot = sorted(User.objects.values_list("username", "password", "is_active"))

        output = self.run_command()

        assert sorted(User.objects.values_list("username", "password", "is_active")) == snapshot
        assert Group.objects.filter(name__in=["coach", "candidate"]).count() == 2
        assert "created" not in output

    def test_it_restores_a_changed_demo_password(self, client):
        self.run_command()
        demo = User.objects.get(username="demo")
        demo.set_password("changed-during-a-demo-1")
        demo.save()

        output = self.run_command()

        assert "user demo: exists (password reset)" in output
        assert client.login(request=HttpRequest(), username="demo", password="demo-candidate-2026")

    def test_the_invitation_is_a_full_address_that_joins_the_demo_cohort(self, client, settings):
        settings.SITE_URL = "http://127.0.0.1:8017"
        output = self.run_command()

        (line,) = [line for line in output.splitlines() if line.startswith("Invitation")]
        url = line.rsplit(" ", 1)[1]
        assert re.fullmatch(r"http://127\.0\.0\.1:8017/invite/[\w-]+/", url)
        assert output.index("Demo logins:") < output.index(line)  # in the block bin/serve repeats
        client.force_login(UserFactory(username="erin"))
        assert client.get(url.removeprefix(settings.SITE_URL)).status_code == 200
