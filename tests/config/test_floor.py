"""/_floor/, the benchmark's floor: off (404) unless BENCH_FLOOR, then a static page through the middleware."""

import pytest
from django.test import Client
from django.utils import timezone


@pytest.mark.django_db
def test_the_floor_is_a_404_unless_turned_on(client):
    assert client.get("/_floor/").status_code == 404


@pytest.mark.django_db
def test_the_floor_renders_its_static_template_through_the_middleware(settings, client,
                                                                      django_assert_num_queries):
    settings.BENCH_FLOOR = True
    with django_assert_num_queries(0):  # anonymous: nothing but the template
        response = client.get("/_floor/")

    assert response.status_code == 200
    assert b"<h1>Floor</h1>" in response.content
    assert response["X-Frame-Options"] == "DENY"  # the middleware stack ran
    assert client.post("/_floor/").status_code == 405


@pytest.mark.django_db
def test_a_signed_in_floor_costs_only_the_middleware_queries(settings, candidate, django_assert_num_queries):
    settings.BENCH_FLOOR = True
    member = Client()
    member.force_login(candidate)
    # Session and user: what every signed-in page pays (the time zone is kept in the session from login).
    with django_assert_num_queries(2):
        assert member.get("/_floor/").status_code == 200


@pytest.mark.django_db
def test_the_write_floor_inserts_one_expired_session_row_for_a_signed_in_post(settings, candidate,
                                                                              django_assert_num_queries):
    from django.contrib.sessions.models import Session

    member = Client(enforce_csrf_checks=True)
    assert member.post("/_floor/write/").status_code == 403  # the CSRF check runs first, on or off
    member.force_login(candidate)
    member.get("/accounts/login/")  # a page with a form: sets the CSRF cookie
    token = member.cookies["csrftoken"].value
    assert member.post("/_floor/write/", headers={"X-CSRFToken": token}).status_code == 404  # off
    settings.BENCH_FLOOR = True
    before = Session.objects.filter(session_key__startswith="floor-write-").count()
    # The session, its user, and the one INSERT in its transaction: inside the test's own transaction that
    # is a SAVEPOINT and its RELEASE (served, BEGIN and COMMIT).
    with django_assert_num_queries(5):
        response = member.post("/_floor/write/", headers={"X-CSRFToken": token})
    assert response.status_code == 200 and b'id="floor-write"' in response.content
    rows = Session.objects.filter(session_key__startswith="floor-write-")
    assert rows.count() == before + 1
    assert rows.get().expire_date <= timezone.now()  # already expired: clearsessions deletes it
    assert member.get("/_floor/write/").status_code == 405
    assert Client(enforce_csrf_checks=False).post("/_floor/write/").status_code == 404  # anonymous: nothing saved
    assert rows.count() == before + 1
