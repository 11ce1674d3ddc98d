"""The runbook's step-through figures: markup, engine numbers, options, and the stepper in a browser."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from calculators.engine.procedures.base import format_number
from calculators.families import FAMILIES
from runbook.content import render_markdown
from runbook.figures import FIGURES
from runbook.shortcodes import ShortcodeError, find_errors, resolve
from tests import needs
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
NAMES = ("roofline-batch", "prefill-decode-cache", "paged-blocks", "speculative-decoding", "chunked-prefill",
         "continuous-batching", "load-sweep", "capacity-ladder", "bpe-merges", "forward-pass", "request-journey",
         "kv-growth", "attention-shapes", "rope-bands", "number-formats", "tensor-split")
SVG = "{http://www.w3.org/2000/svg}"


def figure_html(shortcode_body: str) -> str:
    resolved = resolve("figure", shortcode_body)
    assert resolved.figure and not resolved.text
    return resolved.html


def parse(html: str) -> ET.Element:
    """The figure as XML (it is written well-formed, so the stdlib parser reads it)."""
    return ET.fromstring(html)


def frames_of(root: ET.Element) -> list[ET.Element]:
    return [div for div in root.iter("div") if "rb-figure-frame" in div.get("class", "").split()]


def steps_list(root: ET.Element) -> list[str]:
    ol = next(el for el in root.iter("ol") if el.get("class") == "rb-figure-steps")
    return ["".join(li.itertext()) for li in ol.findall("li")]


def plain(html: str) -> str:
    """The text of the figure, tags dropped (numbers may sit in SVG text or in captions)."""
    return " ".join(parse(html).itertext())


# --- every figure ----------------------------------------------------------------------------------


def test_every_figure_is_registered():
    assert set(NAMES) <= set(FIGURES)


@pytest.mark.parametrize("name", NAMES)
class TestEveryFigure:
    def test_renders_through_the_shortcode_as_one_figure(self, name):
        html = figure_html(name)
        root = parse(html)

        assert root.tag == "figure"
        assert root.get("class") == "rb-figure" and root.get("data-figure") == name
        assert root[0].tag == "figcaption"
        assert ' id="' not in html  # no ids: the same figure may appear twice on a page

    def test_one_svg_and_one_caption_per_step_and_the_numbered_list(self, name):
        root = parse(figure_html(name))
        frames = frames_of(root)
        steps = steps_list(root)

        assert len(frames) >= 4
        assert int(root.get("data-steps")) == len(frames) == len(steps)
        assert "is-current" in frames[0].get("class") and not any("is-current" in f.get("class") for f in frames[1:])
        for index, (frame, step) in enumerate(zip(frames, steps), start=1):
            svgs = frame.findall(f"{SVG}svg")
            assert len(svgs) == 1
            caption = frame.find("p")
            assert caption.get("class") == "rb-figure-caption"
            assert "".join(caption.itertext()).startswith(f"Step {index} of {len(frames)}")
            assert step and step in "".join(caption.itertext())

    def test_every_svg_is_accessible_and_scales(self, name):
        root = parse(figure_html(name))
        for svg in root.iter(f"{SVG}svg"):
            assert svg.get("role") == "img"
            assert svg.get("aria-label")
            assert svg[0].tag == f"{SVG}title" and svg[0].text == svg.get("aria-label")
            assert re.fullmatch(r"0 0 \d+ \d+", svg.get("viewBox"))
            assert svg.get("width") is None and svg.get("height") is None  # sized by the page, not fixed
            texts = [float(t.get("font-size")) for t in svg.iter(f"{SVG}text")]
            assert texts and min(texts) >= 11

    def test_each_svg_fragment_parses_on_its_own(self, name):
        html = figure_html(name)
        fragments = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)

        assert len(fragments) == len(frames_of(parse(html)))
        for fragment in fragments:
            assert ET.fromstring(fragment).tag == f"{SVG}svg"

    def test_controls_are_real_labelled_buttons_hidden_until_the_script_runs(self, name):
        root = parse(figure_html(name))
        controls = next(div for div in root.iter("div") if div.get("class") == "rb-figure-controls")
        buttons = controls.findall("button")

        assert controls.get("hidden") is not None
        assert [b.get("data-figure-action") for b in buttons] == ["prev", "play", "next"]
        assert all(b.get("type") == "button" and b.get("aria-label") for b in buttons)
        assert buttons[1].get("aria-label") == "Play the steps"
        assert any(span.get("class") == "rb-figure-counter" for span in controls.iter("span"))
        assert any(span.get("aria-live") == "polite" for span in controls.iter("span"))

    def test_renders_through_markdown_unsanitised_and_outside_a_paragraph(self, name):
        html = render_markdown(f"Before.\n\n{{{{figure {name}}}}}\n\nAfter.\n").html

        assert f'<figure class="rb-figure" data-figure="{name}"' in html
        assert "<p><figure" not in html
        assert html.count("<svg ") == len(frames_of(parse(figure_html(name))))
        assert 'role="img"' in html and 'data-figure-action="next"' in html

    def test_an_unknown_option_is_one_sentence(self, name):
        with pytest.raises(ValueError) as direct:
            FIGURES[name]({"colour": "red"})
        message = str(direct.value)
        assert f"The {name} figure has no option 'colour'" in message
        assert message.endswith(".") and message.count(". ") == 0

        with pytest.raises(ShortcodeError, match="no option 'colour'"):
            resolve("figure", f"{name} colour=red")

    def test_load_content_sees_a_bad_figure_shortcode(self, name):
        errors = find_errors(f"Text.\n\n{{{{figure {name} colour=red}}}}\n")

        assert len(errors) == 1 and errors[0][0] == 3


def test_an_unknown_figure_names_the_known_ones():
    with pytest.raises(ShortcodeError, match="Unknown figure 'nope'; known: .*roofline-batch"):
        resolve("figure", "nope")


def test_the_same_figure_twice_on_a_page():
    html = render_markdown("{{figure paged-blocks}}\n\n{{figure paged-blocks model=llama-3.1-70b}}\n").html

    assert html.count('data-figure="paged-blocks"') == 2
    assert "Llama-3.1-70B" in html


# --- the engine's numbers --------------------------------------------------------------------------


class TestRooflineBatch:
    def test_quotes_the_ridge_and_the_batch_at_the_ridge(self):
        html = figure_html("roofline-batch")
        roof = FAMILIES["roofline"].run({})
        ridge = format_number(roof.values["ridge_flop_per_byte"], "FLOP/byte")

        assert ridge == "295.3 FLOP/byte"
        assert ridge in plain(html)
        steps = steps_list(parse(html))
        assert [re.match(r"Batch ([\d,]+)", s).group(1) for s in steps] == ["1", "8", "32", "128", "295", "512"]
        assert "memory-bound" in steps[4] and "largest batch still memory-bound" in steps[4]
        assert "compute-bound" in steps[5] and "past the ridge" in steps[5]
        assert "989.4 TFLOP/s" in steps[5]
        assert "2,048.0 FLOP/byte" in steps[5]  # prefill, for comparison, in the final picture

    def test_each_caption_gives_batch_intensity_and_verdict(self):
        for step in steps_list(parse(figure_html("roofline-batch batches=1,64"))):
            batch = int(re.match(r"Batch ([\d,]+)", step).group(1).replace(",", ""))
            run = FAMILIES["roofline"].run({"batch": batch})
            assert format_number(run.values["decode_flop_per_byte"], "FLOP/byte") in step
            assert ("compute-bound" if run.values["decode_bound"] else "memory-bound") in step

    def test_options_change_the_card(self):
        html = figure_html("roofline-batch gpu=a100-sxm4-80gb model=llama-3.1-70b")
        ridge = FAMILIES["roofline"].run({"gpu": "a100-sxm4-80gb", "model": "llama-3.1-70b"})

        assert format_number(ridge.values["ridge_flop_per_byte"], "FLOP/byte") == "153.0 FLOP/byte"
        assert "153.0 FLOP/byte" in plain(html) and "A100 SXM4 80GB" in html

    def test_bad_batches_are_refused(self):
        with pytest.raises(ShortcodeError, match="batches must be whole numbers"):
            resolve("figure", "roofline-batch batches=1,x")
        with pytest.raises(ShortcodeError, match="Unknown GPU"):
            resolve("figure", "roofline-batch gpu=h9000")


class TestPrefillDecodeCache:
    def test_quotes_bytes_per_token_cache_ttft_and_tpot(self):
        html = figure_html("prefill-decode-cache")
        steps = steps_list(parse(html))
        kv = FAMILIES["kv"].run({"context": 2048})
        ttft = FAMILIES["prefill"].run({"prompt_tokens": 2048}).values["ttft_ms"]
        ceiling = FAMILIES["decode"].run({"context": 2048}).values["ceiling_tok_s"]

        assert len(steps) == 2 + 4
        assert format_number(kv.values["kv_bytes_per_token"], "B") == "131,072 B"
        assert "131,072 B" in steps[0]
        assert "all 2,048 prompt positions" in steps[1] and "at once" in steps[1]
        assert format_number(kv.values["per_user_gib"], "GiB") in steps[1]
        assert format_number(ttft, "ms") == "88.67 ms" and "88.67 ms" in steps[1]
        assert "Decode step 1" in steps[2] and "one row" in steps[2] and "position 2,049" in steps[2]
        assert format_number(ceiling, "tok/s") in steps[2] and format_number(1000 / ceiling, "ms") in steps[2]

    def test_steps_and_prompt_options(self):
        root = parse(figure_html("prefill-decode-cache prompt_tokens=6 steps=2 kv_dtype=fp8"))

        assert len(frames_of(root)) == 4
        assert "65,536 B" in " ".join(steps_list(root))  # fp8 halves the 131,072
        with pytest.raises(ShortcodeError, match="steps must be from 1 to 6"):
            resolve("figure", "prefill-decode-cache steps=9")


class TestPagedBlocks:
    def test_captions_count_blocks_and_quote_the_ladder(self):
        steps = steps_list(parse(figure_html("paged-blocks")))
        ladder = FAMILIES["ladder"].run({})

        assert len(steps) == 7
        assert "2 MiB" in steps[0] and "Used 0, free 24" in steps[0]
        assert "Request A (40 tokens) takes 3 blocks" in steps[1] and "Used 3, free 21" in steps[1]
        assert "Used 5, free 19" in steps[2] and "Used 10, free 14" in steps[3]
        for value in (format_number(ladder.values["per_user_gib"], "GiB"),
                      format_number(ladder.extra["paged_user_gib"], "GiB"),
                      format_number(ladder.values["users_worst_case"], "users"),
                      format_number(ladder.values["users_paged"], "users")):
            assert value in steps[3]
        assert "53 users" in steps[3] and "191 users" in steps[3] and "0.281 GiB" in steps[3]
        assert "finishes" in steps[4] and "Used 8, free 16" in steps[4]
        assert "same 40-token prefix" in steps[5] and "Used 8, free 16" in steps[5]
        assert "copy-on-write" in steps[6] and "Used 10, free 14" in steps[6]


class TestSpeculativeDecoding:
    def test_quotes_expected_tokens_for_the_alpha_and_gamma_shown(self):
        html = figure_html("speculative-decoding")
        spec = FAMILIES["spec"].run({"alpha": 0.8, "gamma": 4})
        steps = steps_list(parse(html))

        assert format_number(spec.values["expected_tokens"], "tok") == "3.362 tok"
        assert "3.362 tok" in steps[-1] and "α = 0.8" in steps[-1] and "γ + 1 = 5" in steps[-1]
        assert format_number(spec.values["speedup"], "1") + "×" in steps[-1]
        assert "accepted" in steps[2] and "thrown away" in steps[2]
        assert "bonus" in steps[3]
        assert "3.362 tok" in plain(html)

    def test_other_alpha_and_gamma(self):
        steps = steps_list(parse(figure_html("speculative-decoding alpha=0.6 gamma=2")))
        spec = FAMILIES["spec"].run({"alpha": 0.6, "gamma": 2})

        assert format_number(spec.values["expected_tokens"], "tok") in steps[-1]
        with pytest.raises(ShortcodeError, match="gamma must be from 1 to 6"):
            resolve("figure", "speculative-decoding gamma=12")
        with pytest.raises(ShortcodeError, match="alpha"):
            resolve("figure", "speculative-decoding alpha=1")


class TestChunkedPrefill:
    def test_chunks_add_up_to_the_engine_prefill_and_streams_keep_flowing(self):
        steps = steps_list(parse(figure_html("chunked-prefill")))
        whole = FAMILIES["prefill"].run({"prompt_tokens": 8192}).values["prefill_ms"]
        first = FAMILIES["prefill"].run({"prompt_tokens": 2048}).values["prefill_ms"]
        # Three streams at 2,300 tokens at the default bandwidth efficiency: (16,060,522,496 + 3 × 2,300 ×
        # 131,072) B ÷ (3,350 GB/s × 0.75) = 6.75 ms, not the 5.06 ms of peak bandwidth.
        step = FAMILIES["decode"].run({"batch": 3, "cached_tokens": 2300}).values["step_ms"]
        assert step == pytest.approx((16_060_522_496 + 3 * 2300 * 131_072) / (3350e9 * 0.75) * 1e3, rel=1e-3)

        assert len(steps) == 2 + 4
        assert format_number(step, "ms") in steps[0]
        assert format_number(whole, "ms") in steps[1] and "no running stream gets a token" in steps[1]
        assert f"chunk 1 (tokens 1–2,048) takes {format_number(first, 'ms')}" in steps[2]
        assert format_number(whole, "ms") in steps[-1] and "first token" in steps[-1]

    def test_too_many_chunks_are_refused(self):
        with pytest.raises(ShortcodeError, match="needs 2 to 8 chunks"):
            resolve("figure", "chunked-prefill chunk_tokens=512")


class TestContinuousBatching:
    def test_static_waits_and_continuous_refills(self):
        steps = steps_list(parse(figure_html("continuous-batching")))
        step = FAMILIES["decode"].run({"batch": 4, "cached_tokens": 2300}).values["step_ms"]  # derated, not peak

        assert "idle" in steps[0]
        assert "15 steps" in steps[2] and format_number(15 * step, "ms") in steps[2]
        assert "E takes its slot at step 3" in steps[3]
        assert "12 steps" in steps[4] and format_number(12 * step, "ms") in steps[4]


class TestCapacityLadder:
    def test_each_step_takes_its_share_until_a_user_count(self):
        steps = steps_list(parse(figure_html("capacity-ladder")))

        assert len(steps) == 7
        assert "79.65 GiB" in steps[0]  # 81,559 MiB ÷ 1,024
        assert "90 %" in steps[1] and "71.68 GiB" in steps[1]  # 79.65 × 0.9
        assert "14.96 GiB" in steps[2]  # 8,030,261,248 × 2 B ÷ 2³⁰
        assert "3.00 GiB" in steps[3]
        assert "53.73 GiB" in steps[4] and "1.00 GiB" in steps[4]  # 71.68 − 14.96 − 3; 131,072 B × 8,192
        assert "⌊53.73 GiB ÷ 1.00 GiB⌋ = 53 users" in steps[5]
        assert "2,300 tokens" in steps[6] and "0.281 GiB" in steps[6] and "191 users" in steps[6]

    def test_the_ladders_inputs_are_options_and_its_refusals_are_sentences(self):
        steps = steps_list(parse(figure_html("capacity-ladder kv_dtype=fp8")))
        fp8 = FAMILIES["ladder"].run({"kv_dtype": "fp8"})

        assert fp8.values["per_user_gib"] == 0.5  # 65,536 B × 8,192
        assert f"{int(fp8.values['users_worst_case'])} users" in steps[5] and "0.50 GiB" in steps[5]
        with pytest.raises(ShortcodeError, match="Unknown GPU"):
            resolve("figure", "capacity-ladder gpu=h9000")


class TestBpeMerges:
    def test_merges_are_learned_from_the_weighted_pair_counts(self):
        from runbook.figures.bpe_merges import CORPUS, learn_merges

        merges = [(pair, count) for pair, count, _ in learn_merges(CORPUS, 6)]
        # e+s: newest ×6 + widest ×3 = 9; then es+t 9; l+o: low ×5 + lower ×2 = 7; lo+w 7; n+e 6; ne+w 6.
        assert merges == [(("e", "s"), 9), (("es", "t"), 9), (("l", "o"), 7), (("lo", "w"), 7), (("n", "e"), 6),
                          (("ne", "w"), 6)]

    def test_captions_follow_the_run_and_encode_an_unseen_word(self):
        steps = steps_list(parse(figure_html("bpe-merges")))

        assert len(steps) == 1 + 6 + 1
        assert "79 symbols across 16 words" in steps[0]  # 3×5 + 5×2 + 6×6 + 6×3 = 15 + 10 + 36 + 18; 5 + 2 + 6 + 3
        assert "Merge 1: the most frequent pair is e + s, 9 times" in steps[1]
        assert "'lowest' never occurs in the corpus, yet it becomes 2 tokens: 'low' + 'est'" in steps[-1]
        assert "'newer'" in steps_list(parse(figure_html("bpe-merges word=newer merges=3")))[-1]
        with pytest.raises(ShortcodeError, match="lower-case letters"):
            resolve("figure", "bpe-merges word=Hello!")


class TestForwardPass:
    def test_component_counts_add_up_to_the_params_total(self):
        steps = steps_list(parse(figure_html("forward-pass")))

        assert len(steps) == 5
        assert "128,256 × 4,096 = 525,336,576" in steps[0]
        assert "41,943,040 parameters a layer, 1,342,177,280 over 32 layers" in steps[1]  # 2·4,096² + 2·4,096·1,024
        assert "176,160,768 parameters a layer, 5,637,144,576 in all" in steps[2]  # 3 × 4,096 × 14,336
        assert "another 128,256 × 4,096 = 525,336,576" in steps[3]
        # 2 × 525,336,576 + 1,342,177,280 + 5,637,144,576 + 266,240 (65 norms of 4,096)
        assert "8,030,261,248 parameters, 266,240 of them in the norms" in steps[4]

    def test_a_tied_head_adds_nothing(self):
        steps = steps_list(parse(figure_html("forward-pass model=gemma-2-9b")))

        assert "tied to the embedding table, so it adds none" in steps[3]
        assert format_number(FAMILIES["params"].run({"model": "gemma-2-9b"}).values["total_params"], "1") in steps[4]


class TestRequestJourney:
    def test_the_clock_is_the_allowance_prefill_and_decode_steps(self):
        steps = steps_list(parse(figure_html("request-journey")))
        first = FAMILIES["decode"].run({"context": 2048}).values["step_ms"]
        last = FAMILIES["decode"].run({"context": 2048 + 252}).values["step_ms"]
        ttft = FAMILIES["prefill"].run({"queue_ms": 20}).values["ttft_ms"]

        assert len(steps) == 5
        assert "128 KV blocks of 16 slots" in steps[0] and "0.25 GiB" in steps[0]  # 2,048 ÷ 16; 131,072 B × 2,048
        assert "assumed 20 ms" in steps[0]
        assert "88.67 ms" in steps[1] and "108.7 ms" in steps[2]  # 20 ms + 88.67 ms
        assert f"{format_number(first, 'ms')} at 2,048 tokens" in steps[3] and format_number(last, "ms") in steps[3]
        assert (f"about {format_number(ttft + 252 * first, 'ms')} to {format_number(ttft + 252 * last, 'ms')}"
                in steps[4])


class TestKvGrowth:
    def test_one_users_cache_and_the_users_it_leaves_at_each_limit(self):
        steps = steps_list(parse(figure_html("kv-growth")))

        # 131,072 B × 1,024 = 0.125 GiB, and ⌊53.73 ÷ 0.125⌋ = 429; × 8, × 4, × 4 from there.
        for step, gib, users in zip(steps, ("0.125 GiB", "1.00 GiB", "4.00 GiB", "16.00 GiB"), (429, 53, 13, 3)):
            assert gib in step and f"holds {users} such users" in step
        assert "grows linearly" in steps[1]

    def test_a_windowed_model_grows_more_slowly_and_bad_limits_are_refused(self):
        steps = steps_list(parse(figure_html("kv-growth model=mistral-7b-v0.1 contexts=4096,8192")))

        assert "0.50 GiB" in steps[0] and "0.50 GiB" in steps[1] and "grows more slowly" in steps[1]
        with pytest.raises(ShortcodeError, match="rising context limits"):
            resolve("figure", "kv-growth contexts=8192,1024")


class TestAttentionShapes:
    def test_each_variant_quotes_its_bytes_per_token_and_per_user_cache(self):
        steps = steps_list(parse(figure_html("attention-shapes")))

        assert [s.split(" (")[0] for s in steps] == ["MHA", "GQA", "MQA", "MLA", "sliding window"]
        assert "524,288 B" in steps[0] and "4.00 GiB" in steps[0]  # 2 × 32 × 32 × 128 × 2
        assert "131,072 B" in steps[1] and "1.00 GiB" in steps[1]  # 2 × 32 × 8 × 128 × 2
        assert "8,192 B" in steps[2] and "0.0625 GiB" in steps[2]  # 2 × 32 × 1 × 64 × 2
        assert "latent of 512" in steps[3] and "rotary key of 64" in steps[3]  # 27 × 576 × 2 B = 31,104 B
        assert "31,104 B" in plain(figure_html("attention-shapes"))
        assert "last 4,096 positions" in steps[4] and "0.50 GiB" in steps[4]  # the window halves 8,192


class TestRopeBands:
    def test_hollow_dots_are_the_engines_unseen_bands(self):
        root = parse(figure_html("rope-bands"))
        steps = steps_list(root)
        third = frames_of(root)[2]
        hollow = [c for c in third.iter(f"{SVG}circle") if c.get("fill") == "#ffffff"]

        assert "29 of the 64 bands" in steps[2]  # 64 − ⌊64 · ln(8,192 ÷ 2π) ÷ ln 500,000⌋ − 1
        assert len(hollow) == 29
        assert "6.283 tok" in steps[0] and "2,559,196 tok" in steps[1]
        assert "20,473,564 tok" in steps[3]  # 8 × 2,559,196
        assert "18 bands unseen" in steps[4] and "4,096 tokens" in steps[4]

    def test_no_comparison_frame_on_request(self):
        assert len(frames_of(parse(figure_html("rope-bands compare=none")))) == 4


class TestNumberFormats:
    def test_rows_are_the_formats_bits_and_values(self):
        root = parse(figure_html("number-formats"))
        steps = steps_list(root)
        last = frames_of(root)[-1]
        letters = [t.text for t in last.iter(f"{SVG}text") if t.text in ("S", "E", "M")]

        assert len(letters) == 3 + 32 + 16 + 16 + 8 + 8 + 4  # the legend and every bit of the six rows
        assert "bf16 (bfloat16): 8 exponent bits and 7 stored mantissa bits" in steps[1]
        assert "largest value 3.39e38, machine epsilon 0.0078125" in steps[1]  # (2 − 2⁻⁷) × 2¹²⁷; 2⁻⁷
        assert "65,504" in steps[2] and "448" in steps[3] and "57,344" in steps[4]
        assert "1 stored mantissa bit;" in steps[5] and "4.5 bits a value" in steps[5]  # 4 + 8 ÷ 16

    def test_an_integer_format_is_refused(self):
        with pytest.raises(ShortcodeError, match="'int8' is an integer format"):
            resolve("figure", "number-formats formats=bf16,int8")


class TestTensorSplit:
    def test_each_degree_quotes_the_ladder_of_the_replica(self):
        steps = steps_list(parse(figure_html("tensor-split")))

        assert "131.42 GiB of weights against 71.68 GiB usable: short by 62.73 GiB" in steps[0]
        assert "65.71 GiB" in steps[1] and "5.95 GiB: 2 users worst case, 8 paged" in steps[1]
        assert "57 users worst case, 203 paged" in steps[2]
        assert "16.43 GiB" in steps[3] and "167 users worst case, 594 paged" in steps[3]

    def test_past_the_kv_heads_the_cache_is_copied(self):
        steps = steps_list(parse(figure_html("tensor-split degrees=8,16")))

        assert "past 8 cards each K/V head is copied ×2" in steps[1]
        with pytest.raises(ShortcodeError, match="rising degrees"):
            resolve("figure", "tensor-split degrees=8,4")


# --- the page: script, styles -----------------------------------------------------------------------


def test_the_chapter_page_loads_the_stepper_script_deferred():
    template = (ROOT / "templates" / "runbook" / "chapter.html").read_text()

    assert re.search(r"<script src=\"\{% static 'js/figures.js' %\}\" defer></script>", template)
    assert (ROOT / "static" / "js" / "figures.js").is_file()


def test_the_styles_stack_frames_without_script_and_print_the_final_picture():
    css = (ROOT / "static" / "css" / "app.css").read_text()
    section = css[css.index("/* figures */"):]

    assert ".rb-figure.is-enhanced .rb-figure-frame" in section
    printed = section[section.index("@media print"):]
    assert ".rb-figure-controls { display: none !important; }" in printed
    assert ".rb-figure .rb-figure-frame:last-child" in printed
    assert ".rb-figure-steps { display: block;" in printed


# --- the stepper in a real browser --------------------------------------------------------------------


def _page_html(body: str, script: bool = True) -> str:
    css = (ROOT / "static" / "css" / "app.css").read_text()
    js = (ROOT / "static" / "js" / "figures.js").read_text() if script else ""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><style>{css}</style></head>"
            f"<body><div class='rb-prose'>{body}</div><script>{js}</script></body></html>")


@pytest.fixture
def browser_page():
    sync_api = needs.module("playwright.sync_api")
    needs.file("/usr/bin/chromium", "apt-get install chromium (.ci/run installs it)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser.new_page(viewport={"width": 390, "height": 900})
        finally:
            browser.close()


@pytest.mark.browser
def test_the_stepper_shows_one_frame_and_steps_with_buttons_and_keys(browser_page):
    page = browser_page
    page.set_content(_page_html(figure_html("paged-blocks")))
    visible = "Array.from(document.querySelectorAll('.rb-figure-frame')).filter(f => " \
              "getComputedStyle(f).visibility === 'visible').map(f => f.dataset.step)"

    assert page.evaluate(visible) == ["1"]
    assert page.is_visible(".rb-figure-controls")
    assert page.inner_text(".rb-figure-counter") == "Step 1 of 7"
    assert page.get_attribute("[data-figure-action=prev]", "aria-disabled") == "true"
    page.click("[data-figure-action=next]")
    page.click("[data-figure-action=next]")
    page.wait_for_function(f"JSON.stringify({visible}) === '[\"3\"]'", timeout=3000)  # after the cross-fade
    assert page.inner_text(".rb-figure-counter") == "Step 3 of 7"
    assert "Request B" in page.inner_text(".rb-figure-live")
    page.focus("[data-figure-action=next]")  # the arrow keys step the figure that holds the focus
    page.keyboard.press("ArrowLeft")
    assert page.inner_text(".rb-figure-counter") == "Step 2 of 7"
    page.click("[data-figure-action=play]")
    assert page.get_attribute("[data-figure-action=play]", "aria-label") == "Pause"
    assert page.inner_text(".rb-figure-play-text") == "Pause"
    page.wait_for_function("document.querySelector('.rb-figure-counter').textContent === 'Step 3 of 7'",
                           timeout=6000)  # playing advances on its own
    page.click("[data-figure-action=play]")
    assert page.get_attribute("[data-figure-action=play]", "aria-label") == "Play the steps"
    # At 390 px the SVG scales down to fit.
    width = page.evaluate("document.querySelector('.rb-figure-frame.is-current svg').getBoundingClientRect().width")
    assert 300 < width <= 390


@pytest.mark.browser
def test_without_script_every_frame_shows_and_print_shows_the_final_picture_and_the_list(browser_page):
    page = browser_page
    page.set_content(_page_html(figure_html("roofline-batch"), script=False))
    shown = "Array.from(document.querySelectorAll('.rb-figure-frame')).filter(f => " \
            "f.getBoundingClientRect().height > 0 && getComputedStyle(f).visibility === 'visible')" \
            ".map(f => f.dataset.step)"

    assert page.evaluate(shown) == ["1", "2", "3", "4", "5", "6"]
    assert not page.is_visible(".rb-figure-controls")
    assert not page.is_visible(".rb-figure-steps")

    page.set_content(_page_html(figure_html("roofline-batch")))
    page.emulate_media(media="print")
    assert page.evaluate(shown) == ["6"]
    assert page.is_visible(".rb-figure-steps") and not page.is_visible(".rb-figure-controls")
    assert page.locator(".rb-figure-steps li").count() == 6


# --- load-sweep: the serving simulator's numbers, rate by rate ----------------------------------------


def test_load_sweep_captions_are_the_simulators_numbers_and_mark_its_knee():
    from calculators.sim.run import simulate

    # The reference stack at its calibration row (a step pays the row's fixed overhead): TPOT p50 8.4 ms at
    # 5 req/s and 13.6 ms at 30 (generator v28's row), so a 12 ms target has a knee inside the sweep.
    raw = {"prompt_tokens": "512", "output_tokens": "256", "tpot_slo_ms": "12", "ttft_slo_ms": "1000"}
    sweep = simulate({**raw, "sweep": "5,10,20,30"})
    root = parse(figure_html("load-sweep prompt_tokens=512 output_tokens=256 tpot_slo_ms=12 ttft_slo_ms=1000 "
                             "rates=5,10,20,30"))
    steps = steps_list(root)

    assert len(steps) == 4
    for step, point in zip(steps, sweep["sweep"]):
        assert step.startswith(f"At {format_number(point['rate_req_s'], 'req/s')}: TPOT p50 "
                               f"{format_number(point['tpot_ms']['p50'], 'ms')}, p99 "
                               f"{format_number(point['tpot_ms']['p99'], 'ms')} against a 12 ms target")
        assert f"goodput {format_number(point['goodput_req_s'], 'req/s')}" in step
    # TPOT only climbs with the rate: every added sequence brings its cache read to each step.
    p50s = [point["tpot_ms"]["p50"] for point in sweep["sweep"]]
    assert p50s == sorted(p50s) and p50s[-1] > 12 > p50s[0]
    assert sweep["knee_req_s"] in (5, 10, 20)
    assert steps[-1].endswith(f"is {format_number(sweep['knee_req_s'], 'req/s')}.")


def test_load_sweep_refuses_bad_rates_and_says_the_simulators_sentence():
    with pytest.raises(ValueError, match="from 2 to 8 rates"):
        FIGURES["load-sweep"]({"rates": "5"})
    with pytest.raises(ValueError, match="Unknown GPU"):
        FIGURES["load-sweep"]({"gpu": "h100-sxm-80gb"})
