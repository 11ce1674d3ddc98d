"""The calculator pages: index, one page per family, htmx partials, errors and change highlighting."""

import html
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.paths import REPO_ROOT

BASE_DIR = REPO_ROOT

LADDER = "/calculators/ladder/"
LADDER_KEYS = ["card_gib", "usable_gib", "weights_gib", "kv_budget_gib", "kv_bytes_per_token",
               "per_user_gib", "users_worst_case", "users_paged"]
LADDER_INPUTS = ["model", "config", "gpu", "gpus", "pp", "weights_dtype", "weights_bits", "kv_dtype", "context",
                 "utilization", "reserve_gib", "avg_tokens", "block_size"]

pytestmark = pytest.mark.django_db


def step_classes(page: str) -> dict[str, str]:
    """Each rendered step's key and its CSS classes, in page order."""
    return dict(re.findall(r'<li id="step-([a-z_]+)" class="([^"]*)"', page))


def step_value(page: str, key: str) -> str:
    """The displayed value of one step."""
    block = page.split(f'id="step-{key}"', 1)[1]
    return re.search(r'<div class="calc-value">\s*<span class="tabular-nums">([^<]*)</span>', block).group(1)


def headline(page: str, key: str) -> str:
    """The big number of a headline card (number and unit)."""
    block = page.split(f'id="headline-{key}"', 1)[1]
    match = re.search(r'calc-headline-number[^>]*><span class="tabular-nums">([^<]*)</span>', block)
    return match.group(1)


def field_error(page: str, name: str) -> str:
    """The text of the error container beside an input ('' when it is fine)."""
    match = re.search(rf'<div id="error-{name}"[^>]*>(.*?)</div>', page, re.S)
    assert match, f"no error container for {name}"
    return html.unescape(re.sub(r"<[^>]+>", "", match.group(1))).strip()


def input_value(page: str, name: str) -> str:
    """The value an input or textarea shows."""
    textarea = re.search(rf'<textarea name="{name}"[^>]*>(.*?)</textarea>', page, re.S)
    if textarea:
        return html.unescape(textarea.group(1)).strip("\n")
    tag = re.search(rf'<input[^>]*name="{name}"[^>]*>', page).group(0)
    value = re.search(r'value="([^"]*)"', tag)
    return html.unescape(value.group(1)) if value else ""


def previous_of(page: str) -> str:
    """The hidden ``previous`` value the results carry into the next request."""
    return input_value(page, "previous")


def catalog_config(model_id: str) -> str:
    """A catalog model's config.json, as a user would paste it."""
    models = json.loads((BASE_DIR / "fixtures" / "catalog" / "models.json").read_text())
    entry = next(m for m in models if m["id"] == model_id)
    return json.dumps(entry["config"], indent=2)


class TestIndex:
    def test_it_lists_the_four_families_with_links(self, client):
        response = client.get("/calculators/")

        assert response.status_code == 200
        page = response.content.decode()
        for slug, title in [("ladder", "Capacity ladder"), ("kv", "KV cache"), ("params", "Parameter count"),
                            ("weights", "Weight memory")]:
            assert f'href="/calculators/{slug}/"' in page
            assert title in page

    def test_it_is_named_calculators_index(self):
        from django.urls import reverse

        assert reverse("calculators:index") == "/calculators/"
        assert reverse("calculators:calculator", args=["kv"]) == "/calculators/kv/"


