"""Fixtures of the grading tests: the local chat-completions server, a real design prompt, an endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from drills.models import BankItem
from drills.reviews.scheduling import RUBRIC_RULE
from llm_grading.models import Endpoint
from tests.llm_grading.chat_server import REPLIES, ChatServer, Reply, completion

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-local-test-5f1e0c9a7b"
#: Where a test's answers are written, and the review scale's rule, as the drills pages pass them.
PLACE = {"page_url": "/drills/design/design-capacity-math/#your-answer", "score_rule": RUBRIC_RULE}


def design_entry(slug: str = "design-capacity-math") -> dict:
    """A design prompt as fixtures/questions/design.yaml writes it."""
    entries = yaml.safe_load((ROOT / "fixtures" / "questions" / "design.yaml").read_text())
    return next(entry for entry in entries if entry["slug"] == slug)


@pytest.fixture
def design_item(db) -> BankItem:
    """The capacity-math design prompt, with its six rubric points, as load_content stores it."""
    entry = design_entry()
    return BankItem.objects.create(kind=BankItem.DESIGN, slug=entry["slug"], prompt=entry["prompt"],
                                   model_answer=entry.get("model_answer", ""), rubric=entry["rubric"],
                                   details=entry["details"], topic=entry["topic"], difficulty=entry["difficulty"])


@pytest.fixture
def recorded_grade() -> dict:
    """The answer and the reply content recorded for the capacity-math prompt (6 points: 2 met, 2 partly)."""
    return json.loads((REPLIES / "design_capacity_math_grade.json").read_text())


@pytest.fixture
def chat_server(recorded_grade):
    """The chat-completions server; model ``grader`` answers with the recorded grade."""
    with ChatServer() as server:
        server.replies["grader"] = Reply(200, completion(recorded_grade["content"]))
        yield server


@pytest.fixture
def endpoint(candidate, chat_server) -> Endpoint:
    """alice's own endpoint: the local server, model ``grader``, the key ``KEY`` (encrypted)."""
    row = Endpoint(owner=candidate, base_url=chat_server.base_url, model="grader")
    row.set_api_key(KEY)
    row.save()
    return row
