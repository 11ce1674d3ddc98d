"""Review pages: the due queue one card at a time, the result of a graded problem, settings, progress, exports.

Every page works without JavaScript: revealing, rating and grading are plain
forms that post and redirect. With htmx, revealing an open question swaps the
card in place and the suggested rating follows the rubric ticks; a problem
review with a step that cannot be read comes back in place (without htmx, as a
page), as typed and with the parser's messages, and nothing is recorded. Times
are shown in the candidate's own time zone. A candidate only ever reaches their own
cards, reviews and exports (another's card is a 404).
"""

from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect

from accounts.timezones import remember_time_zone
from drills.followups.services import FOLLOWUP_BOX_S, chain, debrief
from drills.models import BankItem, Card, FollowUpAttempt, ReviewLog, ReviewSettings, StepAnswer
from drills.problems.forms import AnswerForm, FollowUpForm, read_start, sign_start
from drills.problems.grading import UnreadableAnswers
from drills.problems.presentation import problem_facts, statement
from drills.reviews.exports import deck_csv, history_csv
from drills.reviews.forms import OpenAnswerForm, RateForm, ReviewSettingsForm
from drills.reviews.intervals import interval_label
from drills.reviews.progress import progress_for
from drills.reviews.scheduling import (
    RATING_LABELS,
    RATING_RULE,
    RUBRIC_RULE,
    NextDue,
    days_to_interview,
    due_count,
    forecast_and_deck,
    next_due,
    next_outcomes,
    rating_for_rubric,
    retention_on_day,
    review_day,
    time_box_of,
)
from drills.reviews.services import (
    Undrawable,
    card_of,
    card_to_reveal,
    drawn_problem,
    is_problem,
    owner_settings,
    record_open_review,
    record_problem_review,
    undrawable,
)
from llm_grading import services as model_grading
from llm_grading.models import Grading
from llm_grading.presentation import fragment_context

FORECAST_DAYS = 7
# Cards whose problem cannot be drawn one visit of the queue takes out before it shows what is left.
MAX_SKIPPED = 20


def _render(request: HttpRequest, template: str, context: dict, review_settings: ReviewSettings,
            status: int = 200) -> HttpResponse:
    """Render with dates and times in the candidate's time zone."""
    with timezone.override(review_settings.tz):
        return render(request, template, {**context, "review_settings": review_settings}, status=status)


def _sidebar(user, review_settings: ReviewSettings, now: datetime, left: int) -> dict:
    day = review_day(review_settings.tz, now)
    forecast, deck_size = forecast_and_deck(user, FORECAST_DAYS, now, review_settings)  # one query for both
    return {
        "left": left, "forecast": forecast, "forecast_max": max([count for _, count in forecast] or [0]) or 1,
        "today": day.day, "review_day": day, "deck_size": deck_size,
        "days_left": days_to_interview(review_settings, now),
        "retention_rows": retention_on_day(user, now, review_settings) if review_settings.interview_date else [],
    }


def rating_buttons(card: Card, review_settings: ReviewSettings, now: datetime) -> list[tuple[int, str, str]]:
    """(rating, label, next interval) for each rating, the interval being what recording it now would give."""
    outcomes = next_outcomes(card, review_settings, now)
    return [(value, label, interval_label(outcomes[value].interval)) for value, label in ReviewLog.RATINGS]


def rubric_points(rubric, form) -> list[tuple[str, str, bool]]:
    """(index as text, point, whether ticked) for each point of ``rubric``, as the revealed card lists them.

    ``form`` is the revealed card's :class:`RateForm`: its ``ticked`` value holds ints (from ``initial``) or
    the strings a re-rendered post sent; either ticks the point. The index is text so that the template writes
    it as is (an int goes through number localisation: the same digits, three times a point).
    """
    ticked = form["ticked"].value() or ()
    return [(str(index), point, index in ticked or str(index) in ticked) for index, point in enumerate(rubric)]


