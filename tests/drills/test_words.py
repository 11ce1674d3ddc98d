"""Words on the pages (issue 20, item 8): acronyms keep their case inside sentences."""

import pytest

from drills.templatetags.drills_tags import in_sentence


@pytest.mark.parametrize("title, expected", [
    ("KV cache", "KV cache"), ("Prefill and TTFT", "prefill and TTFT"), ("LoRA adapters", "LoRA adapters"),
    ("RoPE frequency bands", "RoPE frequency bands"), ("Capacity ladder", "capacity ladder"),
    ("Batch size for a TPOT target", "batch size for a TPOT target"), ("Mixture of experts", "mixture of experts"),
])
def test_a_title_inside_a_sentence_keeps_its_acronyms(title, expected):
    assert in_sentence(title) == expected


@pytest.mark.django_db
def test_the_drill_buttons_name_the_family_with_its_acronyms(client):
    page = client.get("/drills/").content.decode()

    assert "New KV cache problem" in page and "New prefill and TTFT problem" in page
    assert "New kv cache problem" not in page and "lora adapters" not in page


def test_a_fixed_input_reads_as_words_not_as_a_keyword_argument():
    from coaching.models import fixed_input_phrase

    assert fixed_input_phrase("gpu", "h200-sxm-141gb") == "GPU H200 SXM 141GB"
    assert fixed_input_phrase("model", "llama-3.1-70b") == "model meta-llama/Llama-3.1-70B"
    assert fixed_input_phrase("context", 32768) == "context limit 32768"
    assert fixed_input_phrase("kv_dtype", "fp8") == "KV cache precision fp8"
