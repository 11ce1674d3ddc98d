"""A worked review card's boxes (issue 33 item 2): each step's tolerance beside its box and a verdict step's
choice of its words."""

from __future__ import annotations

import re

import pytest

from drills.models import Card
from drills.reviews.scheduling import add_to_deck

pytestmark = pytest.mark.django_db


def test_a_roofline_card_shows_tolerances_and_choices(candidate_client, candidate, bank):
    add_to_deck(candidate, [bank["roofline"]])
    assert Card.objects.filter(user=candidate).count() == 1

    page = candidate_client.get("/review/").content.decode()

    ridge = page.split('for="id_ridge_flop_per_byte"', 1)[1].split("</label>", 1)[0]
    assert "in FLOP/byte" in ridge and "±0.5 %</span>" in ridge
    batch = page.split('for="id_batch_at_ridge"', 1)[1].split("</label>", 1)[0]
    assert "whole number, round down" in batch
    reachable = page.split('for="id_ridge_reachable"', 1)[1].split("</select>", 1)[0]
    assert re.findall(r'<option value="([^"]*)"', reachable) == ["", "yes", "no"]
