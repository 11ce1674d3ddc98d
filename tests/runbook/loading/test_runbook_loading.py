"""``load_content``: a small content tree in a temp folder, loaded, checked, reloaded and edited."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from drills.models import BankItem
from runbook.loading import ContentError, load_content
from runbook.models import BarTopic, Chapter, Document, ErratumEntry, GlossaryTerm, ReadingPath, Resource, Stage, Track
from tests.runbook.content_trees import write_tree

pytestmark = pytest.mark.django_db

MAP = """\
---
number: 0
slug: 00-map
track: ""
title: The map
summary: Where everything is, and the {{value ladder.users_worst_case}} answer.
reading_minutes: 5
prerequisites: []
---
The KV cache decides capacity: {{value ladder.users_worst_case}} fit.

## The ladder {#ladder}

Worst case {{value ladder.users_worst_case}}; paged {{value ladder.users_paged}}.

{{formula kv.kv_bytes_per_token}}

## Preemption {#preemption}

When blocks run out, preemption evicts a request.
"""

TOKENISATION = """\
---
number: 1
slug: 01-tokenisation
track: A
title: Tokenisation
summary: Text to ids.
reading_minutes: 12
prerequisites: [00-map]
---
Llama-3.1-8B has {{config llama-3.1-8b.vocab_size}} tokens in its vocabulary.

## Byte-pair encoding {#bpe}

Merges.
"""

TRACKS = """\
documents:
  - {number: 0, slug: 00-map, title: The map, summary: Start here., track: ""}
  - {number: 1, slug: 01-tokenisation, title: Tokenisation, summary: Text to ids., track: A}
  - {number: 2, slug: 02-forward-pass, title: Anatomy of a forward pass, summary: The layers., track: A}
tracks:
  - letter: A
    title: From text to numbers
    settles: What a token is.
    skip_cost: Everything later is memorised.
    documents: [1, 2]
paths:
  - slug: cram
    title: The cram path
    description: The map, then tokens.
    documents: [0, 1]
"""

GLOSSARY = """\
- slug: kv-cache
  term: KV cache
  aliases: [KV cache, KV caches]
  answer: The keys and values of past tokens; {{value ladder.per_user_gib}} per user at 8k.
  chapter: 00-map
  section: ladder
- slug: preemption
  term: Preemption
  aliases: [preemption]
  answer: Evicting a running request to free its cache blocks.
  chapter: 00-map
  section: preemption
"""

ERRATA = """\
- slug: gb-gib-mix
  kind: erratum
  title: Decimal GB divided by binary GiB
  claimed: "52 GB / 1 GiB = 52 users"
  truth: 52 GB is {{convert 52 GB GiB}}.
  why: A seven per cent error.
  proof: |
    - {{convert 52 GB GiB}}
    - {{worked ladder.per_user_gib}}
- slug: checked-cache-formula
  kind: checked
  title: The cache formula
  claimed: 2 x layers x KV heads x head dim x bytes.
  truth: Right.
  why: Everything starts there.
  proof: "{{worked kv.kv_bytes_per_token}}"
- slug: floor-once
  kind: engine
  title: Users are floored once
  claimed: ""
  truth: The engine floors the user count at the last step only.
  why: Early rounding loses users.
  proof: "{{worked ladder.users_worst_case}}"
"""

READING = """\
stages:
  - {number: 1, slug: foundations, title: Foundations, summary: Arithmetic first.}
  - {number: 2, slug: toolbox, title: Toolbox, summary: The techniques.}
bar:
  - {slug: capacity-math, title: Capacity math, summary: From roofline to GPU count.}
resources:
  - slug: inference-arithmetic
    stage: 1
    title: Transformer Inference Arithmetic
    authors: kipply
    year: 2022
    kind: blog post
    level: Core
    time: ~1.5 h
    summary: Bytes of cache per token.
    gives: The back-of-envelope method.
    topics: [capacity-math]
  - slug: pagedattention
    stage: toolbox
    title: Efficient Memory Management for LLM Serving with PagedAttention
    authors: Kwon et al.
    year: 2023
    kind: paper
    level: Advanced
    time: ~3 h
    summary: Paged KV memory and preemption.
    gives: Why fragmentation matters.
    topics: []
  - slug: vidur
    stage: null
    title: "Vidur: a simulator"
    authors: ""
    year: null
    kind: ""
    level: ""
    time: ""
    summary: Simulating serving.
    gives: A simulated sweep.
    topics: [capacity-math]
"""

QUESTIONS_MAP = """\
- slug: map-ladder
  kind: open
  prompt: How many users fit on one H100 for the 8B?
  model_answer: |
    Run the ladder.

    Worst case {{value ladder.users_worst_case}}.
  rubric:
    - Uses GiB
    - Reaches {{value ladder.users_worst_case}}
  topic: capacity ladder
  difficulty: 2
  roles: [engineer, architect]
  misconceptions: [gb-gib-mix]
