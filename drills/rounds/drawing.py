"""Drawing a round's items from the bank: the slots of a template, the candidate's weak spots."""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime
from typing import NamedTuple

from django.db.models import Count

from drills.models import BankItem, Card, ReviewSettings, RoundItem, RoundTemplate, StepAnswer
from drills.reviews.recall import recall_at
from drills.reviews.scheduling import _now, scheduler_for


class NoItems(Exception):
    """A round could not be drawn: the bank (or the candidate's history) has nothing for a slot."""

# --- drawing items ------------------------------------------------------------------------


def weak_spots(user, now: datetime | None = None, limit: int = 4) -> list[BankItem]:
    """Items for the candidate's most frequent misconceptions, then their lowest-retention cards."""
    now = _now(now)
    rows = (StepAnswer.objects.filter(attempt__user=user).slips()
            .values_list("misconception", "attempt__problem__family"))
    counts = Counter(ident for ident, _ in rows)
    families: dict[str, Counter] = {}
    for ident, family in rows:
        families.setdefault(ident, Counter())[family] += 1
    published = BankItem.objects.published()
    probing = [item for item in published.order_by("difficulty", "slug") if item.misconceptions]
    templates = {item.family: item for item in published.filter(kind=BankItem.PROBLEM)}
    chosen: list[BankItem] = []

    def take(item: BankItem | None) -> None:
        if item is not None and item.pk not in {c.pk for c in chosen} and len(chosen) < limit:
            chosen.append(item)

    for ident, _ in counts.most_common():
        family = families[ident].most_common(1)[0][0]
        take(templates.get(family))
        take(next((item for item in probing if ident in (item.misconceptions or ()) and item.kind == BankItem.OPEN),
                  None))
    cards = list(Card.objects.of(user).filter(last_review__isnull=False, item__published=True).select_related("item"))
    scheduler = scheduler_for(ReviewSettings.for_user(user), fuzz=False)
    for card in sorted(cards, key=lambda card: (recall_at(scheduler, card.to_fsrs(), now), card.pk)):
        take(card.item)
    return chosen


def _candidates(slot: dict):
    items = BankItem.objects.published()
    if "family" in slot or "families" in slot:
        return items.filter(kind=BankItem.PROBLEM, family__in=slot.get("families") or [slot["family"]])
    items = items.filter(kind=slot.get("kind", BankItem.OPEN))
    if slot.get("role"):
        role = slot["role"]
        return [item for item in items if role in (item.roles or ())]
    return items


class Drawn(NamedTuple):
    """One drawn item of a new round: the bank item, its time box, how many follow-ups to ask after it (a
    problem template's slot with ``"followups": n``, each boxed ``followup_box_s``; issue 33 item 1), the
    inputs a coach's set entry holds fixed, and, for a slot with follow-ups, the slot's other templates in the
    order they are drawn instead when ``item``'s problems give no chain (``alternatives``)."""

    item: BankItem
    box: int | None
    followups: int = 0
    followup_box: int | None = None
    fixed: dict | None = None  # a coach's fixed inputs for the problem (a set entry's)
    alternatives: tuple[BankItem, ...] = ()


def draw_items(user, template: RoundTemplate, now: datetime, rng: random.Random) -> list[Drawn]:
    """The items of a new round (:class:`Drawn`): least sat in the candidate's rounds first, then at random."""
    used = Counter(dict(RoundItem.objects.filter(round__user=user, item__isnull=False)
                        .values_list("item").annotate(n=Count("pk")).values_list("item", "n")))
    drawn: list[Drawn] = []
    for slot in template.slots:
        box = slot.get("box_s")
        if "weak" in slot:
            spots = weak_spots(user, now, int(slot["weak"]))
            if not spots:
                raise NoItems("No weak spots yet: sit a few drills or reviews first, and the misconceptions "
                              "you make and the cards you are forgetting will fill this round.")
            drawn += [Drawn(item, box) for item in spots]
            continue
        pool = [item for item in _candidates(slot) if item.pk not in {d.item.pk for d in drawn}]
        for _ in range(int(slot.get("count", 1))):
            if not pool:
                raise NoItems(f"The bank has no published item for this round ({slot}).")
            fewest = min(used[item.pk] for item in pool)
            item = rng.choice(sorted((i for i in pool if used[i.pk] == fewest), key=lambda i: i.slug))
            pool.remove(item)
            followups = int(slot.get("followups", 0))
            others: tuple[BankItem, ...] = ()
            if followups:  # the rest of the slot, least sat first then shuffled: drawn when item gives no chain
                rest = sorted(pool, key=lambda i: i.slug)
                rng.shuffle(rest)
                others = tuple(sorted(rest, key=lambda i: used[i.pk]))
            drawn.append(Drawn(item, box, followups, slot.get("followup_box_s"), alternatives=others))
    return drawn
