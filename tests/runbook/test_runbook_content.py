"""Rendering a runbook text: Markdown features, sanitising, live numbers, glossary links, contents, cache."""

from __future__ import annotations

import re

import pytest

from runbook import content
from runbook.content import (
    GlossaryEntry,
    GlossaryMatcher,
    escape_markdown,
    plain_text,
    render_markdown,
    strip_paragraph,
)
from runbook.shortcodes import ShortcodeError, resolve


def html_of(markdown: str, glossary: GlossaryMatcher | None = None) -> str:
    return render_markdown(markdown, glossary).html


def links(html: str) -> list[tuple[str, str]]:
    """(href, text) of every glossary link."""
    return re.findall(r'<a href="([^"]+)" class="glossary-link"[^>]*>([^<]+)</a>', html)


GLOSSARY = GlossaryMatcher([
    GlossaryEntry("kv-cache", ("KV cache", "KV caches"), "The keys and values of past tokens."),
    GlossaryEntry("preemption", ("Preemption", "preemption"), "Evicting a request."),
    GlossaryEntry("ttft", ("TTFT", "time to first token"), "Queue plus prefill."),
], "/glossary/")


class TestMarkdown:
    def test_tables_render_with_header_cells(self):
        html = html_of("| step | value |\n|---|--:|\n| card | 79.65 GiB |\n")

        assert "<table>" in html and "<th>step</th>" in html
        # Alignment is a class, never a style attribute (the Content-Security-Policy allows no inline style).
        assert '<td class="text-end">79.65 GiB</td>' in html and "style=" not in html

    def test_footnotes_render_with_references_and_notes(self):
        html = html_of("A claim.[^1]\n\n[^1]: Its source.\n")

        assert 'class="footnote-ref"' in html
        assert '<li id="fn1" class="footnote-item">' in html
        assert "Its source." in html

    def test_an_explicit_anchor_becomes_the_heading_id(self):
        html = html_of("## The formula {#formula}\n\nText.\n")

        assert '<h2 id="formula">The formula</h2>' in html
        assert "{#" not in html

    def test_headings_without_an_anchor_get_one_from_their_text(self):
        html = html_of("## Worst case and paged\n\n### A detail\n\n## Worst case and paged\n")

        assert '<h2 id="worst-case-and-paged">' in html
        assert '<h3 id="a-detail">' in html
        assert '<h2 id="worst-case-and-paged-1">' in html

    def test_the_contents_are_the_level_two_headings(self):
        rendered = render_markdown("Intro.\n\n## One {#one}\n\n### Sub\n\n## Two {{value ladder.users_worst_case}}\n")

        assert [(h.anchor, h.title) for h in rendered.toc] == [("one", "One"), ("two-53-users", "Two 53 users")]

    def test_strikethrough_and_typographic_quotes(self):
        html = html_of('~~52~~ 53 -- "quoted"\n')

        assert "<s>52</s>" in html
        assert "“quoted”" in html


class TestSanitising:
    def test_script_elements_are_removed_with_their_content(self):
        html = html_of("Before.\n\n<script>alert('x')</script>\n\nAfter <script>alert(2)</script> text.\n")

        assert "<script" not in html and "alert" not in html
        assert "Before." in html and "After" in html

    def test_event_handler_attributes_are_dropped(self):
        html = html_of('<img src="/static/x.png" onerror="alert(1)" alt="x">\n\n<p onclick="alert(2)">Hi</p>\n')

        assert "onerror" not in html and "onclick" not in html and "alert" not in html
        assert '<img src="/static/x.png" alt="x">' in html

    def test_javascript_urls_never_survive(self):
        html = html_of('[click](javascript:alert(1)) and <a href="javascript:alert(2)">raw</a> '
                       '<a href="JaVaScRiPt:alert(3)">mixed</a>\n')

        assert not re.search(r'href="\s*javascript', html, re.IGNORECASE)
        assert "<a>raw</a>" in html and "<a>mixed</a>" in html

    def test_styles_and_iframes_are_removed(self):
        html = html_of('<style>body{display:none}</style><iframe src="https://example.com"></iframe>Text\n')

        assert "<style" not in html and "<iframe" not in html and "display:none" not in html

    def test_allowed_markup_survives(self):
        html = html_of("<details><summary>More</summary>\n\n*inside*\n\n</details>\n\nH<sub>2</sub>O <kbd>Ctrl</kbd>\n")

        assert "<details>" in html and "<summary>More</summary>" in html
        assert "<sub>2</sub>" in html and "<kbd>Ctrl</kbd>" in html


