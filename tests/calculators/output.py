"""Reading what a calculator family gives out: ``manage.py calc FAMILY --json`` and ``/calculators/<slug>/``.

Shared by tests/calculators/test_calc_command.py and the family tests of tests/drills/problems/.
"""

from __future__ import annotations

import html
import io
import json
import re

from django.core.management import call_command

# Every unit a step of any family may carry (docs/architecture.md §10).
STEP_UNITS = {"B", "GiB", "GB", "GB/s", "FLOP", "FLOP/s", "FLOP/byte", "tok", "tok/s", "s", "ms", "users",
              "GPUs", "nodes", "replicas", "USD", "USD/h", "USD/Mtok", "1"}


def calc_json(*args: str) -> dict:
    """The parsed output of ``manage.py calc ARGS --json``, run in this process."""
    out = io.StringIO()
    call_command("calc", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def values(payload: dict) -> dict:
    """Step key → value of a ``calc --json`` payload."""
    return {step["key"]: step["value"] for step in payload["steps"]}


def check_contract(payload: dict, family: str, keys: list[str], *, labels: bool = False, notes: bool = False,
                   sentences: bool = False) -> dict:
    """Assert docs/architecture.md §10's shape of a ``calc --json`` payload; return its values by step key.

    Always: the four top-level keys in order, the family, a dict of inputs, the step ``keys`` in order, each
    step's six fields with a known unit, a number (never a bool), its formula and substitution, and every note
    a non-empty string. ``labels``: every step's label is non-empty too; ``notes``: there is at least one note;
    ``sentences``: every note ends with a full stop.
    """
    assert list(payload) == ["family", "inputs", "steps", "notes"]
    assert payload["family"] == family
    assert isinstance(payload["inputs"], dict)
    assert [step["key"] for step in payload["steps"]] == keys
    for step in payload["steps"]:
        assert list(step) == ["key", "label", "value", "unit", "formula", "substituted"]
        assert step["unit"] in STEP_UNITS
        assert isinstance(step["value"], (int, float)) and not isinstance(step["value"], bool)
        assert step["formula"].startswith(f"{step['key']} = ")
        assert " = " in step["substituted"]
        if labels:
            assert step["label"]
    assert all(isinstance(note, str) and note for note in payload["notes"])
    if notes:
        assert payload["notes"]
    if sentences:
        assert all(note.endswith(".") for note in payload["notes"])
    return values(payload)


def step_value(page: str, key: str) -> str:
    """The displayed value of step ``key`` on a calculator page (``"167 users"``)."""
    block = page.split(f'id="step-{key}"', 1)[1]
    return re.search(r'<div class="calc-value">\s*<span class="tabular-nums">([^<]*)</span>', block).group(1)


def step_keys(page: str) -> list[str]:
    """The keys of the steps a calculator page lists, in order."""
    return re.findall(r'<li id="step-([a-z_]+)" class="calc-step', page)


def field_error(page: str, name: str) -> str:
    """The text of the error shown beside field ``name`` (fails when the page has no place for one)."""
    match = re.search(rf'<div id="error-{name}"[^>]*>(.*?)</div>', page, re.S)
    assert match, f"no error container for {name}"
    return html.unescape(re.sub(r"<[^>]+>", "", match.group(1))).strip()
