"""Question bank pages: browse and filter, one item's page, adding to the deck, the Anki export.

The list filters by kind, chapter, track, topic, difficulty and role with a
plain GET form; htmx swaps only the results (the ``results`` partial, chosen by
``HX-Target``) and pushes the URL. Adding to the deck is a POST form that
redirects back (htmx swaps just the button).
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST, require_safe

from calculators.families import FAMILIES
from drills.bank.forms import BankFilterForm
from drills.bank.services import item_title
from drills.models import BankItem, Card, ReviewLog, ReviewSettings
from drills.reviews.exports import bank_apkg as build_apkg
from drills.reviews.scheduling import add_batch, add_to_deck, remove_from_deck, state_label, time_box_of, undo_batch
from runbook.models import Chapter

PAGE_SIZE = 40
#: A bulk add of more new cards than this asks first: every one of them is due today.
CONFIRM_ABOVE = 20
#: Where the last bulk add is kept for its undo (the session), and the message tag that shows the Undo button.
UNDO_KEY, UNDO_TAG = "deck_undo", "deck-undo"


def _deck_ids(user) -> set[int]:
    if not user.is_authenticated:
        return set()
    return set(Card.objects.of(user).values_list("item_id", flat=True))


@require_safe
def bank(request: HttpRequest) -> HttpResponse:
    """Every published question, problem template, critique drill and design prompt, filtered."""
    return _bank_page(request, BankFilterForm(request.GET))


def _bank_page(request: HttpRequest, form: BankFilterForm, refusals: list[str] | None = None,
               status: int = 200) -> HttpResponse:
    """The bank page (or its results for htmx) filtered by ``form``; ``refusals``: sentences saying which filter
    values were not understood (:meth:`BankFilterForm.refusals`), shown above the filters."""
    items = form.filtered(request.user)
    page = Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    active = form.active()
    query = request.GET.copy()
    query.pop("page", None)
    deck_ids = _deck_ids(request.user)
    context = {
        "form": form, "page": page, "total": len(items), "missing": sum(1 for i in items if i.pk not in deck_ids),
        "rows": [{"item": item, "title": item_title(item)} for item in page.object_list],
        "deck_ids": deck_ids, "active": active, "query": query.urlencode(),
        "kinds": dict(BankItem.KINDS), "refusals": refusals or [],
    }
    template = "reviews/bank.html#results" if request.htmx and request.htmx.target == "bank-results" \
        else "reviews/bank.html"
    return render(request, template, context, status=status)


@require_safe
def bank_item(request: HttpRequest, slug: str) -> HttpResponse:
    """One bank item: its prompt, the model answer behind a reveal, and the candidate's card if it is in the deck."""
    item = get_object_or_404(BankItem.objects.visible_to(request.user).select_related("chapter"), slug=slug)
    card = logs = None
    if request.user.is_authenticated:
        card = Card.objects.filter(user=request.user, item=item).first()
        if card is not None:
            logs = ReviewLog.objects.filter(card=card).order_by("-reviewed_at")[:20]
    family = FAMILIES.get(item.family) if item.kind == BankItem.PROBLEM else None
    tz = ReviewSettings.for_user(request.user).tz if request.user.is_authenticated else None
    with timezone.override(tz):
        return render(request, "reviews/bank_item.html", {
            "item": item, "title": item_title(item), "card": card, "logs": logs, "family": family,
            "in_deck": card is not None and not card.suspended, "state": state_label(card.state) if card else "",
            "time_box": time_box_of(item, (item.details or {}).get("steps")) if family else None,
        })