class TestShortcodes:
    def test_a_value_is_the_engines_number_with_its_unit(self):
        assert html_of("{{value ladder.users_worst_case}} fit.") == "<p>53 users fit.</p>\n"

    def test_values_for_other_inputs_and_without_unit(self):
        html = html_of("{{value ladder.users_worst_case model=llama-3.1-70b weights_dtype=fp8}} and "
                       "{{value kv.kv_bytes_per_token model=llama-3.1-70b as=number}}")

        assert html == "<p>1 user and 327,680</p>\n"

    def test_worked_convert_gpu_and_config_read_from_the_engine(self):
        html = html_of("{{worked kv.kv_bytes_per_token}}; {{convert 52 GB GiB}}; "
                       "{{gpu h100-sxm5-80gb.bandwidth_gb_s}}; {{config llama-3.1-8b.num_hidden_layers}}")

        assert html == "<p>2 × 32 × 8 × 128 × 2 B = 131,072 B; 48.43 GiB; 3,350 GB/s; 32</p>\n"

    def test_the_links_of_a_card_are_quoted_from_the_catalog(self):
        # gpus.json: NVL72 racks put 72 cards in one NVLink domain at 900 GB/s per direction; an HGX H100
        # node 8, with PCIe at 64 GB/s and 50 GB/s of scale-out per card.
        html = html_of("{{gpu gb200-nvl72.nvlink_domain_gpus}}; {{gpu gb200-nvl72.nvlink_gb_s_per_direction}}; "
                       "{{gpu h100-sxm5-80gb.nvlink_domain_gpus}}; {{gpu h100-sxm5-80gb.pcie_gb_s_per_direction}}; "
                       "{{gpu h100-sxm5-80gb.scale_out_gb_s}}; {{gpu l4.nvlink_domain_gpus}}")

        assert html == "<p>72 GPUs; 900 GB/s; 8 GPUs; 64 GB/s; 50 GB/s; 1 GPU</p>\n"

    def test_a_link_the_catalog_does_not_record_is_an_error(self):
        with pytest.raises(ShortcodeError, match="no scale_out_gb_s"):
            html_of("{{gpu mi355x.scale_out_gb_s}}")

    def test_a_note_is_escaped_so_its_characters_stay_literal(self):
        note = resolve("note", "ladder.0").text

        html = html_of("Note: {{note ladder.0}}")

        assert "{{" not in html and len(note) > 10
        assert re.sub(r"<[^>]+>", "", html).strip() == "Note: " + note.replace("&", "&amp;").replace("<", "&lt;")

    def test_escaping_keeps_markdown_specials_literal(self):
        text = "a*b*_c_ [x](y) <b> & | ~~z~~ `q`"

        html = html_of(escape_markdown(text))

        assert html == "<p>a*b*_c_ [x](y) &lt;b&gt; &amp; | ~~z~~ `q`</p>\n"

    def test_a_formula_becomes_mathml_after_sanitising(self):
        html = html_of("Before.\n\n{{formula kv.kv_bytes_per_token}}\n\nAfter.\n")

        assert '<div class="rb-formula"><math display="block">' in html
        assert "<mi>layers</mi>" in html
        assert "<p><div" not in html and "rbsc" not in html

    def test_a_calculator_is_embedded_with_its_preset_and_htmx_target(self):
        html = html_of("{{calculator ladder model=llama-3.1-70b}}\n")

        assert 'class="calc-embed" id="calc-ladder-1"' in html
        assert 'action="/calculators/ladder/"' in html and 'hx-get="/calculators/ladder/"' in html
        assert 'hx-target="#calc-ladder-1-results"' in html
        assert 'id="calc-ladder-1-results"' in html
        assert '<option value="llama-3.1-70b" selected>' in html
        assert 'name="embed" value="calc-ladder-1"' in html  # the results name the embed's link to update
        assert ('<a class="calc-embed-open" id="calc-ladder-1-open" '
                'href="/calculators/ladder/?model=llama-3.1-70b">' in html)
        seventy = resolve("value", "ladder.users_worst_case model=llama-3.1-70b").text.split()[0]
        assert f'<span class="tabular-nums">{seventy}</span>' in html

    def test_an_input_may_be_another_runs_step_at_full_precision(self):
        # slo on the 70B node (8 H100s, 2,300-token conversations) gives 16,082.84 tok/s; an hour of it is
        # 16,082.84 × 3,600 = 57,898,238 tokens (a pasted 16,082.8 would give 57,898,080), for $3 × 8 = $24.
        html = html_of("{{worked cost.usd_per_million_tokens gpus=8 tokens_per_s=slo.tokens_per_s(context=2300)}}")
        throughput = resolve("value", "slo.tokens_per_s context=2300 as=raw").text
        embed = resolve("calculator", "cost gpus=16 tokens_per_s=slo.tokens_per_s(context=2300)")

        assert html == "<p>$24.00/h × 1 h ÷ 57,898,238 = $0.41/Mtok</p>\n"
        assert throughput.startswith("16082.84")
        assert embed.calculator == ("cost", {"gpus": "16", "tokens_per_s": throughput})

    @pytest.mark.parametrize("body", ["cost.usd_per_hour tokens_per_s=slo.nope(context=2300)",
                                      "cost.usd_per_hour tokens_per_s=slo.tokens_per_s(context=2300",
                                      "cost.usd_per_hour tokens_per_s=slo.tokens_per_s(gpus=kv.kv_replication(gpus=2))",
                                      "cost.usd_per_hour tokens_per_s=slo.0(context=2300)"])
    def test_a_reference_that_names_no_number_is_an_error(self, body):
        with pytest.raises(ShortcodeError):
            resolve("value", body)

    def test_two_calculators_get_distinct_ids(self):
        html = html_of("{{calculator ladder}}\n\n{{calculator kv model=llama-3.1-70b}}\n")

        assert 'id="calc-ladder-1"' in html and 'id="calc-kv-2"' in html

    def test_a_figure_is_inserted_whole_after_sanitising(self, monkeypatch):
        from runbook.figures import FIGURES

        monkeypatch.setitem(FIGURES, "test-figure", lambda options: (
            f'<figure class="rb-steps" data-n="{options.get("n", "1")}"><svg></svg><script>step()</script></figure>'))

        html = html_of("Before.\n\n{{figure test-figure n=3}}\n\n<script>evil()</script>\n")

        assert '<figure class="rb-steps" data-n="3"><svg></svg><script>step()</script></figure>' in html
        assert "evil" not in html and "<p><figure" not in html

    def test_an_unresolvable_shortcode_raises(self):
        with pytest.raises(ShortcodeError):
            html_of("{{value ladder.nope}}")

    def test_plain_text_fills_numbers_and_leaves_out_formulas(self):
        text = plain_text("## Users\n\n**{{value ladder.users_worst_case}}** fit.\n\n"
                          "{{formula kv.kv_bytes_per_token}}\n")

        assert text == "Users\n53 users fit."


