"""Design prompts: loaded from ``questions/design.yaml`` with their details, and shown with reveals.

The loader tests use a small tree in a temp folder; the page tests load the
repository's own ``reading.yaml``, ``questions/design.yaml`` and
``critiques/`` (copied, so the other chapters' question files are not needed).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from drills.models import BankItem
from runbook.loading import ContentError, load_content
from runbook.shortcodes import resolve
from tests.page_text import visible
from tests.runbook.content_trees import load_design_content, write_tree

pytestmark = pytest.mark.django_db


READING = """\
stages:
  - {number: 1, slug: foundations, title: Foundations}
bar:
  - slug: capacity-math
    title: Capacity math from roofline to GPU count
resources:
  - slug: inference-arithmetic
    stage: 1
    title: Transformer Inference Arithmetic
    topics: [capacity-math]
"""

DESIGN = """\
- slug: design-capacity
  kind: design
  topic: capacity-math
  difficulty: 3
  roles: [architect]
  prompt: How many nodes for 1,000 requests a second?
  model_answer: The node holds {{value slo.batch_memory_limit}}.
  rubric: [Runs the ladder]
  details:
    title: Capacity math
    numbers: |
      - batch the cache allows: {{value slo.batch_memory_limit}}
      - nodes: {{value slo.nodes request_rate=1000}}
    levels:
      mid: [Computes the ceiling]
      senior: [Runs the ladder]
      staff: [Costs prefill separately]
    follow_ups:
      - ask: Why does a faster card not help?
        listen_for: The cache binds first.
      - Where does the MFU come from?
    resources: [inference-arithmetic]
"""


@pytest.fixture
def tree(tmp_path) -> Path:
    return write_tree(tmp_path / "fixtures", {"reading.yaml": READING, "questions/design.yaml": DESIGN})


@pytest.fixture
def real_design(tmp_path):
    """The repository's design prompts, reading list and critique drills, loaded."""
    return load_design_content(tmp_path, "the design content does not load")


class TestLoading:
    def test_it_loads_a_design_prompt_with_its_details(self, tree):
        report = load_content(tree)

        item = BankItem.objects.get(slug="design-capacity")
        assert report.tallies["questions"].created == 1
        assert item.kind == "design" and item.chapter is None and item.details["bar_topic"] == "capacity-math"
        assert item.topic == "Capacity planning"  # filed under its curated topic
        assert item.details["title"] == "Capacity math"
        assert item.details["numbers"].startswith("- batch the cache allows: {{value slo.batch_memory_limit}}")
        assert item.details["levels"] == {"mid": ["Computes the ceiling"], "senior": ["Runs the ladder"],
                                          "staff": ["Costs prefill separately"]}
        assert item.details["follow_ups"] == [
            {"ask": "Why does a faster card not help?", "listen_for": "The cache binds first."},
            {"ask": "Where does the MFU come from?", "listen_for": ""}]
        assert item.details["resources"] == ["inference-arithmetic"]

    def test_a_design_file_is_not_reported_as_a_missing_chapter(self, tree):
        write_tree(tree, {"runbook/00-map.md": "---\nnumber: 0\nslug: 00-map\ntitle: Map\nsummary: S.\n"
                                          "reading_minutes: 5\n---\nBody.\n"})

        report = load_content(tree)

        assert not [w for w in report.warnings if "design" in w]

    def test_a_bad_shortcode_in_details_fails_with_its_file_and_line(self, tree):
        path = tree / "questions" / "design.yaml"
        path.write_text(DESIGN.replace("nodes: {{value slo.nodes request_rate=1000}}",
                                       "nodes: {{value slo.nodez request_rate=1000}}"))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        line = DESIGN.splitlines().index("      - nodes: {{value slo.nodes request_rate=1000}}") + 1
        assert len(caught.value.errors) == 1
        assert caught.value.errors[0].startswith(f"{path}:{line}: {{{{value slo.nodez request_rate=1000}}}}: ")
        assert "no step 'nodez'" in caught.value.errors[0]
        assert BankItem.objects.count() == 0

    def test_a_bad_shortcode_in_a_follow_up_names_its_line(self, tree):
        path = tree / "questions" / "design.yaml"
        path.write_text(DESIGN.replace("listen_for: The cache binds first.",
                                       "listen_for: The cache binds first at {{value ladder.nope}}."))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        line = DESIGN.splitlines().index("        listen_for: The cache binds first.") + 1
        assert caught.value.errors[0].startswith(f"{path}:{line}: {{{{value ladder.nope}}}}: ")

    def test_an_unknown_resource_or_missing_levels_are_errors(self, tree):
        path = tree / "questions" / "design.yaml"
        path.write_text(DESIGN.replace("resources: [inference-arithmetic]", "resources: [no-such-paper]")
                        .replace("      staff: [Costs prefill separately]\n", ""))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        message = "\n".join(caught.value.errors)
        assert "no resource 'no-such-paper' in reading.yaml" in message
        assert "details.levels should give a list of points for each of mid, senior, staff" in message
        assert all(error.startswith(f"{path}:") for error in caught.value.errors)

    def test_a_design_prompt_without_details_is_an_error(self, tree):
        path = tree / "questions" / "design.yaml"
        path.write_text(DESIGN.split("  details:")[0])

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        assert "a design prompt needs 'details'" in caught.value.errors[0]

    def test_details_of_an_open_question_are_checked_and_kept(self, tree):
        write_tree(tree, {"questions/design.yaml": textwrap.dedent("""\
            - slug: open-one
              prompt: Why?
              model_answer: Because.
              details:
                hint: Look at {{value ladder.users_worst_case}}.
            """)})

        load_content(tree)

        assert BankItem.objects.get(slug="open-one").details == {"hint": "Look at {{value ladder.users_worst_case}}."}