def _back(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or ""
    # Only a path on this site: redirect() would read a bare word ("0", "home") as a view name to reverse.
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        return target
    return fallback


@login_required
@require_POST
def deck_add(request: HttpRequest) -> HttpResponse:
    """Add one item (``item``), a chapter (``chapter``), a track (``track``) or a bank search's items to the deck."""
    via = request.POST.get("via", "")
    if request.POST.get("item"):
        item = get_object_or_404(BankItem.objects.visible_to(request.user), slug=request.POST["item"])
        items, via, what = [item], Card.VIA_ITEM, "1 item"
    elif request.POST.get("chapter") and not request.POST.get("filtered"):
        chapter = get_object_or_404(Chapter, slug=request.POST["chapter"])
        items = list(BankItem.objects.published().filter(chapter=chapter))
        via = Card.VIA_FINISHED if via == Card.VIA_FINISHED else Card.VIA_CHAPTER
        what = f"chapter {chapter.label}"
    elif request.POST.get("track") and not request.POST.get("filtered"):
        items = list(BankItem.objects.published().filter(track=request.POST["track"]))
        via, what = Card.VIA_TRACK, f"track {request.POST['track']}"
    else:
        form = BankFilterForm(request.POST)
        items = form.filtered(request.user)
        active = form.active()
        via, what = Card.VIA_FILTER, "this search"
        if set(active) == {"chapter"}:
            via, what = Card.VIA_CHAPTER, "this chapter"
        elif set(active) == {"track"}:
            via, what = Card.VIA_TRACK, f"track {active['track']}"
    if request.POST.get("item"):
        added = add_to_deck(request.user, items, via)
        if request.htmx:
            return render(request, "reviews/bank.html#deck-button", {"item": items[0], "in_deck": True,
                                                                      "next": _back(request, "")})
        if added:
            messages.success(request, "Added 1 card to your deck; it is due now.")
        else:
            messages.info(request, "That item is already in your deck.")
        return redirect(_back(request, "/review/"))
    deck = _deck_ids(request.user)
    new = sum(1 for item in items if item.pk not in deck)
    if new > CONFIRM_ABOVE and request.POST.get("confirmed") != "1":
        # Everything added is due today: say how much that is before doing it (the form posts again, confirmed).
        fields = [(name, value) for name, values in request.POST.lists() if name not in ("csrfmiddlewaretoken",
                                                                                         "confirmed")
                  for value in values]
        return render(request, "reviews/confirm_add.html", {"new": new, "what": what, "fields": fields,
                                                            "back": _back(request, reverse("reviews:bank"))})
    batch = add_batch(request.user, items, via)
    if batch.added:
        request.session[UNDO_KEY] = {"at": batch.at.isoformat(), "revived": list(batch.revived),
                                     "added": batch.added}
        messages.success(request, f"Added {batch.added} card{'s' if batch.added != 1 else ''} from {what} to your "
                                  "deck; they are all due today.", extra_tags=UNDO_TAG)
    else:
        messages.info(request, f"Everything from {what} is already in your deck.")
    return redirect(_back(request, "/review/"))


@login_required
@require_POST
def deck_undo(request: HttpRequest) -> HttpResponse:
    """Take the last bulk add back out of the deck (what was reviewed since stays); once."""
    batch = request.session.pop(UNDO_KEY, None)
    if not batch:
        messages.info(request, "There is no bulk add to undo.")
        return redirect(_back(request, "/review/"))
    removed, kept = undo_batch(request.user, datetime.fromisoformat(batch["at"]), batch["revived"])
    text = f"Took {removed} card{'s' if removed != 1 else ''} back out of your deck"
    messages.success(request, text + (f"; {kept} you have reviewed since stay." if kept else "."))
    return redirect(_back(request, "/review/"))


@login_required
@require_POST
def deck_remove(request: HttpRequest) -> HttpResponse:
    """Take one item out of the deck (its history is kept); a 404 for an unknown slug and for an item the user
    may not see (the same answer, so the endpoint does not tell which unpublished slugs exist)."""
    item = get_object_or_404(BankItem.objects.visible_to(request.user), slug=request.POST.get("item", ""))
    removed = remove_from_deck(request.user, item)
    if request.htmx:
        return render(request, "reviews/bank.html#deck-button", {"item": item, "in_deck": False,
                                                                  "next": _back(request, "")})
    if removed:
        messages.success(request, "Taken out of your deck; its review history is kept.")
    return redirect(_back(request, item_url(item)))


def item_url(item: BankItem) -> str:
    """The bank page of ``item``."""
    return reverse("reviews:bank_item", args=[item.slug])


@require_safe
def bank_apkg(request: HttpRequest) -> HttpResponse:
    """The bank (or the part the filters select, e.g. ``?chapter=06-kv-cache``) as an Anki deck. A filter value
    that is not understood (an unknown chapter slug) answers 400: the bank page with the filters and a sentence
    naming what was read and what was expected."""
    form = BankFilterForm(request.GET)
    refusals = form.refusals()
    if refusals:  # never the whole bank for a filter that was not understood: the bank page says which
        return _bank_page(request, form, refusals, status=400)
    items = form.filtered(request.user)
    if not items:
        raise Http404("No published items match these filters.")
    active = form.active()
    name = "LLM Serving Prep"
    filename = "llm-serving-prep"
    if active.get("chapter"):
        chapter = items[0].chapter
        name += f"::{chapter.label} {chapter.title}" if chapter else ""
        filename += f"-{active['chapter']}"
    elif active.get("track"):
        name += f"::Track {active['track']}"
        filename += f"-track-{active['track']}"
    response = HttpResponse(build_apkg(items, name), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{filename}.apkg"'
    return response