class TestLadderPage:
    def test_it_shows_the_reference_stack_in_eight_steps(self, client):
        response = client.get(LADDER)

        assert response.status_code == 200
        page = response.content.decode()
        assert "<html" in page
        assert list(step_classes(page)) == LADDER_KEYS
        assert step_value(page, "weights_gib") == "14.96 GiB"
        assert step_value(page, "kv_bytes_per_token") == "131,072 B"
        assert step_value(page, "per_user_gib") == "1.00 GiB"
        assert step_value(page, "users_worst_case") == "53 users"
        assert step_value(page, "users_paged") == "191 users"

    def test_it_puts_the_user_counts_in_headlines(self, client):
        page = client.get(LADDER).content.decode()

        assert headline(page, "users_worst_case") == "53"
        assert headline(page, "users_paged") == "191"
        assert "0.281 GiB each" in page

    def test_an_average_past_the_context_limit_is_quoted_as_the_capped_length_it_used(self, client):
        # 9,000 tokens on an 8,192-token limit: the engine charges 8,192 (512 blocks × 16 × 131,072 B = 1.00 GiB).
        page = client.get(LADDER, {"avg_tokens": "9000", "context": "8192"}).content.decode()

        assert "8,192-token average conversation in 16-token blocks, 1.00 GiB each" in page
        assert "9,000-token average conversation" not in page
        assert "The average conversation (9,000 tokens) is longer than the context" in page

    def test_it_shows_the_worked_substitution_and_the_notes(self, client):
        page = client.get(LADDER).content.decode()

        assert "2 × 32 × 8 × 128 × 2 B = 131,072 B" in page
        assert "81,559 MiB as the driver reports it" in page

    def test_it_renders_formulas_as_mathml_not_latex(self, client):
        page = client.get(LADDER).content.decode()

        assert page.count("<math") == 8
        assert "$$" not in page
        assert "\\frac" not in page

    def test_it_defaults_the_form_to_the_reference_stack(self, client):
        page = client.get(LADDER).content.decode()

        assert re.search(r'<option value="llama-3.1-8b" selected>', page)
        assert re.search(r'<option value="h100-sxm5-80gb" selected>', page)
        assert input_value(page, "context") == "8192"
        assert input_value(page, "utilization") == "0.9"
        assert input_value(page, "reserve_gib") == "3"
        assert input_value(page, "weights_bits") == ""

    def test_it_is_a_get_form_that_works_without_javascript(self, client):
        page = client.get(LADDER).content.decode()

        form = re.search(r"<form [^>]*calc-form[^>]*>", page, re.S).group(0)
        assert 'method="get"' in form
        assert 'action="/calculators/ladder/"' in form
        assert 'hx-get="/calculators/ladder/"' in form
        assert 'hx-trigger="input delay:600ms, change, submit"' in form
        assert 'hx-target="#results"' in form
        assert '<button type="submit"' in page

    def test_number_inputs_are_text_boxes_the_server_bounds(self, client):
        page = client.get(LADDER).content.decode()

        # A text box with a numeric keypad: a number box would send "" for "1e309" or "2^13" (issue 20).
        context = re.search(r'<input[^>]*name="context"[^>]*>', page).group(0)
        assert 'type="text"' in context and 'inputmode="numeric"' in context and "min=" not in context
        over = client.get(LADDER, {"context": "20000000"}).content.decode()
        assert "Must be at most 10,000,000." in over
        # A fraction is a text box, so "90%" can be typed (a number box would refuse the '%').
        utilization = re.search(r'<input[^>]*name="utilization"[^>]*>', page).group(0)
        assert 'type="text"' in utilization and 'inputmode="decimal"' in utilization

    @pytest.mark.parametrize("field", ["context", "utilization", "reserve_gib"])
    def test_a_number_too_large_for_a_double_says_so(self, client, field):
        page = client.get(LADDER, {field: "1e309"}).content.decode()
        error = re.search(rf'id="error-{field}"[^>]*>(.*?)</div>', page, re.S).group(1)
        assert "Could not work out &#x27;1e309&#x27;: a number in it is too large." in error
        assert 'value="1e309"' in re.search(rf'<input[^>]*name="{field}"[^>]*>', page).group(0)

    @pytest.mark.parametrize("typed", ["90%", "90 %", "0.9"])
    def test_a_fraction_may_be_typed_as_a_percentage(self, client, typed):
        page = client.get(LADDER, {"utilization": typed}).content.decode()

        assert input_value(page, "utilization") == typed
        assert headline(page, "users_worst_case") == "53"
        assert step_value(page, "users_paged") == "191 users"

    def test_an_unreadable_percentage_says_what_was_read(self, client):
        page = client.get(LADDER, {"utilization": "9o%"}).content.decode()

        assert "Could not read &#x27;9o%&#x27;: &#x27;o%&#x27; is not a unit I know; this field expects a plain " \
               "number, such as 0.9 or 90%." in page

    def test_it_serves_one_user_of_llama_70b_at_fp8(self, client):
        page = client.get(LADDER, {"model": "llama-3.1-70b", "weights_dtype": "fp8"}).content.decode()

        assert headline(page, "users_worst_case") == "1"
        assert "Does not fit" not in page

    def test_it_says_when_nothing_fits_and_which_tp_degree_would(self, client):
        page = client.get(LADDER, {"model": "llama-3.1-70b"}).content.decode()

        alert = re.search(r'<div class="alert alert-danger calc-alert" role="alert">(.*?)</div>', page, re.S)
        assert alert, "a not-fitting stack shows a danger alert"
        assert "Does not fit" in alert.group(1)
        assert "62.73 GiB short" in alert.group(1)
        assert ("smallest tensor-parallel degree that serves at least one user at the context limit is 2"
                in alert.group(1))
        assert headline(page, "users_worst_case") == "0"

    def test_it_takes_defaults_for_inputs_missing_from_the_query(self, client):
        page = client.get(LADDER, {"context": "16384"}).content.decode()

        assert step_value(page, "per_user_gib") == "2.00 GiB"
        assert step_value(page, "users_worst_case") == "26 users"

    def test_it_uses_the_precisions_default_width_for_blank_weight_bits(self, client):
        blank = client.get(LADDER, {"weights_dtype": "int4", "weights_bits": ""}).content.decode()
        explicit = client.get(LADDER, {"weights_dtype": "int4", "weights_bits": "4"}).content.decode()

        assert "8,030,261,248 × 4.5 bit" in blank
        assert "8,030,261,248 × 4 bit" in explicit