class TestGlossaryLinks:
    def test_the_first_occurrence_per_section_links_to_the_glossary(self):
        html = html_of("The KV cache grows. The KV cache again.\n\n## Next {#next}\n\nA KV cache here too.\n", GLOSSARY)

        assert links(html) == [("/glossary/#kv-cache", "KV cache"), ("/glossary/#kv-cache", "KV cache")]
        assert 'title="The keys and values of past tokens."' in html

    def test_never_inside_headings_code_or_links(self):
        markdown = ("## The KV cache {#kv}\n\n"
                    "`KV cache` in code, [the KV cache](/runbook/06-kv-cache/) as a link.\n\n"
                    "```\nKV cache in a fence\n```\n\n"
                    "Then the KV cache in prose.\n")

        html = html_of(markdown, GLOSSARY)

        assert links(html) == [("/glossary/#kv-cache", "KV cache")]
        assert '<h2 id="kv">The KV cache</h2>' in html
        assert "<code>KV cache</code>" in html
        assert html.index('class="glossary-link"') > html.index("Then the")

    def test_each_term_links_once_per_section_whatever_its_spelling(self):
        html = html_of("KV caches fill; the KV cache is full; Preemption starts, preemption repeats.\n", GLOSSARY)

        assert links(html) == [("/glossary/#kv-cache", "KV caches"), ("/glossary/#preemption", "Preemption")]

    def test_acronyms_match_in_their_own_case_only_and_whole_words_only(self):
        html = html_of("ttft is not TTFT; preemptions count, preemptive does not.\n", GLOSSARY)

        assert links(html) == [("/glossary/#ttft", "TTFT"), ("/glossary/#preemption", "preemptions")]

    def test_terms_in_table_cells_and_shortcode_text_are_linked(self):
        html = html_of("| a |\n|---|\n| time to first token |\n", GLOSSARY)

        assert links(html) == [("/glossary/#ttft", "time to first token")]

    def test_no_glossary_no_links(self):
        assert "glossary-link" not in html_of("The KV cache.\n")


class TestHelpers:
    def test_strip_paragraph_only_unwraps_a_single_paragraph(self):
        assert strip_paragraph("<p>One <em>line</em></p>\n") == "One <em>line</em>"
        assert strip_paragraph("<p>One</p>\n<p>Two</p>") == "<p>One</p>\n<p>Two</p>"

    def test_the_engine_version_is_stable_within_a_process(self):
        assert content.engine_version() == content.engine_version()
        assert len(content.engine_version()) == 16


@pytest.mark.django_db
class TestCache:
    def test_a_chapter_renders_once_then_comes_from_the_cache(self, monkeypatch):
        from django.core.cache import cache

        from runbook.models import Chapter

        cache.clear()
        chapter = Chapter.objects.create(number=0, slug="00-map", title="The map", summary="s", reading_minutes=1,
                                         body="{{value ladder.users_worst_case}} fit.", content_hash="abc")
        calls = []
        real = content.render_markdown
        monkeypatch.setattr(content, "render_markdown", lambda *a, **k: calls.append(1) or real(*a, **k))

        first = content.render_chapter(chapter)
        second = content.render_chapter(chapter)

        assert first.html == second.html == "<p>53 users fit.</p>\n"
        assert len(calls) == 1

    def test_a_new_glossary_term_renders_the_chapter_again(self):
        from django.core.cache import cache

        from runbook.models import Chapter, GlossaryTerm

        cache.clear()
        chapter = Chapter.objects.create(number=0, slug="00-map", title="The map", summary="s", reading_minutes=1,
                                         body="The KV cache.", content_hash="abc")
        assert "glossary-link" not in content.render_chapter(chapter).html

        GlossaryTerm.objects.create(slug="kv-cache", term="KV cache", answer="Keys and values.")

        assert links(content.render_chapter(chapter).html) == [("/glossary/#kv-cache", "KV cache")]
