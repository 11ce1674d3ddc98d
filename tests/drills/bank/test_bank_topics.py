"""The bank's topics are a curated list (issue 20, item 8): every spelling of a subject is filed under one name."""

from __future__ import annotations

import re

import pytest

from calculators.families import FAMILIES
from drills.bank.topics import NAMES, curated_topic
from tests.paths import REPO_ROOT

FIXTURES = REPO_ROOT / "fixtures" / "questions"


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


# What each chapter teaches, in curated topics: a question filed under anything else is mis-tagged (issue 37 item 4:
# a long-context capacity question in chapter 14 had been filed under RoPE, preemption under prefill and decode).
CHAPTER_TOPICS = {
    "00": {"Capacity planning", "KV cache", "Engines and production", "Cost", "Latency: TTFT and TPOT"},
    "01": {"Tokens and tokenisation", "Cost", "KV cache"},
    "02": {"Model anatomy", "Mixture of experts", "Roofline and hardware", "Prefill and decode"},
    "03": {"Prefill and decode", "Latency: TTFT and TPOT", "Engines and production", "Cost", "Tokens and tokenisation"},
    "04": {"Roofline and hardware"},
    "05": {"Prefill and decode", "Latency: TTFT and TPOT", "Engines and production"},
    "06": {"KV cache", "Capacity planning", "Number formats and quantisation", "Multi-GPU parallelism"},
    "07": {"Attention variants", "Multi-GPU parallelism"},
    "08": {"RoPE and long context"},
    "09": {"Number formats and quantisation"},
    "10": {"KV cache", "Prefix caching and routing", "Number formats and quantisation"},
    "11": {"Multi-GPU parallelism", "Mixture of experts"},
    "12": {"Prefill and decode", "Prefix caching and routing", "Engines and production", "LoRA and fine-tunes"},
    "13": {"Speculative and constrained decoding", "Engines and production"},
    "14": {"Capacity planning", "Cost", "Latency: TTFT and TPOT", "Roofline and hardware", "Prefill and decode"},
    "15": {"Engines and production", "Latency: TTFT and TPOT", "KV cache"},
}


def test_every_chapter_question_is_filed_under_a_topic_its_chapter_teaches():
    import yaml

    misfiled = []
    for path in sorted(FIXTURES.glob("[0-9][0-9]-*.yaml")):
        for item in yaml.safe_load(path.read_text()):
            topic = curated_topic(str(item.get("topic") or ""))
            assert topic in NAMES, (item["slug"], topic)
            if topic not in CHAPTER_TOPICS[path.name[:2]]:
                misfiled.append((item["slug"], item.get("topic"), topic))
    assert misfiled == []
    assert set(CHAPTER_TOPICS) == {path.name[:2] for path in FIXTURES.glob("[0-9][0-9]-*.yaml")}
    assert set().union(*CHAPTER_TOPICS.values()) <= set(NAMES)
    # Preemption is what a full KV cache does, filed with the cache (it was under prefill and decode).
    assert curated_topic("preemption") == "KV cache"