class TestTheRealPrompts:
    def test_the_eight_bar_topics_each_have_a_design_prompt(self, real_design):
        from runbook.models import BarTopic

        items = BankItem.objects.filter(kind="design")
        assert items.count() == 8
        assert sorted(item.details["bar_topic"] for item in items) == sorted(
            BarTopic.objects.values_list("slug", flat=True))
        for item in items:
            assert item.model_answer and len(item.rubric) >= 5, item.slug
            assert all(item.details["levels"][level] for level in ("mid", "senior", "staff")), item.slug
            assert len(item.details["follow_ups"]) >= 4, item.slug
            assert len(item.details["resources"]) >= 3, item.slug
            assert "{{" in item.details["numbers"], item.slug

    def test_every_design_page_renders_with_every_shortcode_resolved(self, client, real_design):
        for item in BankItem.objects.filter(kind="design"):
            response = client.get(f"/drills/design/{item.slug}/")

            assert response.status_code == 200, item.slug
            page = response.content.decode()
            assert "{{" not in page and "rbsc" not in page, item.slug


class TestDesignPage:
    def test_the_prompt_comes_first_and_the_rest_is_revealed_in_details(self, client, real_design):
        response = client.get("/drills/design/design-capacity-math/")

        page = response.content.decode()
        assert response.status_code == 200
        assert page.index("The prompt") < page.index("<details")
        for summary in ("The numbers a strong answer derives", "What a mid, a senior and a staff answer contain",
                        "The follow-ups an interviewer pushes on", "What prepares it"):
            assert summary in page
        assert page.count('<details class="design-reveal') == 5

    def test_the_numbers_are_the_engines(self, client, real_design):
        text = visible(client.get("/drills/design/design-capacity-math/"))

        # 70B bf16 on 8 × H100: budget 8 × 79.65 × 0.9 − 131.42 − 24 = 418.05 GiB, 2.50 GiB a sequence → 167;
        # 1,000 req/s × 500 tokens ÷ 5,118.7 tok/s (the step with its all-reduces, docs/architecture.md §12) → 98 nodes.
        assert "167 users" in text and "98 nodes" in text
        assert resolve("value", "slo.tokens_per_s").text in text
        assert resolve("value", "decode.ceiling_tok_s model=llama-3.1-70b gpus=8").text == "189.9 tok/s"
        assert "189.9 tok/s" in text

    def test_levels_follow_ups_and_resources_are_shown(self, client, real_design):
        item = BankItem.objects.get(slug="design-kv-budget")

        response = client.get(f"/drills/design/{item.slug}/")

        page = response.content.decode()
        text = visible(response)
        for title in ("Mid-level", "Senior", "Staff and above"):
            assert title in text
        assert "Does GQA make attention faster?" in text
        assert 'href="/reading/#gqa-paper"' in page
        assert "40.00 GiB" in text  # 327,680 B × 131,072 = 40 GiB per 128k sequence

    def test_an_unknown_prompt_is_a_404(self, client, real_design):
        assert client.get("/drills/design/no-such-prompt/").status_code == 404
        assert client.get("/drills/design/overnight-summaries/").status_code == 404  # a critique, not a prompt


class TestDrillsIndex:
    def test_it_links_every_design_prompt_and_critique_drill(self, client, real_design):
        page = client.get("/drills/").content.decode()

        for item in BankItem.objects.filter(kind="design"):
            assert f'href="/drills/design/{item.slug}/"' in page
        for item in BankItem.objects.filter(kind="critique"):
            assert f'href="/drills/critique/{item.slug}/"' in page
        assert "Design prompts: the senior-staff bar" in page
