"""``config.compiled_query.CompiledGet``, as the review answer's card read uses it: exactly what ``get()`` gives.

Each case reads one card both ways, the queryset's ``get()`` and the compiled read, and compares the card, its
question, the question's chapter, the owner and the owner's review settings: the class, which fields were loaded
and which deferred, and every loaded value.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model

from config.compiled_query import CompiledGet
from drills.models import Card, ReviewSettings
from drills.reviews.scheduling import add_to_deck
from drills.reviews.services import REVEAL_FIELDS, card_to_reveal, owner_settings

pytestmark = pytest.mark.django_db


def _orm(card_id: int, user_id: int) -> Card:
    return (Card.objects.select_related("item", "item__chapter", "user__review_settings").only(*REVEAL_FIELDS)
            .get(pk=card_id, user_id=user_id))


def _loaded(instance: Model) -> tuple:
    deferred = instance.get_deferred_fields()
    values = {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields
              if field.attname not in deferred}
    return type(instance), sorted(deferred), values


def _same(compiled: Card, orm: Card) -> None:
    assert _loaded(compiled) == _loaded(orm)
    assert _loaded(compiled.item) == _loaded(orm.item)
    assert (compiled.item.chapter is None) == (orm.item.chapter is None)
    if orm.item.chapter is not None:
        assert _loaded(compiled.item.chapter) == _loaded(orm.item.chapter)
    assert _loaded(compiled.user) == _loaded(orm.user)
    try:
        expected = orm.user.review_settings
    except ReviewSettings.DoesNotExist:
        with pytest.raises(ReviewSettings.DoesNotExist):
            compiled.user.review_settings  # noqa: B018 (the attribute read is the test)
    else:
        assert _loaded(compiled.user.review_settings) == _loaded(expected)


def test_a_card_reads_back_as_get_gives_it_with_and_without_review_settings(bank, candidate, bob, h):
    no_chapter = h.question("no-chapter", None, ["One point"])
    add_to_deck(candidate, [bank["kv-formula"], no_chapter], now=h.T0)
    add_to_deck(bob, [bank["ridge"]], now=h.T0)
    h.settings(candidate, desired_retention=0.85)
    for card in Card.objects.filter(user__in=[candidate, bob]):
        compiled = card_to_reveal(card.user, card.pk)
        _same(compiled, _orm(card.pk, card.user_id))
        assert compiled.item.model_answer == card.item.model_answer and compiled.due == card.due
    mine = Card.objects.get(user=candidate, item=bank["kv-formula"])
    assert owner_settings(card_to_reveal(candidate, mine.pk)).desired_retention == 0.85
    # bob has no settings row yet: owner_settings makes one with the defaults, as on any first use.
    his = Card.objects.get(user=bob)
    assert owner_settings(card_to_reveal(bob, his.pk)).desired_retention == ReviewSettings().desired_retention
    # A field the read left deferred still loads on demand.
    assert card_to_reveal(candidate, mine.pk).item.roles == ["engineer"]


def test_another_candidates_card_and_a_missing_one_do_not_exist(bank, candidate, bob, h):
    add_to_deck(bob, [bank["ridge"]], now=h.T0)
    his = Card.objects.get(user=bob)
    with pytest.raises(Card.DoesNotExist):
        card_to_reveal(candidate, his.pk)
    with pytest.raises(Card.DoesNotExist):
        card_to_reveal(bob, his.pk + 1000)


def test_several_rows_and_a_value_that_never_reaches_the_sql_are_refused(bank, candidate, h):
    add_to_deck(candidate, [bank["kv-formula"], bank["kv-paged"]], now=h.T0)
    by_owner = CompiledGet(lambda user_id: Card.objects.filter(user_id=user_id), 1)
    with pytest.raises(Card.MultipleObjectsReturned):
        by_owner(candidate.pk)
    ignoring = CompiledGet(lambda user_id: Card.objects.all(), 1)
    with pytest.raises(ImproperlyConfigured):
        ignoring(candidate.pk)
    with pytest.raises(TypeError):
        by_owner()


def test_a_key_beyond_64_bits_is_no_card_rather_than_an_error(bank, candidate, client):
    with pytest.raises(Card.DoesNotExist):
        card_to_reveal(candidate, 2**70)
    client.force_login(candidate)
    assert client.get("/drills/ladder/99999999999999999999999/").status_code == 404