- slug: map-preemption
  prompt: What does frequent preemption tell you?
  model_answer: That admission let in too much.
  rubric: [Names admission]
  topic: preemption
  difficulty: 1
  roles: [manager]
"""

QUESTIONS_TOKENS = """\
- slug: tokens-bill
  prompt: Why is the token the unit of the bill?
  model_answer: Because compute and cache scale with it.
  rubric: [Ties cost to tokens]
  topic: tokens
  difficulty: 1
  roles: [manager]
"""

TREE = {
    "runbook/00-map.md": MAP,
    "runbook/01-tokenisation.md": TOKENISATION,
    "tracks.yaml": TRACKS,
    "glossary.yaml": GLOSSARY,
    "errata.yaml": ERRATA,
    "reading.yaml": READING,
    "questions/00-map.yaml": QUESTIONS_MAP,
    "questions/01-tokenisation.yaml": QUESTIONS_TOKENS,
}


@pytest.fixture
def tree(tmp_path) -> Path:
    return write_tree(tmp_path / "fixtures", TREE)


def run_command(path: Path) -> str:
    out = io.StringIO()
    call_command("load_content", "--path", str(path), stdout=out, stderr=io.StringIO())
    return out.getvalue()


class TestFirstLoad:
    def test_it_creates_every_kind_and_reports_the_counts(self, tree):
        report = load_content(tree)

        counts = {kind: tally.created for kind, tally in report.tallies.items()}
        assert counts == {"tracks": 1, "documents": 3, "paths": 1, "chapters": 2, "glossary": 2, "errata": 3,
                          "stages": 2, "bar topics": 1, "resources": 3, "questions": 3}
        assert report.skipped == ["critiques"]  # the tree has no critiques/ folder (test_critiques.py loads one)

    def test_it_stores_the_front_matter_and_the_body(self, tree):
        load_content(tree)

        chapter = Chapter.objects.get(slug="01-tokenisation")
        assert (chapter.number, chapter.track, chapter.title, chapter.reading_minutes) == (1, "A", "Tokenisation", 12)
        assert chapter.prerequisites == ["00-map"]
        assert chapter.body.startswith("Llama-3.1-8B has {{config llama-3.1-8b.vocab_size}}")
        assert chapter.source_path == "runbook/01-tokenisation.md"
        assert len(chapter.content_hash) == 64
        assert Chapter.objects.get(slug="00-map").track == ""

    def test_it_keeps_plain_text_with_the_numbers_filled_in_for_search(self, tree):
        load_content(tree)

        text = Chapter.objects.get(slug="00-map").search_text
        assert "53 users" in text
        assert "{{" not in text

    def test_documents_link_to_their_chapters_and_tracks(self, tree):
        load_content(tree)

        documents = {d.slug: d for d in Document.objects.select_related("track", "chapter")}
        assert documents["01-tokenisation"].chapter.slug == "01-tokenisation"
        assert documents["01-tokenisation"].track.letter == "A"
        assert documents["02-forward-pass"].chapter is None
        assert documents["00-map"].track is None
        assert ReadingPath.objects.get().document_numbers == [0, 1]
        assert Track.objects.get().skip_cost == "Everything later is memorised."

    def test_questions_belong_to_the_chapter_named_by_their_file(self, tree):
        load_content(tree)

        chapter = Chapter.objects.get(slug="00-map")
        assert [q.slug for q in chapter.questions.order_by("position")] == ["map-ladder", "map-preemption"]
        item = BankItem.objects.get(slug="map-ladder")
        assert item.kind == "open"
        assert item.rubric == ["Uses GiB", "Reaches {{value ladder.users_worst_case}}"]
        assert item.roles == ["engineer", "architect"]
        assert item.misconceptions == ["gb-gib-mix"]
        assert item.author is None and item.published
        assert BankItem.objects.get(slug="tokens-bill").track == "A"

    def test_reading_resources_get_their_stage_and_topics(self, tree):
        load_content(tree)

        paper = Resource.objects.get(slug="pagedattention")
        assert paper.stage == Stage.objects.get(slug="toolbox")
        assert (paper.year, paper.kind, paper.level) == ("2023", "paper", "Advanced")
        assert list(BarTopic.objects.get().resources.order_by("slug").values_list("slug", flat=True)) == [
            "inference-arithmetic", "vidur"]
        vidur = Resource.objects.get(slug="vidur")
        assert vidur.stage is None and vidur.year == "" and vidur.authors == ""

    def test_glossary_and_errata_keep_their_fields(self, tree):
        load_content(tree)

        term = GlossaryTerm.objects.get(slug="preemption")
        assert (term.chapter_slug, term.section, term.aliases) == ("00-map", "preemption", ["preemption"])
        kinds = list(ErratumEntry.objects.values_list("slug", "kind"))
        assert kinds == [("gb-gib-mix", "erratum"), ("checked-cache-formula", "checked"), ("floor-once", "engine")]


class TestChecks:
    def test_an_unknown_shortcode_fails_with_the_file_and_line_and_writes_nothing(self, tree):
        path = tree / "runbook" / "00-map.md"
        path.write_text(MAP.replace("paged {{value ladder.users_paged}}", "paged {{value ladder.nope}}"))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        line = MAP.splitlines().index(
            "Worst case {{value ladder.users_worst_case}}; paged {{value ladder.users_paged}}.")
        assert len(caught.value.errors) == 1
        error = caught.value.errors[0]
        assert error.startswith(f"{path}:{line + 1}: {{{{value ladder.nope}}}}: ")
        assert "no step 'nope'" in error
        assert Chapter.objects.count() == 0 and GlossaryTerm.objects.count() == 0 and BankItem.objects.count() == 0

    def test_an_unknown_shortcode_kind_in_a_yaml_answer_names_its_line(self, tree):
        path = tree / "questions" / "00-map.yaml"
        path.write_text(QUESTIONS_MAP.replace("Worst case {{value", "Worst case {{bogus"))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        line = QUESTIONS_MAP.splitlines().index("    Worst case {{value ladder.users_worst_case}}.") + 1
        assert len(caught.value.errors) == 1
        assert caught.value.errors[0].startswith(
            f"{path}:{line}: {{{{bogus ladder.users_worst_case}}}}: Unknown shortcode 'bogus'; known: value, ")

    def test_the_command_exits_non_zero_with_every_problem(self, tree):
        (tree / "errata.yaml").write_text(ERRATA.replace("{{convert 52 GB GiB}}.", "{{convert 52 GB parsecs}}."))
        (tree / "glossary.yaml").write_text(GLOSSARY.replace("{{value ladder.per_user_gib}}", "{{value ladder}}"))

        with pytest.raises(CommandError) as caught:
            run_command(tree)

        message = str(caught.value)
        assert message.startswith("2 problems in the content files; nothing was loaded:")
        assert f"{tree / 'errata.yaml'}:5: {{{{convert 52 GB parsecs}}}}:" in message
        assert f"{tree / 'glossary.yaml'}:4: {{{{value ladder}}}}:" in message
        assert Chapter.objects.count() == 0

    def test_a_missing_front_matter_field_is_named_with_the_file(self, tree):
        path = tree / "runbook" / "01-tokenisation.md"
        path.write_text(TOKENISATION.replace("reading_minutes: 12\n", ""))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        assert caught.value.errors == [f"{path}:1: the front matter is missing the field 'reading_minutes'."]

    def test_a_chapter_without_front_matter_is_an_error(self, tree):
        path = tree / "runbook" / "01-tokenisation.md"
        path.write_text("# Tokenisation\n\nNo front matter.\n")

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        assert caught.value.errors == [f"{path}:1: should start with front matter between two '---' lines."]

    def test_a_missing_required_yaml_field_names_the_entry(self, tree):
        (tree / "glossary.yaml").write_text(GLOSSARY.replace(
            "  answer: Evicting a running request to free its cache blocks.\n", ""))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        assert caught.value.errors == [f"{tree / 'glossary.yaml'}:7: term 'preemption' is missing the field 'answer'."]

    def test_a_bad_track_letter_and_bad_roles_are_errors(self, tree):
        (tree / "runbook" / "01-tokenisation.md").write_text(TOKENISATION.replace("track: A", "track: Z"))
        (tree / "questions" / "01-tokenisation.yaml").write_text(QUESTIONS_TOKENS.replace("[manager]", "[ceo]"))

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        text = "\n".join(caught.value.errors)
        assert "track should be one of A–E, not 'Z'" in text
        assert "roles are architect, engineer, manager, not ceo" in text

    def test_a_yaml_syntax_error_gives_the_line(self, tree):
        (tree / "reading.yaml").write_text(READING + "  - slug: [unclosed\n")

        with pytest.raises(ContentError) as caught:
            load_content(tree)

        assert caught.value.errors[0].startswith(f"{tree / 'reading.yaml'}:")
        assert "not valid YAML" in caught.value.errors[0]

    def test_a_missing_folder_is_a_command_error(self, tmp_path):
        with pytest.raises(CommandError, match="is not a folder of content files"):
            run_command(tmp_path / "nowhere")


class TestReload:
    def test_a_second_run_changes_nothing(self, tree):
        run_command(tree)

        output = run_command(tree)

        report = load_content(tree)
        assert not report.changed
        assert all(t.created == t.updated == t.removed == 0 for t in report.tallies.values())
        assert report.tallies["chapters"].unchanged == 2
        assert report.tallies["resources"].unchanged == 3
        assert "chapters    0 created, 0 updated, 2 unchanged, 0 removed" in output
        assert "Everything unchanged." in output

    def test_an_edited_chapter_is_updated_and_the_rest_left_alone(self, tree):
        load_content(tree)
        before = Chapter.objects.get(slug="01-tokenisation").content_hash
        path = tree / "runbook" / "01-tokenisation.md"
        path.write_text(TOKENISATION.replace("Merges.", "Merges, most frequent pair first."))

        report = load_content(tree)

        chapter = Chapter.objects.get(slug="01-tokenisation")
        assert chapter.body.rstrip().endswith("Merges, most frequent pair first.")
        assert chapter.content_hash != before
        assert (report.tallies["chapters"].updated, report.tallies["chapters"].unchanged) == (1, 1)
        assert report.tallies["glossary"].unchanged == 2

    def test_an_edited_question_and_resource_topics_are_updated(self, tree):
        load_content(tree)
        (tree / "questions" / "00-map.yaml").write_text(QUESTIONS_MAP.replace("difficulty: 1", "difficulty: 3"))
        (tree / "reading.yaml").write_text(READING.replace("topics: []", "topics: [capacity-math]"))

        report = load_content(tree)

        assert BankItem.objects.get(slug="map-preemption").difficulty == 3
        assert report.tallies["questions"].updated == 1
        assert set(Resource.objects.get(slug="pagedattention").topics.values_list("slug", flat=True)) == {
            "capacity-math"}
        assert report.tallies["resources"].updated == 1

    def test_a_coach_authored_item_survives_a_reload(self, tree, coach):
        load_content(tree)
        own = BankItem.objects.create(slug="coach-own", prompt="Mine", model_answer="Mine too", author=coach,
                                      chapter=Chapter.objects.get(slug="00-map"))

        load_content(tree)

        own.refresh_from_db()
        assert own.prompt == "Mine" and own.author == coach

    def test_a_coach_item_with_a_fixture_slug_is_left_as_written(self, tree, coach):
        BankItem.objects.create(slug="tokens-bill", prompt="The coach's version", model_answer="…", author=coach)

        report = load_content(tree)

        assert BankItem.objects.get(slug="tokens-bill").prompt == "The coach's version"
        assert any("tokens-bill" in warning for warning in report.warnings)

    def test_fixture_items_whose_file_disappeared_are_removed_but_not_coach_items(self, tree, coach):
        load_content(tree)
        BankItem.objects.create(slug="coach-own", prompt="Mine", model_answer="Mine too", author=coach)
        (tree / "questions" / "01-tokenisation.yaml").unlink()

        report = load_content(tree)

        assert not BankItem.objects.filter(slug="tokens-bill").exists()
        assert BankItem.objects.filter(slug="coach-own").exists()
        assert report.tallies["questions"].removed == 1

    def test_a_removed_chapter_file_removes_the_chapter_and_unlinks_its_document(self, tree):
        load_content(tree)
        (tree / "runbook" / "01-tokenisation.md").unlink()

        report = load_content(tree)

        assert not Chapter.objects.filter(slug="01-tokenisation").exists()
        assert Document.objects.get(slug="01-tokenisation").chapter is None
        assert BankItem.objects.get(slug="tokens-bill").chapter is None
        assert report.tallies["chapters"].removed == 1

    def test_a_kind_whose_file_is_absent_is_skipped_not_emptied(self, tree):
        load_content(tree)
        (tree / "glossary.yaml").unlink()

        output = run_command(tree)

        assert GlossaryTerm.objects.count() == 2
        assert "glossary" in load_content(tree).skipped
        assert "skipped: no file" in output

    def test_a_partial_tree_loads_what_exists(self, tmp_path):
        root = write_tree(tmp_path / "partial", {"runbook/00-map.md": MAP})

        report = load_content(root)

        assert list(report.tallies) == ["chapters"]
        assert Chapter.objects.count() == 1
        assert set(report.skipped) == {"tracks", "documents", "paths", "glossary", "errata", "stages", "bar topics",
                                       "resources", "questions", "critiques"}

    def test_a_dedented_block_scalar_keeps_its_markdown(self, tree):
        load_content(tree)

        answer = BankItem.objects.get(slug="map-ladder").model_answer
        assert answer == textwrap.dedent("""\
            Run the ladder.

            Worst case {{value ladder.users_worst_case}}.""")
