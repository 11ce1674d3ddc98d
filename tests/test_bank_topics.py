"""The bank's topics are a curated list (issue 20, item 8): every spelling of a subject is filed under one name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from calculators.families import FAMILIES
from drills.bank.topics import NAMES, curated_topic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "questions"


def written_topics() -> set[str]:
    found = set()
    for path in FIXTURES.iterdir():
        found |= {m.strip().strip("\"'") for m in re.findall(r"^\s*topic: (.*)$", path.read_text(), re.M)}
    return found


def test_spellings_of_one_subject_share_a_topic():
    assert curated_topic("RoPE frequency bands") == curated_topic("rope frequency bands") == "RoPE and long context"
    assert curated_topic("cache-aware routing") == curated_topic("cache-aware-routing") == "Prefix caching and routing"
    assert curated_topic("batch API") == curated_topic("batch-api") == "Cost"
    # The more specific rule wins: time to first token is latency, not tokenisation.
    assert curated_topic("time to first token") == "Latency: TTFT and TPOT"
    assert curated_topic("FLOPs per token") == "Roofline and hardware"
    assert curated_topic("") == "" and curated_topic("Cost") == "Cost"


def test_every_written_topic_and_every_problem_template_has_a_curated_topic():
    written = written_topics()
    assert len(written) > 100  # the files' own words: a hundred and more spellings
    titles = {family.title for family in FAMILIES.values() if family.generate is not None}
    unfiled = {topic for topic in written | titles if curated_topic(topic) not in NAMES}
    assert unfiled == set()
    assert len({curated_topic(topic) for topic in written | titles}) <= len(NAMES) <= 20
    assert len({name.lower() for name in NAMES}) == len(NAMES)


@pytest.mark.django_db
def test_the_bank_filter_lists_curated_topics_only(client, settings):
    from runbook.loading import load_content

    load_content(settings.BASE_DIR / "fixtures")
    page = client.get("/bank/").content.decode()
    select = page.split('name="topic"', 1)[1].split("</select>", 1)[0]
    options = [o for o in re.findall(r"<option[^>]*>([^<]*)</option>", select) if o != "Any topic"]
    assert options and set(options) <= {name.replace("'", "&#x27;") for name in NAMES}
    assert "rope frequency bands" not in select and "RoPE frequency bands" not in select