def followup_forms(problem, data=None) -> list[FollowUpForm]:
    """One :class:`FollowUpForm` per link of ``problem``'s chain, prefixed ``fu<n>`` (the chain is the card:
    its follow-ups are answered on the card with the problem, issue 33), bound to ``data`` when given."""
    return [FollowUpForm(link, data, prefix=f"fu{position}") for position, link in enumerate(chain(problem))]


def followup_replies(forms: list[FollowUpForm]) -> list[dict]:
    """Each follow-up form's ``{"marked": [keys], "values": {key: text}}`` (forms already validated)."""
    return [{"marked": form.marked(), "values": form.answers()} for form in forms]


def _followup_sections(forms: list[FollowUpForm]) -> list[dict]:
    sections = []
    for position, form in enumerate(forms):
        marked = set(form.marked()) if form.is_bound and hasattr(form, "cleaned_data") else set()
        sections.append({"number": position + 1, "prefix": form.prefix, "link": form.link,
                         "marks_name": form["marked"].html_name,
                         "rows": [{"key": spec.key, "label": spec.label, "unit": spec.unit, "spec": spec,
                                   "marked": spec.key in marked, "field": form[f"value-{spec.key}"]}
                                  for spec in form.link.result.specs]})
    return sections


def _card_context(request: HttpRequest, card: Card, now: datetime, *, form=None, stage: str = "answer",
                  review_settings: ReviewSettings | None = None, grading: Grading | None = None,
                  followups: list[FollowUpForm] | None = None) -> dict:
    # Nothing is ticked or suggested yet when the card is shown: the ratings partial reads these names, and a
    # name missing from the context costs the template a raised and logged lookup failure at each use.
    context = {"card": card, "item": card.item, "stage": stage, "rating_rule": RATING_RULE,
               "rubric_rule": RUBRIC_RULE, "ratings": ReviewLog.RATINGS, "suggested": None, "ticked_count": None}
    if is_problem(card.item) or stage == "revealed":  # the rule's outcomes, or the buttons' intervals
        context["rating_buttons"] = rating_buttons(card, review_settings or ReviewSettings.for_user(request.user), now)
    if is_problem(card.item):
        problem = drawn_problem(card)
        solution = problem.solve()
        form = form or AnswerForm(solution.specs, initial={"started": sign_start(now)})
        forms = followups if followups is not None else followup_forms(problem)
        context.update({
            "followups": _followup_sections(forms),
            "problem": problem, "solution": solution, "statement": statement(problem, solution),
            "facts": problem_facts(problem), "form": form, "kind": "problem",
            "rows": [{"field": form[spec.key], "spec": spec} for spec in solution.specs],
            "time_box": _card_box(card.item, len(solution.specs), len(forms)),
        })
    else:
        form = form or OpenAnswerForm(initial={"version": card.version, "started": sign_start(now)})
        context.update({"kind": "open", "form": form, "model_grading": fragment_context(grading, "review")})
        if stage == "answer":  # say where a written answer goes before it is sent (llm_grading)
            # The review page asked with the card whether there is one (an EXISTS): then only is it read.
            has_endpoint = getattr(card, "has_grading_endpoint", None)
            context["grading_endpoint"] = model_grading.endpoint_for(request.user) if has_endpoint is not False \
                else None
        if stage == "revealed" and card.item.rubric:  # the rubric is listed, to tick, once the answer is shown
            context["rubric_points"] = rubric_points(card.item.rubric, form)
    return context


def _card_box(item: BankItem, steps: int, links: int) -> int | None:
    """A problem card's time box: its problem's, and :data:`FOLLOWUP_BOX_S` more a follow-up."""
    box = time_box_of(item, steps)
    return box + FOLLOWUP_BOX_S * links if box else box


def _show(request: HttpRequest, card: Card | None, review_settings: ReviewSettings, now: datetime, left: int,
          head: NextDue | None = None, **extra) -> HttpResponse:
    """The review page with ``card``; ``head`` (the queue's counts, from /review/ itself) splits ``left`` into
    the cards due now and those due only later today, with the time the next of those falls due."""
    context = _sidebar(request.user, review_settings, now, left)
    if head is not None:
        context.update(relearning=head.relearning, due_now=head.left - head.later, later=head.later,
                       next_later=head.next_later)
    if card is not None:
        context.update(_card_context(request, card, now, review_settings=review_settings, **extra))
    return _render(request, "reviews/review.html", context, review_settings)