class TestHtmx:
    def test_it_returns_only_the_results_partial(self, htmx_client):
        response = htmx_client.get(LADDER)

        assert response.status_code == 200
        page = response.content.decode()
        assert "<html" not in page
        assert "<form" not in page
        assert list(step_classes(page)) == LADDER_KEYS
        assert headline(page, "users_paged") == "191"
        assert 'name="previous"' in page

    def test_it_sends_every_error_container_out_of_band_and_empty_when_fine(self, htmx_client):
        page = htmx_client.get(LADDER).content.decode()

        for name in LADDER_INPUTS:
            assert re.search(rf'<div id="error-{name}"[^>]*hx-swap-oob="innerHTML"', page), name
            assert field_error(page, name) == ""

    def test_it_shows_a_field_error_out_of_band_and_no_result(self, htmx_client):
        page = htmx_client.get(LADDER, {"gpus": "abc"}).content.decode()

        assert field_error(page, "gpus") == "'abc' is not a number; this field takes a whole number."
        assert field_error(page, "context") == ""
        assert step_classes(page) == {}
        assert "Nothing computed yet" in page


def reading(page: str, name: str) -> str:
    """The text of the line under input ``name`` saying what its box was read as ('' when nothing to say)."""
    match = re.search(rf'<div id="reading-{name}"[^>]*>(.*?)</div>', page, re.S)
    assert match, f"no reading line for {name}"
    return html.unescape(match.group(1)).strip()


