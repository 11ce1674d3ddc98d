"""The matrix of mistakes × families (issue 29, item 2): every mistake the registry tries on a family's problems is
named where a candidate makes it, or the matrix says why not; docs/mistakes.md is that matrix, kept current."""

from __future__ import annotations

from pathlib import Path

import pytest

from calculators.engine.catalog import default_catalog
from calculators.families import FAMILIES
from calculators.mistake_matrix import markdown, matrix

DOC = Path(__file__).resolve().parents[2] / "docs" / "mistakes.md"


@pytest.fixture(scope="module")
def cells():
    return matrix(FAMILIES, default_catalog())


def test_every_tried_mistake_is_named_or_explained(cells):
    # A perturbed value graded with no mistake named at all ("nothing") is a mistake the grader misses.
    missed = [(cell.family, cell.mistake, cell.why) for cell in cells if not cell.named and "nothing at" in cell.why]
    assert missed == []
    assert all(cell.named or cell.why for cell in cells)


def test_the_classic_kinds_are_named_in_the_families_they_reach(cells):
    named = {(cell.family, cell.mistake): cell.named for cell in cells if cell.named}
    # Issue 29's kinds: total for active parameters in params, a ceiling rounded down in tp and disagg, one card's
    # bandwidth and GB/s read as GiB/s in decode, Little's law with ms for s in ttftp99, TPOT from FLOPs in slo.
    assert "active_params" in named[("params", "moe-all-experts-per-token")]
    assert "nodes" in named[("tp", "rounded-nodes-down")]
    assert named[("disagg", "rounded-nodes-down")]
    assert "ceiling_tok_s" in named[("decode", "one-card-bandwidth")]
    assert "bandwidth_gb_s" in named[("decode", "gb-gib-mix")]
    assert "requests_in_system" in named[("ttftp99", "littles-law-ms-s")]
    assert "tpot_ms" in named[("slo", "ceiling-from-flops")]


def test_docs_hold_the_current_matrix(cells):
    assert DOC.read_text() == markdown(cells), "docs/mistakes.md is stale: run manage.py mistakes"


def test_a_mistake_whose_change_no_step_reads_says_what_it_changes(cells):
    """Issue 29 item 7: ttftp99's steps read the simulator's stored step times, never the card's bandwidth, so
    GB/s read as GiB/s changes nothing there and the matrix says so; disagg sends one copy of the prompt's cache,
    so K/V replication is read by none of its steps."""
    why = {(cell.family, cell.mistake): cell.why for cell in cells if not cell.named}
    assert why[("ttftp99", "gb-gib-mix")] == "no change: it changes bandwidth_gb_s, which no step of ttftp99 reads"
    assert why[("disagg", "kv-replication-ignored")].startswith("no change: it changes kv_replication")


def test_preemptrate_names_the_ladders_slips_on_the_way_to_its_kv_tokens(cells):
    """Issue 29 item 4: preemptrate steps through the ladder's budget (card, usable memory, weights, KV budget, KV per
    token) before the tokens its cache holds, which it read from a stored block count before. Verdicts that change:
    a GB/GiB slip (named at the card's memory and on to the KV tokens; before, "no change" since no step read a
    size), a skipped utilisation, a skipped reserve, bits for bytes, query heads for K/V heads and the missing K-and-V
    factor, each named where it first shows; the drill's other steps grade as before."""
    named = {(cell.family, cell.mistake): cell.named for cell in cells if cell.named}
    assert {"card_gib", "kv_cache_tokens"} <= set(named[("preemptrate", "gb-gib-mix")].split(", "))
    assert "usable_gib" in named[("preemptrate", "skipped-utilization")]
    assert "kv_bytes_per_token" in named[("preemptrate", "bits-for-bytes")]
    assert "kv_budget_gib" in named[("preemptrate", "skipped-activation-reserve")]
