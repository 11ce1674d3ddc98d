"""The figures the chapters are built around come out of the engine when the pages render.

Each expectation is derived by hand (see the comments), so a change in the engine or the catalog
that moves a quoted number fails here, not in a reader's interview.
"""

import pytest
from django.conf import settings

from runbook.loading import load_content

FIXTURES = settings.BASE_DIR / "fixtures"


@pytest.fixture
def chapter(db, client):
    load_content(FIXTURES)

    def page(slug: str) -> str:
        response = client.get(f"/runbook/{slug}/")
        assert response.status_code == 200
        return response.content.decode()

    return page


@pytest.mark.parametrize("slug, expected", [
    # 989.4 TFLOP/s ÷ 3,350 GB/s = 295.3 FLOP/byte (H100 SXM, dense bf16).
    ("04-gpu-roofline", ["295.3 FLOP/byte"]),
    # 3,350 GB/s ÷ (8,030,261,248 × 2 B) = 208.6 tok/s; × 0.65 = 135.6, × 0.85 = 177.3;
    # crossover 8,030,261,248 ÷ (2 × 32 × 4,096) = 30,633 tokens.
    ("05-prefill-and-decode", ["208.6 tok/s", "135.6 tok/s", "177.3 tok/s", "30,633 tok"]),
    # 2 × 32 × 8 × 128 × 2 = 131,072 B; 53 users worst case; 191 paged; 14.96 GiB of weights.
    ("06-kv-cache", ["131,072 B", "53 users", "191 users", "14.96 GiB"]),
    # fp8 cache: ⌊53.73 GiB ÷ 0.5 GiB⌋ = 107 users.
    ("10-paged-memory-and-prefix-caching", ["107 users"]),
    # 700e9 B ÷ 2^30 = 651.93 GiB.
    ("11-multi-gpu", ["651.93 GiB"]),
])
def test_the_chapters_quote_the_engines_numbers(chapter, slug, expected):
    page = chapter(slug)
    for number in expected:
        assert number in page, f"{slug} should quote {number}"
    assert "{{" not in page