class TestReadings:
    """A box holding more than a plain number says what it was read as, so whoever typed 8k meaning 8,192 tokens
    sees 8,000 was taken (a new user's finding)."""

    def test_8k_is_read_as_8000_tokens_and_the_steps_use_it(self, htmx_client):
        page = htmx_client.get(LADDER, {"context": "8k"}).content.decode()

        assert reading(page, "context") == "Read '8k' as 8,000 tokens."
        assert re.search(r'<div id="reading-context"[^>]*hx-swap-oob="innerHTML"', page)
        # 8,000 × 128 KiB = 1,024,000 KiB = 0.9766 GiB a user; 53.73 GiB of budget ÷ 0.9766 = 55.02: 55 users, not
        # the 53 of 8,192 tokens (1 GiB a user).
        assert step_value(page, "per_user_gib") == "0.977 GiB"
        assert step_value(page, "users_worst_case") == "55 users"

    @pytest.mark.parametrize(("name", "typed", "said"), [
        ("reserve_gib", "3 GB", "Read '3 GB' as 2.794 GiB."),  # 3e9 / 2^30 = 2.794
        ("utilization", "90%", "Read '90%' as 0.9."),
        ("avg_tokens", "2^11", "Read '2^11' as 2,048 tokens."),
        ("context", "8,192", "Read '8,192' as 8,192 tokens."),
        ("context", "8192", ""),  # the plain number needs no echo
        ("context", "8.5", ""),  # an error instead (beside the field), and no reading
    ])
    def test_the_page_says_what_each_box_was_read_as(self, client, name, typed, said):
        page = client.get(LADDER, {name: typed}).content.decode()

        assert reading(page, name) == said
        assert input_value(page, name) == typed  # the box keeps what was typed

    def test_an_emptied_reading_is_sent_out_of_band_too(self, htmx_client):
        page = htmx_client.get(LADDER, {"context": "8192"}).content.decode()

        for name in LADDER_INPUTS:
            if name == "config":  # a pasted config is read by its own rules, and says so in the results
                assert 'id="reading-config"' not in page
                continue
            assert re.search(rf'<div id="reading-{name}"[^>]*hx-swap-oob="innerHTML"', page), name
            assert reading(page, name) == ""


class TestHistoryAndState:
    """Issue 20: the address carries the inputs, caches keep pages and fragments apart, and the model dropdown
    never pretends to be what a pasted config replaced."""

    def test_an_htmx_recompute_replaces_the_address_with_the_inputs_as_typed(self, htmx_client):
        response = htmx_client.get(LADDER, {"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb", "gpus": "2",
                                            "previous": '{"card_gib":74.5}'})

        url = response["HX-Replace-Url"]
        path, query = url.split("?", 1)
        pairs = [pair.split("=", 1) for pair in query.split("&")]
        assert path == LADDER
        assert [name for name, _ in pairs] == [name for name in LADDER_INPUTS if name != "config"]
        assert dict(pairs)["model"] == "llama-3.1-70b" and dict(pairs)["gpus"] == "2"
        assert dict(pairs)["context"] == "8192"  # untouched inputs are written out too: the link is complete

    def test_the_replaced_address_renders_the_same_results(self, client, htmx_client):
        fragment = htmx_client.get(LADDER, {"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"})
        page = client.get(fragment["HX-Replace-Url"]).content.decode()

        assert headline(page, "users_paged") == headline(fragment.content.decode(), "users_paged")
        assert '<option value="llama-3.1-70b" selected>' in page

    def test_a_pasted_config_reaches_the_address_and_the_address_shows_the_same_results(self, client, htmx_client):
        config = catalog_config("llama-2-7b")
        fragment = htmx_client.post(LADDER, {"config": config, "model": "llama-3.1-70b"})
        address = fragment["HX-Replace-Url"]

        assert "config=" in address and len(address) < 3_100
        shared = client.get(address).content.decode()
        assert headline(shared, "users_paged") == headline(fragment.content.decode(), "users_paged")
        assert '<span class="small text-body-secondary">for the pasted config</span>' in shared
        assert "calc-share-note" not in fragment.content.decode()

    def test_a_config_too_long_for_an_address_is_left_out_and_the_results_say_so(self, htmx_client):
        config = json.loads(catalog_config("llama-2-7b"))
        config["_comment"] = "x" * 4_000  # extra keys are ignored by the engine
        fragment = htmx_client.post(LADDER, {"config": json.dumps(config), "model": "llama-3.1-70b"})

        assert "config=" not in fragment["HX-Replace-Url"]
        page = fragment.content.decode()
        assert "This page's address does not hold your pasted" in page
        assert headline(page, "users_paged")  # computed from the config all the same

    def test_a_pasted_config_disables_the_dropdown(self, client):
        config = catalog_config("llama-2-7b")

        page = client.get(LADDER, {"config": config}).content.decode()
        select = re.search(r'<select name="model"[^>]*>', page).group(0)
        assert " disabled" in select and "model-replaced" in select
        note = re.search(r'<div[^>]*id="model-replaced"[^>]*>(.*?)</div>', page, re.S)
        assert "hidden" not in note.group(0) and "replaces it" in note.group(1)
        plain = client.get(LADDER).content.decode()
        assert " disabled" not in re.search(r'<select name="model"[^>]*>', plain).group(0)
        assert re.search(r'<div[^>]*id="model-replaced"[^>]*hidden', plain)
        assert "The page&#x27;s address keeps it when it is short enough for an address" in plain

    def test_every_answer_varies_on_the_htmx_headers(self, client, htmx_client):
        for response in (client.get(LADDER), htmx_client.get(LADDER), client.get("/")):
            assert {"HX-Request", "HX-History-Restore-Request"} <= {
                value.strip() for value in response["Vary"].split(",")}

    def test_a_history_restore_gets_the_whole_page(self, client):
        response = client.get(LADDER, {"model": "llama-3.1-70b"},
                              headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})

        page = response.content.decode()
        assert "<html" in page and 'class="calc-form"' in page and "app-navbar" in page
        assert "HX-Replace-Url" not in response

    def test_an_embed_gets_its_open_link_with_the_inputs_out_of_band(self, htmx_client):
        page = htmx_client.get(LADDER, {"embed": "calc-ladder-1", "model": "llama-3.1-70b"}).content.decode()

        link = re.search(r'<a class="calc-embed-open" id="calc-ladder-1-open" href="([^"]+)" hx-swap-oob="true">',
                         page)
        assert link and html.unescape(link.group(1)).startswith(f"{LADDER}?model=llama-3.1-70b&")
        assert "embed=" not in link.group(1) and "previous=" not in link.group(1)

    def test_an_embed_id_that_names_no_embed_gets_no_link(self, htmx_client):
        page = htmx_client.get(LADDER, {"embed": '"><script>x</script>'}).content.decode()

        assert "calc-embed-open" not in page and "<script>x" not in page