@login_required
@require_safe
def review(request: HttpRequest) -> HttpResponse:
    """The next due card of the candidate's local day (or the week's forecast when nothing is due)."""
    now = timezone.now()
    review_settings = ReviewSettings.for_user(request.user)
    # The page shows one card and the counts, and whether an endpoint grades a written answer (asked in one query).
    also = {"has_grading_endpoint": Exists(model_grading.endpoints_of(OuterRef("user")))}
    head = next_due(request.user, now, review_settings, also=also)
    skipped: list[int] = []
    for _ in range(MAX_SKIPPED):  # a template whose problem cannot be drawn is passed over, with a sentence
        reason = head.card and undrawable(head.card)
        if not reason:
            break
        messages.warning(request, reason)
        skipped.append(head.card.pk)
        head = next_due(request.user, now, review_settings, excluding=skipped, also=also)
    return _show(request, head.card, review_settings, now, head.left, head)


def _own_card(request: HttpRequest, pk: int, load=card_of) -> Card:
    try:
        card = load(request.user, pk)
    except Card.DoesNotExist:
        raise Http404("No such card in your deck.") from None
    if card.suspended:
        raise Http404("That card is no longer in your deck.")
    if not card.item.published and not BankItem.objects.visible_to(request.user).filter(pk=card.item_id).exists():
        raise Http404("That question is no longer shared with you.")
    return card


@login_required
@require_safe
def card(request: HttpRequest, pk: int) -> HttpResponse:
    """One card of the deck, reviewed now whether due or not."""
    now = timezone.now()
    review_settings = ReviewSettings.for_user(request.user)
    current = _own_card(request, pk)
    reason = undrawable(current)
    if reason:
        messages.warning(request, reason)
        return redirect("reviews:review")
    return _show(request, current, review_settings, now, due_count(request.user, now, review_settings))


@login_required
@require_POST
def reveal(request: HttpRequest, pk: int) -> HttpResponse:
    """An open question's model answer and rubric, once the candidate has answered."""
    now = timezone.now()
    # The card comes with only what the card shows, and the candidate's review settings in the same query.
    current = _own_card(request, pk, load=card_to_reveal)
    if is_problem(current.item):
        return redirect("reviews:card", pk=current.pk)
    form = OpenAnswerForm(request.POST)
    stage = "revealed" if form.is_valid() else "answer"
    grading = None
    if stage == "revealed":
        # A written answer goes to the candidate's model, when they set one (llm_grading); else nothing changes.
        grading = model_grading.request(request.user, current.item, form.cleaned_data.get("answer") or "",
                                        Grading.REVIEW, current.pk, score_rule=RUBRIC_RULE,
                                        page_url=reverse("reviews:card", args=[current.pk]),
                                        has_endpoint=current.has_grading_endpoint)
        form = RateForm(len(current.item.rubric or ()), initial={**form.cleaned_data, "rating": "auto"})
    if request.htmx:
        # The #card partial shows the card alone: the sidebar's queue, forecast and counts are not rendered,
        # and it shows no setting, so the settings are only wanted for the rating buttons once revealed (the
        # middleware has already activated the candidate's time zone, the one _render would).
        return render(request, "reviews/review.html#card", _card_context(
            request, current, now, form=form, stage=stage,
            review_settings=owner_settings(current) if stage == "revealed" else None, grading=grading))
    review_settings = owner_settings(current)
    return _show(request, current, review_settings, now, due_count(request.user, now, review_settings),
                 form=form, stage=stage, grading=grading)


