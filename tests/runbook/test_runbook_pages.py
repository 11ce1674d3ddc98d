"""The reading room's pages on a small content tree loaded into the test database.

Search runs on whichever database the suite uses: SQLite's fallback by default,
PostgreSQL full-text search when ``DATABASE_URL`` names PostgreSQL (as in CI).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection

from drills.models import BankItem
from runbook.loading import load_content
from runbook.models import Chapter
from runbook.search import query_terms, search, snippet
from runbook.shortcodes import resolve
from tests.page_text import visible_text
from tests.runbook.content_trees import write_tree

pytestmark = pytest.mark.django_db

FILES = {
    "runbook/00-map.md": """\
---
number: 0
slug: 00-map
track: ""
title: The map
summary: Where everything is.
reading_minutes: 5
---
The KV cache decides capacity, and preemption is what happens when it runs out.

## The ladder {#ladder}

Worst case {{value ladder.users_worst_case}}; paged {{value ladder.users_paged}}.

{{calculator ladder}}

## Preemption {#preemption}

When blocks run out the scheduler uses preemption to evict a request.
""",
    "runbook/01-tokenisation.md": """\
---
number: 1
slug: 01-tokenisation
track: A
title: Tokenisation
summary: Text to ids.
reading_minutes: 12
prerequisites: [00-map]
---
The vocabulary has {{config llama-3.1-8b.vocab_size}} entries.

## Byte-pair encoding {#bpe}

Merges, most frequent pair first.
""",
    "tracks.yaml": """\
documents:
  - {number: 0, slug: 00-map, title: The map, summary: Start here., track: ""}
  - {number: 1, slug: 01-tokenisation, title: Tokenisation, summary: Text to ids., track: A}
  - {number: 2, slug: 02-forward-pass, title: Anatomy of a forward pass, summary: The layers., track: A}
tracks:
  - {letter: A, title: From text to numbers, settles: What a token is., skip_cost: Everything later is memorised.,
     documents: [1, 2]}
paths:
  - {slug: cram, title: The cram path, description: The map then tokens., documents: [0, 1, 2]}
""",
    "glossary.yaml": """\
- slug: kv-cache
  term: KV cache
  aliases: [KV cache]
  answer: The keys and values of past tokens, {{value ladder.per_user_gib}} per user at the limit.
  chapter: 00-map
  section: ladder
- slug: preemption
  term: Preemption
  aliases: [preemption]
  answer: Evicting a running request to reclaim its cache blocks.
  chapter: 00-map
  section: preemption
- slug: mfu
  term: MFU
  aliases: []
  answer: Model FLOPs utilisation.
  chapter: 02-forward-pass
  section: ""
""",
    "errata.yaml": """\
- slug: gb-gib-mix
  kind: erratum
  title: Decimal GB divided by binary GiB
  claimed: "52 GB / 1 GiB = 52 users"
  truth: 52 GB is {{convert 52 GB GiB}}; the whole ladder in GiB gives {{value ladder.users_worst_case}}.
  why: A seven per cent error.
  proof: |
    - {{convert 52 GB GiB}}
    - {{worked ladder.per_user_gib}}

    {{formula ladder.per_user_gib}}
- slug: checked-cache-formula
  kind: checked
  title: The cache formula checks out
  claimed: 2 x layers x KV heads x head dim x bytes.
  truth: Right.
  why: Everything starts there.
  proof: "{{worked kv.kv_bytes_per_token}}"
- slug: decode-ceiling
  kind: engine
  title: The decode ceiling is a bound
  truth: Our engine reports the bound and the derate apart.
  why: A bound quoted as an expectation plans short.
""",
    "reading.yaml": """\
stages:
  - {number: 1, slug: foundations, title: Foundations, summary: Arithmetic first.}
  - {number: 2, slug: toolbox, title: Toolbox, summary: The techniques.}
bar:
  - {slug: capacity-math, title: Capacity math, summary: From roofline to GPU count.}