class TestChangedSteps:
    def test_nothing_is_highlighted_on_the_first_load(self, client):
        page = client.get(LADDER).content.decode()

        assert "is-changed" not in page
        assert "calc-badge" not in page

    def test_it_highlights_the_steps_a_longer_context_changes(self, htmx_client):
        first = htmx_client.get(LADDER).content.decode()

        page = htmx_client.get(LADDER, {"context": "16384", "previous": previous_of(first)}).content.decode()

        classes = step_classes(page)
        changed = {key for key, css in classes.items() if "is-changed" in css}
        assert changed == {"per_user_gib", "users_worst_case"}
        assert "is-changed" not in classes["card_gib"]
        assert "was 1.00 GiB" in page
        assert '<span class="visually-hidden"> since your last input</span>' in page
        assert re.search(r'id="headline-users_worst_case" class="[^"]*is-changed', page)
        assert not re.search(r'id="headline-users_paged" class="[^"]*is-changed', page)

    def test_it_highlights_user_counts_when_the_card_changes(self, htmx_client):
        first = htmx_client.get(LADDER).content.decode()

        page = htmx_client.get(LADDER, {"gpu": "h200-sxm-141gb", "previous": previous_of(first)}).content.decode()

        changed = {key for key, css in step_classes(page).items() if "is-changed" in css}
        assert changed == {"card_gib", "usable_gib", "kv_budget_gib", "users_worst_case", "users_paged"}

    def test_it_highlights_on_a_full_page_submit_too(self, client):
        first = client.get(LADDER).content.decode()

        page = client.get(LADDER, {"context": "16384", "previous": previous_of(first)}).content.decode()

        assert "is-changed" in step_classes(page)["per_user_gib"]
        assert "is-changed" not in step_classes(page)["card_gib"]

    def test_it_carries_the_last_good_values_across_an_error(self, htmx_client):
        first = previous_of(htmx_client.get(LADDER).content.decode())

        broken = htmx_client.get(LADDER, {"context": "x", "previous": first}).content.decode()
        fixed = htmx_client.get(LADDER, {"context": "16384", "previous": previous_of(broken)}).content.decode()

        assert json.loads(previous_of(broken)) == json.loads(first)
        assert "is-changed" in step_classes(fixed)["per_user_gib"]

    def test_it_ignores_an_unreadable_previous(self, client):
        page = client.get(LADDER, {"previous": "{not json"}).content.decode()

        assert "is-changed" not in page


