"""Fixtures for the end-to-end browser tests (issue 12).

The app is served by pytest-django's ``live_server`` on loopback, with the runbook content loaded into the
(transactional) test database; Playwright's sync API drives Debian's ``/usr/bin/chromium``. A failing test
saves a full-page screenshot of every page it opened to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests import needs

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# The reference stack (docs/architecture.md §2): Llama-3.1-8B bf16 on one H100 SXM, 53 users worst case, 191 paged.
REFERENCE_INPUTS = {
    "model": "llama-3.1-8b", "gpu": "h100-sxm5-80gb", "gpus": 1, "weights_dtype": "bf16",
    "kv_dtype": "bf16", "context": 8192, "utilization": 0.9, "reserve_gib": 3.0, "avg_tokens": 2300,
    "block_size": 16,
}


def catalog_entry(kind: str, entry_id: str) -> dict:
    """One object of ``fixtures/catalog/{kind}.json``, read straight from the file."""
    from django.conf import settings

    entries = json.loads((settings.BASE_DIR / "fixtures" / "catalog" / f"{kind}.json").read_text())
    return next(entry for entry in entries if entry["id"] == entry_id)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item (``item.rep_setup``, ``item.rep_call``) for the fixtures."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module.

    Playwright's sync API keeps an asyncio loop running in the test thread while it is open, which makes
    Django refuse ORM calls there (and makes a second ``sync_playwright()`` refuse to start): the loop lives
    only as long as this module's tests, and ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set only for as long as it runs,
    so neither leaks into the rest of the suite (``check --deploy`` warns about that variable).
    """
    sync_api = needs.module("playwright.sync_api")
    needs.file(CHROMIUM, "apt-get install chromium (.ci/run installs it)")
    saved = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield browser
            finally:
                browser.close()
    finally:
        if saved is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved


@pytest.fixture
def content(transactional_db, settings):
    """The runbook, glossary, errata, questions and catalog from ``fixtures/`` in the test database."""
    from runbook.loading import load_content

    load_content(settings.BASE_DIR / "fixtures")


@pytest.fixture
def new_context(browser, request):
    """Make browser contexts (``new_context(java_script_enabled=False)``); screenshots on failure, closed after."""
    contexts = []

    def make(**options):
        options.setdefault("viewport", {"width": 1280, "height": 900})
        context = browser.new_context(**options)
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    try:
        if failed:
            ARTIFACTS.mkdir(exist_ok=True)
            stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
            index = 0
            for context in contexts:
                for page in context.pages:
                    index += 1
                    try:
                        page.screenshot(path=str(ARTIFACTS / f"{stem}-{index}.png"), full_page=True)
                    except Exception:  # a crashed page must not hide the test's own failure
                        pass
    finally:
        for context in contexts:
            context.close()


@pytest.fixture
def page(new_context):
    """A page in a fresh JavaScript-enabled context."""
    return new_context().new_page()


# A problem a visitor may open: drawn from its seed on every read, stored by nobody. A stored problem is its
# owner's page only (d3ef58c: a visitor is sent to log in, anyone else gets a 404), so pages a visitor sees use this.
DRAWN_PROBLEM = "/drills/ladder/new/?seed=0"


@pytest.fixture
def problem_owner(candidate):
    """Who owns :func:`reference_problem`: the candidate who drives the test (a module whose driver is not its
    ``candidate`` fixture overrides this)."""
    return candidate


@pytest.fixture
def reference_problem(content, problem_owner):
    """A ladder problem on the reference stack (53 users worst case, 191 paged), stored by ``problem_owner``:
    only they may open it (log in as them first)."""
    from drills.models import ProblemInstance
    from drills.problems.generation import GENERATOR_VERSION

    return ProblemInstance.objects.create(
        family="ladder", seed=0, generator_version=GENERATOR_VERSION, inputs=dict(REFERENCE_INPUTS),
        created_by=problem_owner,
        snapshot={"models": [catalog_entry("models", "llama-3.1-8b")],
                  "gpus": [catalog_entry("gpus", "h100-sxm5-80gb")]})