@login_required
@require_POST
def suggest(request: HttpRequest, pk: int) -> HttpResponse:
    """The rating buttons with the rubric's suggestion for the points ticked (htmx)."""
    current = _own_card(request, pk)
    total = len(current.item.rubric or ())
    # isdecimal, not isdigit: "²" is a digit that int() refuses.
    ticked = {int(value) for value in request.POST.getlist("ticked") if value.isdecimal() and int(value) < total}
    suggested = rating_for_rubric(len(ticked), total)
    review_settings = ReviewSettings.for_user(request.user)
    return _render(request, "reviews/review.html#ratings", {
        "card": current, "item": current.item, "ratings": ReviewLog.RATINGS, "suggested": suggested,
        "rating_buttons": rating_buttons(current, review_settings, timezone.now()),
        "suggested_label": RATING_LABELS.get(suggested), "ticked_count": len(ticked), "rubric_total": total,
        "rubric_rule": RUBRIC_RULE}, review_settings)


@login_required
@require_POST
def rate(request: HttpRequest, pk: int) -> HttpResponse:
    """Record the self-rated review of an open question, once, and go to the next card."""
    now = timezone.now()
    current = _own_card(request, pk)
    if is_problem(current.item):
        # A problem template is rated by the rule after grading (answer), never by hand: a rating posted
        # for one (a stale tab, a forged form) would otherwise re-render a problem card with the rating form.
        return redirect("reviews:card", pk=current.pk)
    form = RateForm(len(current.item.rubric or ()), request.POST)
    if not form.is_valid():
        review_settings = ReviewSettings.for_user(request.user)
        return _show(request, current, review_settings, now, due_count(request.user, now, review_settings),
                     form=form, stage="revealed" if "version" in form.cleaned_data else "answer")
    data = form.cleaned_data
    outcome = record_open_review(request.user, current.pk, data["version"], form.chosen_rating(),
                                 answer=data.get("answer") or "", said_aloud=bool(data.get("said_aloud")),
                                 ticked=data.get("ticked") or [], started_at=read_start(data.get("started")),
                                 now=now)
    if outcome.log is not None:  # the score kept: the model's suggestion accepted, or another chosen
        model_grading.record_choice(request.user, request.POST.get("grading"), outcome.log.rating)
    _report(request, outcome)
    return redirect("reviews:review")


@login_required
@require_POST
def answer(request: HttpRequest, pk: int) -> HttpResponse:
    """Grade a problem template's variant step by step and record the review rated by the rule."""
    now = timezone.now()
    current = _own_card(request, pk)
    if not is_problem(current.item):
        return redirect("reviews:card", pk=current.pk)
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        version = -1
    try:
        problem = drawn_problem(current)
    except Undrawable:
        return redirect("reviews:card", pk=current.pk)  # which passes it over, with the sentence
    form = AnswerForm(problem.solve().specs, request.POST)
    asked = followup_forms(problem, request.POST)
    followups = followup_replies(asked) if all([form.is_valid(), *(f.is_valid() for f in asked)]) else []
    if form.is_valid() and version >= 0:
        try:
            # The follow-ups are always graded with the problem (the chain is the card): a reply that leaves them
            # out, or leaves them as shown, is graded unanswered (0 for every step), so the chain cannot be
            # skipped by editing the form.
            outcome = record_problem_review(request.user, current.pk, version, form.answers(), followups=followups,
                                            started_at=read_start(form.cleaned_data.get("started")), now=now)
        except UnreadableAnswers as unreadable:
            # Nothing was recorded: the card comes back with every box as typed (the bound form) and the
            # signed start time it was first shown at, so the review's duration still counts from then.
            for key, message in unreadable.messages.items():
                prefix, _, field = key.partition("-")
                position = prefix[2:]
                if prefix.startswith("fu") and field and position.isdecimal() and int(position) < len(asked):
                    asked[int(position)].add_error(field, message)
                else:
                    form.add_error(key, message)
            form.add_error(None, str(unreadable))
        else:
            _report(request, outcome)
            target = reverse("reviews:review") if outcome.log is None else reverse("reviews:result",
                                                                                   args=[outcome.log.pk])
            # htmx would swap a followed 302 (a whole page) into the card: have it navigate instead.
            return HttpResponseClientRedirect(target) if request.htmx else redirect(target)
    if request.htmx:
        # As reveal: the #card partial alone, the sidebar left as it is (nothing was recorded).
        return render(request, "reviews/review.html#card", _card_context(request, current, now, form=form,
                                                                           followups=asked))
    review_settings = ReviewSettings.for_user(request.user)
    return _show(request, current, review_settings, now, due_count(request.user, now, review_settings),
                 form=form, followups=asked)