class TestInvalidInputs:
    @pytest.mark.parametrize(("name", "value", "message"), [
        ("gpus", "abc", "'abc' is not a number; this field takes a whole number."),
        ("gpus", "0", "Must be at least 1."),
        ("utilization", "2", "Must be at most 1."),
        ("utilization", "0", "Must be at least 0.01."),
        # Text that is not the plain number says what it was read as: 150% is 1.5, 0.5k tokens are 500.
        ("utilization", "150%", "Must be at most 1. Read '150%' as 1.5."),
        ("context", "1.5", "Enter a whole number."),
        ("context", "2^-1", "Read '2^-1' as 0.5 tokens; this field takes a whole number."),
        ("context", "", "Enter a value (the reference stack uses 8192)."),
        ("reserve_gib", "-1", "Must be at least 0."),
        ("weights_bits", "40", "Must be at most 32."),
        ("model", "nope", "Select a valid choice. nope is not one of the available choices."),
        ("gpu", "nope", "Select a valid choice. nope is not one of the available choices."),
        ("kv_dtype", "fp64", "Select a valid choice. fp64 is not one of the available choices."),
    ])
    def test_it_shows_the_error_beside_the_field_and_keeps_the_value(self, client, name, value, message):
        response = client.get(LADDER, {name: value})

        assert response.status_code == 200
        page = response.content.decode()
        assert field_error(page, name) == message
        assert step_classes(page) == {}
        if name not in ("model", "gpu", "kv_dtype"):
            assert input_value(page, name) == value

    def test_it_shows_a_rejected_number_as_typed(self, client):
        page = client.get(LADDER, {"gpus": "abc"}).content.decode()

        gpus = re.search(r'<input[^>]*name="gpus"[^>]*>', page).group(0)
        assert 'value="abc"' in gpus
        assert 'type="text"' in gpus

    @pytest.mark.parametrize(("name", "value", "message"), [
        ("utilization", "2", "Must be at most 1."),
        ("model", "nope", "Select a valid choice. nope is not one of the available choices."),
    ])
    def test_it_shows_the_error_out_of_band_on_htmx(self, htmx_client, name, value, message):
        page = htmx_client.get(LADDER, {name: value}).content.decode()

        assert field_error(page, name) == message
        assert re.search(rf'<div id="error-{name}"[^>]*hx-swap-oob', page)

    @pytest.mark.parametrize("query", [
        "gpus=abc", "utilization=2", "model=nope", "config={bad", "config=[]", "config=null",
        "gpu=", "model=&config=", "context=1e400", "context=99999999999999999999999999", "utilization=nan",
        "utilization=inf", "weights_dtype=fp64", "block_size=-3", "previous=%5B1%2C2%5D",
        "previous=" + "x" * 5000, "context=%00", "config=%00", "unknown=1", "gpus=1&gpus=abc",
        "config=" + "%5B" * 5000, 'config={"num_hidden_layers":1e999}',
        'config={"num_hidden_layers":' + "9" * 400 + ',"hidden_size":4096,"num_attention_heads":32,'
        '"vocab_size":32000,"intermediate_size":11008}',
    ])
    @pytest.mark.parametrize("path", ["/calculators/ladder/", "/calculators/kv/", "/calculators/params/",
                                      "/calculators/weights/"])
    def test_it_never_fails_on_a_query_string(self, client, htmx_client, path, query):
        assert client.get(f"{path}?{query}").status_code == 200
        assert htmx_client.get(f"{path}?{query}").status_code == 200


