"""A logged-out visitor opening an invitation link is asked to log in on a page that names the cohort and the
coach who invited them, and offers "Create an account" keeping ``next``; an invalid link tells nothing."""

from __future__ import annotations

import html
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.utils import timezone

from coaching.models import Invitation
from tests.factories import CohortFactory

pytestmark = pytest.mark.django_db

NOTE = "carol invited you to join the cohort “Spring”. Log in, or create an account, to accept."


@pytest.fixture
def invitation(coach):
    return Invitation.objects.create(cohort=CohortFactory(coach=coach, name="Spring"))


def _page(client, url: str) -> str:
    return html.unescape(client.get(url, follow=True).content.decode())


def test_the_login_page_names_the_cohort_and_coach_and_offers_an_account_keeping_next(client, invitation):
    link = invitation.get_absolute_url()
    page = _page(client, link)  # sent to the login page with next=the invitation
    assert 'id="next-note"' in page and NOTE in page
    assert f'href="/accounts/signup/?next={quote(link, safe="")}"' in page or \
        f'href="/accounts/signup/?next={quote(link)}"' in page
    signup = _page(client, f"/accounts/signup/?next={quote(link)}")
    assert NOTE in signup and f'name="next" value="{link}"' in signup


@pytest.mark.parametrize("spoil", ["revoked", "expired", "unknown"])
def test_an_invalid_invitation_tells_nothing(client, invitation, spoil):
    link = invitation.get_absolute_url()
    if spoil == "revoked":
        Invitation.objects.filter(pk=invitation.pk).update(revoked=True)
    elif spoil == "expired":
        Invitation.objects.filter(pk=invitation.pk).update(expires_at=timezone.now() - timedelta(days=1))
    else:
        link = link.replace(invitation.token, "not-a-token")
    page = _page(client, f"/accounts/login/?next={quote(link)}")
    assert 'id="next-note"' not in page and "Spring" not in page and "carol" not in page


def test_any_other_next_adds_no_note(client):
    assert 'id="next-note"' not in _page(client, "/accounts/login/?next=/review/")
    assert 'id="next-note"' not in _page(client, "/accounts/login/?next=/no/such/page/")
