"""The JSON API against its own OpenAPI document, with schemathesis.

schemathesis reads ``/api/v1/schema/`` from the real WSGI application (no
server, no mocks: every case goes through Django's middleware and views) and
generates requests for every operation: valid inputs from the schema and, in
its negative phases, inputs the schema forbids. Each response must pass:

- ``not_a_server_error``: never a 5xx;
- ``status_code_conformance``: the status is one the operation documents;
- ``response_schema_conformance``: the body matches the documented schema for
  that status (errors included);
- ``content_type_conformance``: the ``Content-Type`` is the documented one.

Examples per operation: 25, or ``SCHEMATHESIS_MAX_EXAMPLES``.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25"))
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance, content_type_conformance]


# Loaded at collection, from the application itself (the schema view needs no database).
# Not schemathesis.pytest.from_fixture: its lazy loader reads ``request.node._nodeid``,
# which pytest 9 no longer has.
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())


@pytest.fixture
def no_connection_recycling():
    """Keep Django's handler from recycling database connections around each request, as its test client does.

    schemathesis drives the real ``WSGIHandler``, whose ``request_started`` and
    ``request_finished`` signals run ``close_old_connections``: with a connection
    left open by an earlier test, its health check is a database query, which
    pytest-django refuses in a test without the database (the API needs none).
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def short_simulations(settings):
    """Keep each generated /api/v1/simulate/ call short: a run past 20,000 engine steps is its documented 400."""
    settings.SIMULATOR_WEB_MAX_STEPS = 20_000


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_api_conforms_to_its_schema(case, no_connection_recycling):
    """Every generated request gets a documented status, a documented body and content type, never a 5xx."""
    case.call_and_validate(checks=CHECKS)


def test_the_schema_lists_every_api_operation():
    """schemathesis sees every operation the API serves (one the schema lost would go untested)."""
    from calculators.families import FAMILIES

    operations = {(op.ok().method.upper(), op.ok().path) for op in schema.get_all_operations()}
    expected = {("GET", "/api/v1/"), ("GET", "/api/v1/models/"), ("GET", "/api/v1/models/{id}/"),
                ("GET", "/api/v1/gpus/"), ("GET", "/api/v1/gpus/{id}/"), ("GET", "/api/v1/families/"),
                ("GET", "/api/v1/families/{family}/")}
    expected |= {(method, f"/api/v1/calc/{slug}/") for slug in FAMILIES for method in ("GET", "POST")}
    expected |= {("GET", "/api/v1/simulate/"), ("POST", "/api/v1/simulate/"),
                 ("GET", "/api/v1/simulate/results/{id}/")}
    assert operations == expected
