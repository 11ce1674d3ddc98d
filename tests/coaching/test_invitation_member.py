"""An invitation opened by someone already in the cohort says so instead of offering "Join" (issue 20)."""

from __future__ import annotations

import pytest

from coaching.models import Invitation
from tests.factories import CohortFactory, MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def invitation(coach):
    cohort = CohortFactory(coach=coach, name="Spring")
    return Invitation.objects.create(cohort=cohort)


def test_a_member_is_told_they_are_already_in_the_cohort(candidate_client, candidate, invitation):
    first = candidate_client.get(invitation.get_absolute_url()).content.decode()
    assert "Join the cohort</button>" in first and 'id="already-member"' not in first
    MembershipFactory(cohort=invitation.cohort, candidate=candidate)
    again = candidate_client.get(invitation.get_absolute_url()).content.decode()
    assert 'id="already-member"' in again and "You are already a member of this cohort" in again
    assert "Join the cohort</button>" not in again and "<title>Join" not in again


def test_the_coach_opening_their_own_link_is_not_offered_to_join(coach_client, invitation):
    page = coach_client.get(invitation.get_absolute_url()).content.decode()
    assert 'id="own-cohort"' in page and "Join the cohort</button>" not in page