def _report(request: HttpRequest, outcome) -> None:
    if outcome.log is None:
        messages.warning(request, "That card was reviewed in another tab since this page was shown: nothing "
                                  "was recorded twice. Here is what is due now.")
    elif outcome.duplicate:
        messages.info(request, "Already recorded: that review was sent twice (another tab or a second click) and "
                               "counts once.")
    else:
        log = outcome.log
        with timezone.override(ReviewSettings.for_user(request.user).tz):
            due = timezone.localtime(log.due_after)
        # The result page's and the coach pages' format ("Fri 4 Dec 2026, 14:05"), through Django's date names.
        messages.success(request, f"Recorded: {log.get_rating_display()}. Next due {date_format(due, 'D j M Y, H:i')}.")


@login_required
@require_safe
def result(request: HttpRequest, pk: int) -> HttpResponse:
    """A recorded problem review: the graded steps, the score, the time and the rating the rule gave."""
    log = get_object_or_404(ReviewLog.objects.select_related("problem", "attempt", "item"), pk=pk, user=request.user)
    review_settings = ReviewSettings.for_user(request.user)
    now = timezone.now()
    context = {"log": log, "rating_rule": RATING_RULE, "left": due_count(request.user, now, review_settings),
               "seconds": log.duration_ms / 1000 if log.duration_ms is not None else None}
    if log.problem is not None:
        solution = log.problem.solve()
        context.update({"problem": log.problem, "statement": statement(log.problem, solution),
                        "steps": StepAnswer.objects.filter(attempt=log.attempt) if log.attempt else [],
                        "labels": {spec.key: spec.label for spec in solution.specs},
                        "time_box": None})
        if log.attempt is not None:
            # The card's chain, as answered with the problem (issue 33: the chain is the card).
            labels = context["labels"]
            context["followups"] = [debrief(stored, labels) for stored in
                                    FollowUpAttempt.objects.filter(attempt=log.attempt).order_by("position", "pk")]
        if log.item is not None:
            context["time_box"] = _card_box(log.item, len(solution.specs), len(context.get("followups", ())))
    return _render(request, "reviews/result.html", context, review_settings)


@login_required
@require_http_methods(["GET", "POST"])
def review_settings(request: HttpRequest) -> HttpResponse:
    """Interview date, time zone, digest and desired retention; what the nightly refit did."""
    if request.method == "POST":
        row = ReviewSettings.stored_for(request.user)
        form = ReviewSettingsForm(request.POST, instance=row)
        if form.is_valid():
            form.save()
            # The middleware keeps the zone in the session: this session shows the new one from the next page.
            remember_time_zone(request, form.cleaned_data["time_zone"])
            messages.success(request, "Settings saved.")
            return redirect("reviews:settings")
    else:
        row = ReviewSettings.for_user(request.user)
        form = ReviewSettingsForm(instance=row)
    return _render(request, "reviews/settings.html", {"form": form, "review_day": review_day(row.tz)}, row)


@login_required
@require_safe
def progress(request: HttpRequest) -> HttpResponse:
    """Retention, accuracy, misconceptions, reviews per day, the due forecast and the streak, as charts and tables."""
    row = ReviewSettings.for_user(request.user)
    now = timezone.now()
    data = progress_for(request.user, now, row)
    return _render(request, "reviews/progress.html", {"progress": data, "chart_data": data.chart_data(),
                                                      "review_day": review_day(row.tz, now)}, row)


def _csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_safe
def export_deck(request: HttpRequest) -> HttpResponse:
    """The candidate's deck as CSV."""
    return _csv_response(deck_csv(request.user), "deck.csv")


@login_required
@require_safe
def export_history(request: HttpRequest) -> HttpResponse:
    """The candidate's review history as CSV."""
    return _csv_response(history_csv(request.user), "review-history.csv")