class TestAnyQueryString:
    @settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(values=st.dictionaries(st.sampled_from(LADDER_INPUTS + ["previous"]),
                                  st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=30),
                                  max_size=5),
           htmx=st.booleans())
    def test_the_ladder_answers_200_to_any_values(self, client, values, htmx):
        headers = {"HX-Request": "true"} if htmx else {}

        response = client.get(LADDER, values, headers=headers)

        assert response.status_code == 200


class TestPastedConfig:
    def test_it_computes_from_a_pasted_config(self, client):
        config = catalog_config("llama-2-7b")

        page = client.get(LADDER, {"config": config}).content.decode()

        assert step_value(page, "kv_bytes_per_token") == "524,288 B"
        assert "for the pasted config" in page
        assert input_value(page, "config") == config
        assert re.search(r'<details class="[^"]*calc-config[^"]*" open>', page)

    def test_it_computes_the_kv_family_from_a_pasted_config_on_htmx(self, htmx_client):
        page = htmx_client.get("/calculators/kv/", {"config": catalog_config("llama-2-7b")}).content.decode()

        assert step_value(page, "kv_bytes_per_token") == "524,288 B"
        assert field_error(page, "config") == ""

    def test_it_shows_a_broken_config_beside_the_textarea_and_keeps_it(self, client):
        broken = '{"num_hidden_layers": 32,'

        page = client.get(LADDER, {"config": broken}).content.decode()

        assert field_error(page, "config").startswith("The config is not valid JSON")
        assert input_value(page, "config") == broken
        assert field_error(page, "model") == ""
        assert step_classes(page) == {}

    def test_a_config_over_the_limit_is_refused_by_its_length_not_as_broken_json(self, client):
        """A valid config.json of 200 kB (a label map makes it long): the browser no longer cuts it at the
        textarea's maxlength (there is none), and the server says how long it is and what the limit is."""
        config = json.loads(catalog_config("llama-2-7b"))
        config["id2label"] = {str(i): f"LABEL_{i:06d}" for i in range(9_000)}
        text = json.dumps(config, indent=2)
        assert 200_000 < len(text) < 260_000

        page = client.post("/calculators/kv/", {"config": text}).content.decode()

        assert field_error(page, "config") == (
            f"The pasted config is {len(text):,} characters long; the calculators read configs of up to 100,000. "
            "Leave out what a config.json does not need (a tokenizer's vocabulary, label maps) and paste it again.")
        assert "not valid JSON" not in page
        assert input_value(page, "config") == text  # kept, whole
        assert step_classes(page) == {}

    def test_the_textarea_does_not_cut_a_paste_and_states_the_limit(self, client):
        page = client.get("/calculators/kv/").content.decode()
        textarea = re.search(r'<textarea name="config"[^>]*>', page).group(0)

        assert "maxlength" not in textarea
        assert "Up to 100,000 characters." in page

    def test_it_names_the_missing_config_field(self, client, htmx_client):
        query = {"config": '{"hidden_size": 4096}'}

        full = client.get(LADDER, query).content.decode()
        partial = htmx_client.get(LADDER, query).content.decode()

        for page in (full, partial):
            assert "num_hidden_layers" in field_error(page, "config")

    def test_it_shows_a_config_that_overflows_beside_the_textarea(self, client):
        config = ('{"num_hidden_layers": ' + "9" * 400 + ', "hidden_size": 4096, "num_attention_heads": 32, '
                  '"vocab_size": 32000, "intermediate_size": 11008}')

        page = client.get("/calculators/params/", {"config": config}).content.decode()

        assert field_error(page, "config") != ""


