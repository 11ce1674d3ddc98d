"""Safe requests only read (issue 30, item 4): on a read-only database file every page a candidate opens renders.

The test logs a candidate in, makes the SQLite database file read-only (a write then fails inside SQLite, as
on a read-only replica), and requests every URL pattern of ``tests/url_table.py`` with GET, filled with the
candidate's own objects. Each answers as a page (200) or sends them on (302), never the "cannot save" page
(503) nor an error: reading a page writes nothing, not the session, the user's last login, axes' records, a
problem drawn from a seed, a round past its deadline or default review settings. A write then gets the 503
page, which shows back what was typed.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager

import pytest
from django.db import connection

from tests.url_table import TABLE, Post, Skip, build_world, fill, site_patterns

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite database file is made read-only")]

# A candidate's own pages among the coaching app's (the rest are a coach's: 403 to a candidate).
CANDIDATE_COACHING = ("coaching:my_assignments", "coaching:my_assignment", "coaching:invitation",
                      "coaching:start_timed", "coaching:start_entry")


def _coach_only(name: str) -> bool:
    return (name.startswith("coaching:") and name not in CANDIDATE_COACHING) or name.startswith("llm_grading:cohort")


# Not pages: a static file, the benchmark's floor, and the health check (which reports a read-only database).
NOT_PAGES = ("favicon", "floor", "healthz")
# Patterns the world fills with an id no object has (a lab run, a review result, a grading): a 404 page.
PLACEHOLDERS = ("lab:run", "reviews:result", "llm_grading:grading")


@contextmanager
def read_only_database():
    """The test database's file read-only for the block: its mode (for a process that is not root), and the
    connection reopened on it with SQLite's read-only flag (``mode=ro``, which holds for root too)."""
    settings = connection.settings_dict
    name, options = settings["NAME"], settings.get("OPTIONS", {})
    connection.close()  # the last connection's close checkpoints the WAL into the file
    mode = os.stat(name).st_mode
    os.chmod(name, stat.S_IRUSR | stat.S_IRGRP)
    settings["NAME"], settings["OPTIONS"] = f"file:{name}?mode=ro", {**options, "uri": True}
    try:
        yield
    finally:
        connection.close()
        settings["NAME"], settings["OPTIONS"] = name, options
        os.chmod(name, mode)


def _get_paths(world, candidate) -> list[tuple[str, str]]:
    """(pattern name, path) of every pattern a candidate may open, with the candidate's own objects."""
    # The candidate's own rounds, cards and calibrations, by table: one set of mixed ids let a stranger's round whose id
    # equalled one of the candidate's card ids through (a 404), depending on the ids earlier tests used.
    own = {"rounds:": {world.objects.phone.pk, world.objects.critique_round.pk},
           "reviews:": {world.objects.open_card.pk, world.objects.problem_card.pk},
           "lab:calibration": {world.objects.own_calibration.pk}}
    paths = []
    for name, route in sorted(site_patterns().items()):
        entry = TABLE.get(name)
        if entry is None or isinstance(entry, Skip) or _coach_only(name) or name in NOT_PAGES:
            continue
        choices = world.kwargs.get(name, [{}])
        for kwargs in choices:
            mine = next((pks for prefix, pks in own.items() if name.startswith(prefix)), None)
            if "pk" in kwargs and len(choices) > 1 and mine is not None and kwargs["pk"] not in mine:
                continue  # a stranger's round or card: a 404, not a page
            if kwargs.get("family") == "no-such-family" or kwargs.get("token") == "not-a-token":
                continue
            try:
                paths.append((name, fill(route, kwargs)))
            except KeyError:
                continue  # a pattern whose arguments the world does not name
    return paths


def test_every_page_a_candidate_opens_renders_on_a_read_only_database(client, candidate, coach):
    world = build_world(candidate, coach)
    client.force_login(candidate)
    client.get("/")  # a session opened before the read-only spell, as a browser's would be
    paths = _get_paths(world, candidate)
    assert len(paths) > 40

    with read_only_database():
        answered: dict[str, int] = {}
        for name, path in paths:
            response = client.get(path, follow=True)
            if response.status_code == 405 and isinstance(TABLE[name], Post):
                continue  # a form's target only: there is no page to open
            if response.status_code == 404 and name in PLACEHOLDERS:
                continue
            answered[path] = response.status_code
            assert response.status_code == 200, (name, path, response.status_code)
            assert b"We cannot save right now" not in response.content, (name, path)
        assert len(answered) > 40
        # A write fails, and its page gives back what was typed, so nothing is lost.
        card = world.objects.open_card
        typed = "Fewer KV heads: the cache shrinks by the group factor."
        response = client.post(f"/review/card/{card.pk}/rate/", {"version": card.version, "answer": typed,
                                                                  "rating": "3", "started": ""})
        assert response.status_code == 503
        assert "We cannot save right now" in response.content.decode() and typed in response.content.decode()
