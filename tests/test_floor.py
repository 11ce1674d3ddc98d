"""/_floor/, the benchmark's floor: off (404) unless BENCH_FLOOR, then a static page through the middleware."""

import pytest
from django.test import Client


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