class TestOtherFamilies:
    @pytest.mark.parametrize(("slug", "keys", "key", "value"), [
        ("kv", ["kv_bytes_per_token", "kv_replication", "per_user_gib"], "per_user_gib", "1.00 GiB"),
        ("params", ["total_params", "active_params"], "total_params", "8,030,261,248"),
        ("weights", ["total_params", "weight_bytes", "weights_gib"], "weights_gib", "14.96 GiB"),
    ])
    def test_it_renders_each_family_with_its_steps(self, client, htmx_client, slug, keys, key, value):
        page = client.get(f"/calculators/{slug}/").content.decode()
        partial = htmx_client.get(f"/calculators/{slug}/").content.decode()

        for rendered in (page, partial):
            assert list(step_classes(rendered)) == keys
            assert step_value(rendered, key) == value
            assert rendered.count("<math") == len(keys)
            assert "\\frac" not in rendered and "$$" not in rendered

    def test_the_weights_page_offers_only_its_inputs(self, client):
        page = client.get("/calculators/weights/").content.decode()

        assert 'name="weights_bits"' in page
        assert 'name="config"' in page
        assert 'name="gpu"' not in page
        assert 'name="context"' not in page

    def test_an_unknown_family_is_404(self, client):
        assert client.get("/calculators/nope/").status_code == 404

    def test_get_and_post_are_allowed_nothing_else(self, client):
        assert client.put(LADDER).status_code == 405
        assert client.delete(LADDER).status_code == 405
        assert client.post(LADDER).status_code == 200


class TestPerProcessWork:
    """What a recompute does not redo: the engine run of inputs already seen, the fields of the family."""

    def test_the_same_inputs_reuse_one_engine_result_equal_to_a_fresh_run(self):
        from calculators.families import FAMILIES
        from calculators.forms import run_family

        ladder = FAMILIES["ladder"]
        first = run_family(ladder, {"context": 4096, "gpu": "a100-sxm4-80gb"})
        assert run_family(ladder, {"gpu": "a100-sxm4-80gb", "context": 4096}) is first
        assert first.to_json() == ladder.run({"context": 4096, "gpu": "a100-sxm4-80gb"}).to_json()
        assert run_family(ladder, {"context": 2048}) is not first

    def test_a_pasted_config_is_run_each_time(self):
        from calculators.families import FAMILIES
        from calculators.forms import run_family

        raw = {"config": catalog_config("llama-2-7b")}
        assert run_family(FAMILIES["ladder"], raw) is not run_family(FAMILIES["ladder"], raw)

    def test_each_form_changes_only_its_own_fields(self):
        from calculators.families import FAMILIES
        from calculators.forms import CalculatorForm

        pasted = CalculatorForm(FAMILIES["ladder"], {"config": '{"num_hidden_layers": 32}'})
        plain = CalculatorForm(FAMILIES["ladder"], {})
        assert pasted.fields["model"].widget.attrs["disabled"] is True
        assert "disabled" not in plain.fields["model"].widget.attrs
        plain.fields["gpu"].widget.attrs["aria-describedby"] = "embed-help-gpu"
        assert CalculatorForm(FAMILIES["ladder"], {}).fields["gpu"].widget.attrs["aria-describedby"] == \
            "error-gpu help-gpu"


@pytest.mark.parametrize("gpu_id, weights, precision", [
    ("rubin-cpx", "nvfp4", "fp4"),   # quoted only at fp4
    ("mi455x", "fp8", "fp8"),        # quoted at fp8 and fp4: the first
    ("mi355x", "bf16", "bf16"),      # now quoted at bf16: the default stays
])
def test_a_card_quoted_only_at_fp8_or_fp4_opens_the_pages_on_its_first_precision(client, gpu_id, weights, precision):
    """Issue 36: a calculator page asked for such a card with no precision chosen starts on the card's first quoted
    precision instead of refusing the bf16 default; a precision the visitor chose is kept (and refused)."""
    for family, name, expected in (("decode", "weights_dtype", weights), ("roofline", "precision", precision)):
        page = client.get(f"/calculators/{family}/", {"gpu": gpu_id}).content.decode()
        assert f'<option value="{expected}" selected>' in page, (family, gpu_id)
        assert "no dense bf16 throughput" not in page
    if gpu_id != "mi355x":
        chosen = client.get("/calculators/decode/", {"gpu": gpu_id, "weights_dtype": "bf16"}).content.decode()
        assert "no dense bf16 throughput" in chosen