resources:
  - {slug: inference-arithmetic, stage: 1, title: Transformer Inference Arithmetic, authors: kipply, year: 2022,
     kind: blog post, level: Core, time: ~1.5 h, summary: Bytes of cache per token.,
     gives: The back-of-envelope method., topics: [capacity-math]}
  - {slug: pagedattention, stage: 2, title: PagedAttention, authors: Kwon et al., year: 2023, kind: paper,
     level: Advanced, time: ~3 h, summary: Paged KV memory and preemption., gives: Why fragmentation matters.,
     topics: []}
""",
    "questions/00-map.yaml": """\
- slug: map-ladder
  prompt: How many users fit on one H100 for the 8B?
  model_answer: Run the whole ladder in GiB; worst case {{value ladder.users_worst_case}}.
  rubric: [Uses GiB throughout, "Reaches {{value ladder.users_worst_case}}"]
  topic: capacity ladder
  difficulty: 2
  roles: [engineer, architect]
- slug: map-hidden
  prompt: A question nobody sees.
  model_answer: Hidden.
""",
}


@pytest.fixture
def loaded(tmp_path):
    root = write_tree(tmp_path / "fixtures", FILES)
    cache.clear()
    load_content(root)
    BankItem.objects.filter(slug="map-hidden").update(published=False)
    return root


def text_of(response) -> str:
    return response.content.decode()


class TestPagesRespond:
    @pytest.mark.parametrize("url", ["/runbook/", "/runbook/00-map/", "/runbook/01-tokenisation/", "/glossary/",
                                     "/errata/", "/reading/", "/search/", "/search/?q=cache"])
    def test_it_serves_every_page(self, client, loaded, url):
        assert client.get(url).status_code == 200

    def test_an_unwritten_document_has_no_page(self, client, loaded):
        assert client.get("/runbook/02-forward-pass/").status_code == 404

    def test_pages_render_before_any_content_is_loaded(self, client, db):
        for url in ["/runbook/", "/glossary/", "/errata/", "/reading/", "/search/?q=x"]:
            assert client.get(url).status_code == 200

    def test_the_navigation_links_the_reading_room_and_searches(self, client, loaded):
        page = text_of(client.get("/glossary/"))

        for href in ['href="/runbook/"', 'href="/glossary/"', 'href="/errata/"', 'href="/reading/"']:
            assert href in page
        assert re.search(r'<form[^>]*method="get" action="/search/"', page)


class TestIndex:
    def test_it_lists_the_tracks_documents_and_paths(self, client, loaded):
        page = text_of(client.get("/runbook/"))

        assert "From text to numbers" in page and "What a token is." in page
        assert "Everything later is memorised." in page
        assert 'href="/runbook/01-tokenisation/"' in page
        assert "The cram path" in page and "The map then tokens." in page

    def test_an_unwritten_document_is_in_preparation_and_not_linked(self, client, loaded):
        page = text_of(client.get("/runbook/"))

        assert "Anatomy of a forward pass" in page
        assert 'href="/runbook/02-forward-pass/"' not in page
        assert "in preparation" in page
        assert "2 of 3 documents written" in visible_text(page)


class TestChapter:
    def test_it_shows_the_body_with_live_numbers_and_no_shortcode(self, client, loaded):
        page = text_of(client.get("/runbook/00-map/"))

        worst = resolve("value", "ladder.users_worst_case").text
        assert f"Worst case {worst}" in page
        assert "{{" not in page

    def test_it_has_a_rail_of_all_documents_with_the_unwritten_in_preparation(self, client, loaded):
        page = text_of(client.get("/runbook/01-tokenisation/"))

        rail = page.split('aria-label="The sixteen documents"', 1)[1].split("</nav>", 1)[0]
        assert 'href="/runbook/00-map/"' in rail
        assert 'aria-current="page"' in rail
        assert "Anatomy of a forward pass" in rail and "in preparation" in rail
        assert 'href="/runbook/02-forward-pass/"' not in rail

    def test_it_links_previous_and_next_and_the_prerequisites(self, client, loaded):
        first = text_of(client.get("/runbook/00-map/"))
        second = text_of(client.get("/runbook/01-tokenisation/"))

        assert 'rel="next"' in first and 'rel="prev"' not in first
        assert re.search(r'href="/runbook/00-map/" rel="prev"', second)
        assert "Read first:" in second

    def test_it_has_a_table_of_contents_of_its_sections(self, client, loaded):
        page = text_of(client.get("/runbook/00-map/"))

        assert '<a href="#ladder">The ladder</a>' in page
        assert '<a href="#preemption">Preemption</a>' in page
        assert '<a href="#questions">Interview questions</a>' in page

    def test_glossary_terms_link_to_the_glossary(self, client, loaded):
        page = text_of(client.get("/runbook/00-map/"))

        assert re.search(r'<a href="/glossary/#kv-cache" class="glossary-link"[^>]*>KV cache</a>', page)
        assert '<h2 id="preemption">Preemption</h2>' in page

    def test_questions_end_the_chapter_with_the_answer_inside_details(self, client, loaded):
        page = text_of(client.get("/runbook/00-map/"))

        questions = page.split('id="questions"', 1)[1]
        assert "How many users fit on one H100 for the 8B?" in questions
        details = re.search(r"<details class=\"rb-answer\">(.*?)</details>", questions, re.S).group(1)
        assert "<summary>" in details
        worst = resolve("value", "ladder.users_worst_case").text
        assert f"Run the whole ladder in GiB; worst case {worst}." in details
        assert "Uses GiB throughout" in details and f"Reaches {worst}" in details
        assert "A question nobody sees." not in page

    def test_what_the_process_remembers_of_the_page_follows_the_rows(self, client, loaded):
        # The rail, the previous/next chapters and the questions' HTML are memoised under the rows they are
        # built from (runbook.rail): a changed row is a new page at once, and the old rows an old page again.
        from runbook.models import Document

        def page(path):  # without the CSRF token, masked afresh for each response
            return re.sub(r'"X-CSRFToken": "[^"]*"', "", text_of(client.get(path)))

        before = page("/runbook/01-tokenisation/")
        question = BankItem.objects.get(prompt="How many users fit on one H100 for the 8B?")
        BankItem.objects.filter(pk=question.pk).update(prompt="How many users fit on one **H200**?")
        Document.objects.filter(slug="02-forward-pass").update(title="The forward pass, renamed")
        Chapter.objects.filter(slug="00-map").update(title="The whole map")
        first, second = page("/runbook/00-map/"), page("/runbook/01-tokenisation/")
        assert "How many users fit on one <strong>H200</strong>?" in first
        assert "How many users fit on one H100" not in first
        assert "The forward pass, renamed" in first and "Anatomy of a forward pass" not in second
        assert re.search(r'rel="prev">\s*<span class="rb-pager-label">← Previous</span>'
                         r'<span class="rb-pager-title">00 · The whole map</span>', second)
        BankItem.objects.filter(pk=question.pk).update(prompt=question.prompt)
        Document.objects.filter(slug="02-forward-pass").update(title="Anatomy of a forward pass")
        Chapter.objects.filter(slug="00-map").update(title="The map")
        assert page("/runbook/01-tokenisation/") == before

    def test_the_embedded_calculator_is_in_the_page_with_its_results(self, client, loaded):
        page = text_of(client.get("/runbook/00-map/"))

        assert 'id="calc-ladder-1"' in page
        assert 'hx-target="#calc-ladder-1-results"' in page
        assert 'data-step="users_worst_case"' in page

    def test_the_page_carries_a_print_stylesheet(self, client, loaded):
        from django.contrib.staticfiles import finders

        css = Path(finders.find("css/app.css")).read_text()
        print_rules = css.split("/* runbook */", 1)[1].split("@media print", 1)[1]
        assert ".rb-rail" in print_rules and ".app-navbar" in print_rules
        assert "details::details-content" in print_rules


class TestEmbeddedCalculator:
    def test_an_htmx_request_from_an_embed_gets_the_embed_results(self, client, loaded):
        response = client.get("/calculators/ladder/", {"embed": "1", "model": "llama-3.1-70b"},
                              headers={"HX-Request": "true"})

        page = text_of(response)
        assert response.status_code == 200
        assert "<html" not in page and "hx-swap-oob" not in page
        assert 'data-step="users_worst_case"' in page
        seventy = resolve("value", "ladder.users_worst_case model=llama-3.1-70b").text.split()[0]
        assert f'<span class="tabular-nums">{seventy}</span>' in page

    def test_an_embed_shows_an_input_error_inside_its_results(self, client, loaded):
        page = text_of(client.get("/calculators/ladder/", {"embed": "1", "context": "-5"},
                                  headers={"HX-Request": "true"}))

        assert "Context limit:" in page and "alert-danger" in page

    def test_the_calculator_page_itself_is_unchanged_for_htmx(self, client, loaded):
        page = text_of(client.get("/calculators/ladder/", {"context": "-5"}, headers={"HX-Request": "true"}))

        assert "hx-swap-oob" in page and "calc-embed" not in page


class TestGlossary:
    def test_each_term_has_its_anchor_answer_and_chapter_section(self, client, loaded):
        page = text_of(client.get("/glossary/"))

        assert 'id="kv-cache"' in page and 'id="preemption"' in page
        assert "Evicting a running request to reclaim its cache blocks." in page
        assert 'href="/runbook/00-map/#preemption"' in page
        per_user = resolve("value", "ladder.per_user_gib").text
        assert f"{per_user} per user at the limit" in page

    def test_a_term_whose_chapter_is_unwritten_names_it_without_a_link(self, client, loaded):
        block = text_of(client.get("/glossary/")).split('id="mfu"', 1)[1].split("</dd>", 1)[0]

        assert "02 · Anatomy of a forward pass" in visible_text(block) and "in preparation" in block
        assert 'href="/runbook/02-forward-pass/' not in block


class TestErrata:
    def test_it_shows_claim_truth_why_and_the_live_proof(self, client, loaded):
        page = text_of(client.get("/errata/"))

        entry = page.split('id="gb-gib-mix"', 1)[1].split("</article>", 1)[0]
        corrected = resolve("convert", "52 GB GiB").text
        assert corrected == "48.43 GiB"
        assert f"52 GB is {corrected}" in entry
        assert "What was claimed" in entry and "52 GB / 1 GiB = 52 users" in entry
        assert "Why it matters" in entry and "A seven per cent error." in entry
        assert resolve("worked", "ladder.per_user_gib").text in html.unescape(entry)
        assert "<math" in entry
        assert "{{" not in page

    def test_the_sections_come_in_order(self, client, loaded):
        page = text_of(client.get("/errata/"))

        assert page.index('id="erratum-heading"') < page.index('id="checked-heading"') < page.index(
            'id="engine-heading"')
        assert "Checked and found right" in page and "Added by our engine" in page


class TestReading:
    def test_it_lists_stages_resources_and_the_bar(self, client, loaded):
        page = text_of(client.get("/reading/"))

        assert "Stage 1: Foundations" in page and "Transformer Inference Arithmetic" in page
        assert "kipply" in page and "2022" in page and "~1.5 h" in page
        assert "What it gives a senior candidate" in page and "The back-of-envelope method." in page
        bar = page.split('id="bar"', 1)[1]
        assert "Capacity math" in bar and 'href="#inference-arithmetic"' in bar

    def test_it_filters_by_stage_kind_and_level(self, client, loaded):
        by_stage = text_of(client.get("/reading/", {"stage": "2"}))
        by_kind = text_of(client.get("/reading/", {"kind": "blog post"}))
        by_level = text_of(client.get("/reading/", {"level": "advanced"}))

        assert 'id="pagedattention"' in by_stage and 'id="inference-arithmetic"' not in by_stage
        assert 'id="inference-arithmetic"' in by_kind and 'id="pagedattention"' not in by_kind
        assert 'id="pagedattention"' in by_level and 'id="inference-arithmetic"' not in by_level

    def test_unknown_filter_values_are_ignored(self, client, loaded):
        page = text_of(client.get("/reading/", {"stage": "99", "kind": "<script>", "level": "x"}))

        assert 'id="pagedattention"' in page and 'id="inference-arithmetic"' in page
        assert "<script>" not in page.split('id="reading-results"', 1)[1]

    def test_htmx_filtering_swaps_only_the_results(self, client, loaded):
        response = client.get("/reading/", {"stage": "1"},
                              headers={"HX-Request": "true", "HX-Target": "reading-results"})

        page = text_of(response)
        assert "<html" not in page and "<form" not in page
        assert 'id="inference-arithmetic"' in page and 'id="pagedattention"' not in page

    def test_the_filters_are_a_plain_get_form_that_works_without_javascript(self, client, loaded):
        page = text_of(client.get("/reading/"))

        assert re.search(r'<form method="get" action="/reading/"', page)
        assert 'hx-target="#reading-results"' in page


class TestSearch:
    def test_it_finds_a_glossary_term_first_with_its_passage(self, client, loaded):
        hits = search("preemption")

        assert hits[0].kind == "glossary" and hits[0].title == "Preemption"
        assert hits[0].url == "/glossary/#preemption"
        assert "<mark>" in hits[0].snippet
        kinds = {hit.kind for hit in hits}
        assert {"glossary", "chapter", "resource"} <= kinds

    def test_the_page_shows_ranked_hits_with_passages(self, client, loaded):
        page = text_of(client.get("/search/", {"q": "preemption"}))

        assert 'href="/glossary/#preemption"' in page
        assert 'href="/runbook/00-map/"' in page
        assert "<mark>" in page

    def test_it_finds_questions_and_errata(self, client, loaded):
        question = search("ladder GiB")
        erratum = search("binary")

        assert any(hit.kind == "question" and hit.url == "/runbook/00-map/#q-map-ladder" for hit in question)
        assert any(hit.kind == "erratum" and hit.url == "/errata/#gb-gib-mix" for hit in erratum)

    def test_live_numbers_are_searchable(self, client, loaded):
        hits = search("vocabulary")

        assert hits and hits[0].url == "/runbook/01-tokenisation/"
        assert resolve("config", "llama-3.1-8b.vocab_size").text in hits[0].snippet

    def test_unpublished_questions_are_not_found(self, client, loaded):
        assert not [hit for hit in search("nobody") if hit.kind == "question"]

    def test_markup_in_the_query_is_escaped(self, client, loaded):
        page = text_of(client.get("/search/", {"q": "<script>alert(1)</script>"}))

        assert "<script>alert(1)</script>" not in page

    def test_an_empty_query_finds_nothing(self, client, loaded):
        assert search("   ") == []

    def test_it_runs_on_this_database(self, loaded):
        # PostgreSQL full-text search in CI, the fallback on SQLite: the same hits either way.
        assert connection.vendor in ("postgresql", "sqlite")
        assert search("KV cache")[0].title == "KV cache"


class TestSearchFallbackHelpers:
    def test_query_terms_drop_stop_words_and_repeats(self):
        assert query_terms("What is the KV cache, the KV cache?") == ["kv", "cache"]
        assert query_terms("the") == ["the"]

    def test_the_snippet_is_cut_around_the_first_match_and_escaped(self):
        text = "word " * 100 + "the <preemption> rate " + "tail " * 100

        cut = snippet(text, ["preemption"])

        assert cut.startswith("… ") and cut.endswith(" …")
        assert "&lt;<mark>preemption</mark>&gt;" in cut
        assert len(cut) < 400


def test_chapter_numbers_are_unique(loaded):
    assert sorted(Chapter.objects.values_list("number", flat=True)) == [0, 1]


class TestAdmin:
    @pytest.mark.parametrize("model", ["runbook/chapter", "runbook/document", "runbook/track", "runbook/readingpath",
                                       "runbook/glossaryterm", "runbook/erratumentry", "runbook/stage",
                                       "runbook/bartopic", "runbook/resource", "drills/bankitem",
                                       "drills/probleminstance", "drills/attempt"])
    def test_every_model_has_an_admin_list(self, admin_client, loaded, model):
        assert admin_client.get(f"/admin/{model}/").status_code == 200

    def test_a_coach_item_is_searchable_from_its_own_text(self, loaded, coach):
        BankItem.objects.create(slug="coach-q", prompt="Explain speculative decoding acceptance.",
                                model_answer="Accepted tokens per step.", author=coach,
                                chapter=Chapter.objects.get(slug="00-map"))

        assert any(hit.url == "/runbook/00-map/#q-coach-q" for hit in search("speculative acceptance"))
