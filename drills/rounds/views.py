"""Timed mock rounds: start a preset in one click, sit it item by item against the server's clock, read the report.

Every round response carries ``X-Round-Remaining`` (seconds left by the
server's clock) and the page's countdown re-syncs from it; the countdown is
only a display. Pages only read: a round past its deadline is closed by the beat
(``drills.tasks.close_due_rounds``) or by the next POST on it, which first applies
what it brought (an autosave, a submission), so nothing typed is lost and late
answers are kept and flagged; until then its pages show it closing, with a
"See the report" button that closes it. Without JavaScript the page
shows the deadline, and Save/Submit are plain form posts that redirect. A
candidate only reaches their own rounds (another's is a 404).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from calculators.engine.errors import EngineError
from calculators.engine.procedures.base import format_number
from calculators.engine.quantities import aliases_of, canonical_key
from drills.critique.services import RULE as CRITIQUE_RULE
from drills.models import ReviewLog, Round, RoundItem, RoundTemplate
from drills.problems.forms import sign_start
from drills.problems.generation import create_problem
from drills.problems.grading import BLANK
from drills.problems.presentation import problem_facts, statement
from drills.reviews.scheduling import RATING_LABELS, RUBRIC_RULE, rating_for_rubric
from drills.rounds.drawing import NoItems
from drills.rounds.presets import PRESETS, sync_presets
from drills.rounds.report import add_review_items, report_for
from drills.rounds.services import (
    LATE_GRACE,
    autosave,
    close,
    close_if_due,
    current_item,
    followup_link,
    start_round,
    unreadable_answers,
)
from drills.rounds.services import reveal as reveal_item
from drills.rounds.services import submit as submit_item
from llm_grading import services as model_grading
from llm_grading.models import Grading
from llm_grading.presentation import fragment_context

CLOCK_POLL_S = 30


def _own_round(request: HttpRequest, pk: int) -> Round:
    return get_object_or_404(Round.objects.of(request.user), pk=pk)


def _own_item(round_: Round, position: int) -> RoundItem:
    try:
        return round_.items.select_related("item", "item__chapter", "problem", "round").get(position=position)
    except RoundItem.DoesNotExist:
        raise Http404("No such item in this round.") from None


def _timed(response: HttpResponse, round_: Round, now) -> HttpResponse:
    response["X-Round-Remaining"] = str(round_.remaining_s(now))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """The presets, each one click from starting, and the candidate's history of rounds.

    Only reads: the presets are written by ``load_content`` (:data:`~drills.rounds.presets.ROUND_PRESETS`),
    and a round past its deadline is closed by the beat task ``drills.tasks.close_due_rounds`` or by the
    next request on the round itself; until then it is listed as out of time, with its report one click away.
    """
    now = timezone.now()
    rounds = list(Round.objects.of(request.user)[:50])
    presets = RoundTemplate.objects.filter(owner__isnull=True, slug__in=PRESETS).order_by("position", "slug")
    copies = RoundTemplate.objects.filter(owner=request.user)
    overdue = {row.pk for row in rounds if row.is_active and row.is_past_deadline(now)}
    return render(request, "rounds/index.html", {
        "presets": presets, "copies": copies, "rounds": rounds, "overdue": overdue,
        "active": [row for row in rounds if row.is_active and row.pk not in overdue], "now": now})


@login_required
@require_POST
def start(request: HttpRequest, slug: str) -> HttpResponse:
    """Start a preset (or the candidate's own copy of one) now."""
    sync_presets()
    template = get_object_or_404(RoundTemplate.objects.filter(owner__isnull=True) |
                                 RoundTemplate.objects.filter(owner=request.user), slug=slug)
    try:
        started = start_round(request.user, template, timezone.now())
    except NoItems as error:
        messages.warning(request, str(error))
        return redirect("rounds:index")
    return redirect(started)


@login_required
@require_safe
def round_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The round's current item, or its report once closed (or closing: past its deadline)."""
    round_ = _own_round(request, pk)
    if not round_.is_active or round_.is_past_deadline(timezone.now()):
        return redirect("rounds:report", pk=round_.pk)
    item = current_item(round_)
    return redirect(item) if item else redirect("rounds:report", pk=round_.pk)


def _item_context(round_: Round, item: RoundItem, now) -> dict:
    items = list(round_.items.select_related("item"))  # the item list names each by its title
    context = {"round": round_, "ri": item, "item": item.item, "items": items, "now": now,
               "remaining": round_.remaining_s(now), "poll_s": CLOCK_POLL_S,
               "next_item": next((i for i in items if i.position > item.position and not i.is_submitted), None),
               # the one item not in yet: submitting it ends the round, so its button asks first (inline, htmx)
               "last_open": not any(not i.is_submitted for i in items if i.pk != item.pk),
               "ratings": ReviewLog.RATINGS}
    if item.is_worked and item.problem is not None:
        solution = item.problem.solve()
        context.update({"problem": item.problem, "statement": statement(item.problem, solution),
                        "facts": problem_facts(item.problem),
                        "steps": [{"spec": spec, "value": _stored_answer(item.answers, spec.key, solution.family)}
                                  for spec in solution.specs]})
        if item.attempt_id:
            # Stored under the key of its day (weight_gib before weights_gib): read it under the canonical one.
            context["graded"] = {canonical_key(s.key, solution.family): s for s in item.attempt.steps.all()}
    elif item.is_followup and item.problem is not None:
        context.update(_followup_context(item))
    elif item.is_critique and item.item is not None:
        context.update({"rule": CRITIQUE_RULE, "lines": [
            {"number": n, "text": text, "flagged": str(n) in item.answers, "why": item.answers.get(str(n), "")}
            for n, text in enumerate((item.item.details or {}).get("lines", []), start=1)]})
    elif item.is_open and item.item is not None:
        total = len(item.item.rubric or ())
        suggested = rating_for_rubric(len(item.ticked), total)
        context.update({"rubric_total": total, "suggested": suggested,
                        "suggested_label": RATING_LABELS.get(suggested)})
        if item.revealed_at is not None:  # the written answer graded by the candidate's model, if they set one
            context["model_grading"] = fragment_context(model_grading.latest(round_.user, Grading.ROUND, item.pk),
                                                        "round")
        elif round_.is_active or not item.is_submitted:  # where the answer will go, said before it is sent
            context["grading_endpoint"] = model_grading.endpoint_for(round_.user)
    return context


def _followup_context(item: RoundItem) -> dict:
    """A follow-up item's page: the problem, the change, and per step what it was, the mark and the typed value
    (and, once graded, both verdicts)."""
    solution = item.problem.solve()
    link = followup_link(item)
    context = {"problem": item.problem, "statement": statement(item.problem, solution), "link": link}
    if link is None:
        return context
    answers = item.answers or {}
    marked, values = set(answers.get("marked", [])), answers.get("values") or {}
    graded = item.followup_attempt.grade if item.followup_attempt_id else None
    marks = {mark["key"]: mark for mark in graded["marks"]} if graded else {}
    verdicts = {value["key"]: value for value in graded["values"]} if graded else {}
    before = link.original.values
    context["followup_rows"] = [
        {"key": spec.key, "label": spec.label, "unit": spec.unit, "marked": spec.key in marked,
         "value": values.get(spec.key, ""), "mark": marks.get(spec.key), "verdict": verdicts.get(spec.key),
         "was": format_number(before[spec.key], spec.unit) if spec.key in before else "—"}
        for spec in link.result.specs]
    context["followup_graded"] = graded
    return context


@login_required
@require_safe
def item_page(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    """One item of the round with the countdown; after the round, only open items waiting for a self-score."""
    now = timezone.now()
    round_ = _own_round(request, pk)
    item = _own_item(round_, position)
    closing = round_.is_active and round_.is_past_deadline(now)
    if (not round_.is_active or closing) and (item.is_submitted or not item.is_open):
        return redirect("rounds:report", pk=round_.pk)
    # Opening the page stores nothing: its forms carry the moment it opened, which the first write keeps.
    context = {**_item_context(round_, item, now), "opened": sign_start(now)}
    return _timed(render(request, "rounds/round.html", context), round_, now)


@login_required
@require_POST
def save(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    """Autosave what was typed (htmx on every change; a plain Save button without JavaScript)."""
    now = timezone.now()
    round_ = _own_round(request, pk)
    item = autosave(request.user, _own_item(round_, position).pk, request.POST, now)
    round_ = close_if_due(round_, now)
    if request.htmx:
        response = render(request, "rounds/round.html#save_status",
                          {"ri": item, "round": round_, "now": now, "remaining": round_.remaining_s(now)})
        if not round_.is_active and not (item.is_open and not item.is_submitted):
            response["HX-Redirect"] = round_.get_absolute_url()
        return _timed(response, round_, now)
    messages.info(request, "Saved." + (" (after the deadline: kept and flagged late)" if item.late else ""))
    return redirect(item if round_.is_active else round_)


@login_required
@require_POST
def reveal(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    """Save an open answer and show the model answer and rubric."""
    now = timezone.now()
    round_ = _own_round(request, pk)
    item = reveal_item(request.user, _own_item(round_, position).pk, request.POST, now)
    if item.is_open and item.item is not None:
        # The written answer goes to the candidate's model when they set one (llm_grading); else nothing changes.
        model_grading.request(request.user, item.item, item.answer, Grading.ROUND, item.pk,
                              page_url=item.get_absolute_url(), score_rule=RUBRIC_RULE)
    close_if_due(round_, now)
    return redirect("rounds:item", pk=round_.pk, position=item.position)


def _with_model_ticks(request: HttpRequest, item: RoundItem):
    """The submitted form, where the candidate accepted their model's score and ticked no rubric point: with the
    points the model judged met as the ticks, so the item's grade (the share ticked) is not 0 by omission."""
    data = request.POST
    if not item.is_open or data.getlist("ticked") or not data.get("grading"):
        return data
    grading = Grading.objects.of(request.user).at(Grading.ROUND, item.pk).filter(
        pk=model_grading.own_pk(data.get("grading")), status=Grading.DONE).first()
    if grading is None or str(grading.suggested_rating) != data.get("self_score"):
        return data
    data = data.copy()
    data.setlist("ticked", [str(point["point"] - 1) for point in grading.result["points"] if point["verdict"] == "met"])
    return data


@login_required
@require_POST
def submit(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    """The item's submission (:func:`_submit`); for htmx (the last item's button), a redirect is said with
    ``HX-Redirect`` so the whole page goes there rather than into the question's place."""
    response = _submit(request, pk, position)
    if request.htmx and response.status_code == 302:
        followed = HttpResponse(status=204)
        followed["HX-Redirect"] = response["Location"]
        return followed
    if request.htmx and not response.get("X-Round-Asks"):  # a whole page (unreadable answers): it replaces the page
        response["HX-Retarget"], response["HX-Reswap"] = "body", "innerHTML"
    return response


def _submit(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    """Record the item's answer once (late after the deadline, never dropped) and go to the next item. The last
    item in would end the round early: without ``confirm=yes`` the answer is only saved and a page asks first
    (htmx: the question replaces the item's buttons)."""
    now = timezone.now()
    round_ = _own_round(request, pk)
    item = _own_item(round_, position)
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        version = -1
    if round_.is_active and not round_.is_past_deadline(now) and not item.is_submitted:
        unreadable = unreadable_answers(item, request.POST)
        if unreadable:
            # Nothing is graded; what was typed is saved as autosave would, and shown with the parser's words.
            item = autosave(request.user, item.pk, request.POST, now)
            context = {**_item_context(round_, item, now), "unreadable": unreadable,
                       "all_blank": all(message == BLANK for message in unreadable.values())}
            return _timed(render(request, "rounds/round.html", context), round_, now)
        if request.POST.get("confirm") != "yes" and _ends_the_round(round_, item):
            # The last item in ends the round with time left: ask first, keeping what was typed (saved as
            # autosave would). The page re-posts the same fields with confirm=yes; htmx swaps it in place.
            item = autosave(request.user, item.pk, request.POST, now)
            fields = [(name, value) for name, values in request.POST.lists()
                      if name not in ("csrfmiddlewaretoken", "confirm") for value in values]
            context = {"round": round_, "ri": item, "fields": fields, "remaining": round_.remaining_s(now)}
            template = "rounds/confirm_last.html#ask" if request.htmx else "rounds/confirm_last.html"
            response = _timed(render(request, template, context), round_, now)
            response["X-Round-Asks"] = "end"
            return response
    outcome = submit_item(request.user, item.pk, version, _with_model_ticks(request, item), now)
    if outcome.kept_aside:
        # Another tab (or the round's own close) got there first with a different answer: say which one counts.
        kept = outcome.item
        at = f"{timezone.localtime(kept.submitted_at):%H:%M:%S}"
        if kept.auto_submitted:
            first = (f"The round closed before this arrived and graded this item from what was saved, at {at}: "
                     "that is the answer that counts.")
        else:
            first = (f"Another tab (or an earlier click) submitted this item first, at {at}: that answer is the "
                     "one recorded and graded, shown here.")
        messages.warning(request, f"{first} What this page sent was different; it is kept aside with the item, "
                                  "not graded.")
        round_.refresh_from_db()
        return redirect(kept) if round_.is_active else redirect("rounds:report", pk=round_.pk)
    if outcome.created and outcome.item.is_open:  # the score kept: the model's suggestion accepted, or another
        model_grading.record_choice(request.user, request.POST.get("grading"), outcome.item.self_score)
    if outcome.duplicate:
        messages.info(request, "Already recorded: that answer was sent twice and counts once.")
    elif outcome.item.late:
        messages.warning(request, "Recorded after the deadline: your answer is kept and flagged late.")
    else:
        # Says what happened on the page the redirect leads to; static/js/a11y.js focuses it (issue 12).
        messages.success(request, f"Item {outcome.item.position} recorded.")
    round_.refresh_from_db()
    if not round_.is_active:
        return redirect("rounds:report", pk=round_.pk)
    following = current_item(round_)
    return redirect(following if following and not following.is_submitted else round_)


def _ends_the_round(round_: Round, item: RoundItem) -> bool:
    """Whether submitting ``item`` would end ``round_`` (every other item is already in)."""
    return not round_.items.exclude(pk=item.pk).filter(submitted_at__isnull=True).exists()


@login_required
@require_safe
def confirm_finish(request: HttpRequest, pk: int) -> HttpResponse:
    """Ask before ending the round early: what is unsubmitted, and the time left (works without JavaScript)."""
    now = timezone.now()
    round_ = _own_round(request, pk)
    if not round_.is_active or round_.is_past_deadline(now):
        return redirect("rounds:report", pk=round_.pk)
    waiting = [item for item in round_.items.select_related("item") if not item.is_submitted]
    return _timed(render(request, "rounds/confirm_finish.html", {"round": round_, "waiting": waiting,
                                                                  "remaining": round_.remaining_s(now)}), round_, now)


@login_required
@require_POST
def finish(request: HttpRequest, pk: int) -> HttpResponse:
    """End the round now, once confirmed: grade what was typed and update the FSRS cards.

    A post without ``confirm=yes`` (an old page's button) goes to the confirmation page instead.
    """
    now = timezone.now()
    round_ = close_if_due(_own_round(request, pk), now)
    if round_.is_active and request.POST.get("confirm") != "yes":
        return redirect("rounds:confirm_finish", pk=round_.pk)
    close(round_, now, Round.FINISHED)
    return redirect("rounds:report", pk=round_.pk)


@login_required
@require_POST
def again(request: HttpRequest, pk: int, position: int) -> HttpResponse:
    """Work a round's problem again: a fresh seed of the same template, with the template's fixed inputs."""
    round_ = _own_round(request, pk)
    item = _own_item(round_, position)
    if round_.is_active or not item.is_worked or item.item is None:
        raise Http404("Only a problem of a closed round can be worked again.")
    try:
        problem = create_problem(item.item.family, user=request.user, fixed_inputs=item.item.fixed_inputs)
    except EngineError as error:
        messages.error(request, f"No new problem of this template can be drawn: {error}")
        return redirect("rounds:report", pk=round_.pk)
    return redirect(problem)


@login_required
@require_safe
def clock(request: HttpRequest, pk: int) -> HttpResponse:
    """The server's time left (polled by the countdown); sends the page to the report once the round is past its
    deadline (the report shows it closing until it is closed)."""
    now = timezone.now()
    round_ = _own_round(request, pk)
    response = render(request, "rounds/round.html#clock", {"round": round_, "remaining": round_.remaining_s(now),
                                                           "poll_s": CLOCK_POLL_S})
    if (not round_.is_active or round_.is_past_deadline(now)) and request.htmx:
        response["HX-Redirect"] = round_.get_absolute_url()
    return _timed(response, round_, now)


@login_required
@require_safe
def report(request: HttpRequest, pk: int) -> HttpResponse:
    """Score and time per item, misconceptions, what to review next, and earlier rounds of the kind.

    A round past its deadline and not closed yet (the beat closes it within a minute; none runs without a
    broker) is shown closing, with a "See the report" button that closes it (a POST to ``finish``).
    """
    now = timezone.now()
    round_ = _own_round(request, pk)
    if round_.is_active and round_.is_past_deadline(now):
        return _timed(render(request, "rounds/closing.html", {"round": round_}), round_, now)
    if round_.is_active:
        return redirect(round_)
    return _timed(render(request, "rounds/report.html", {"report": report_for(round_), "round": round_,
                                                         "grace_s": int(LATE_GRACE.total_seconds())}), round_, now)


@login_required
@require_POST
def deck(request: HttpRequest, pk: int) -> HttpResponse:
    """Add the chosen items of the round to the review deck in one click."""
    round_ = _own_round(request, pk)
    added = add_review_items(request.user, round_, request.POST.getlist("item"), timezone.now())
    messages.success(request, f"Added {added} item{'s' if added != 1 else ''} to your review deck." if added
                     else "Those items are already in your deck.")
    return redirect("rounds:report", pk=round_.pk)


def _stored_answer(answers: dict, key: str, family: str) -> str:
    """A round item's typed text for a step, also when it was stored under an older key of the step."""
    if key in answers:
        return answers[key]
    return next((answers[old] for old in aliases_of(key, family) if old in answers), "")
