"""Design-interview pages: the senior-staff design prompts, and the design-doc critique drills.

A design prompt's page shows the prompt, then reveals the numbers, the levels,
the follow-ups and the reading behind it. A critique drill shows a numbered
design document; the candidate flags lines and says why, and the drill grades
the flags (:mod:`drills.critique.services`). A logged-in candidate's attempt is stored and
shown at its own address, where the candidate rates their reasons against the
planted explanations. Plain form posts work without JavaScript; with htmx the
drill is swapped in place.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from drills.critique.services import RULE, SELF_RATINGS, CritiqueGrade, grade_critique, read_flags
from drills.models import BankItem, CritiqueAttempt, CritiqueMark
from drills.problems.forms import read_start, sign_start
from drills.reviews.scheduling import RUBRIC_RULE
from llm_grading import services as model_grading
from llm_grading.models import Grading
from llm_grading.presentation import fragment_context
from runbook.models import Resource

#: The longest written answer kept (as on the review and round pages).
MAX_ANSWER = 20_000


def _item(slug: str, kind: str) -> BankItem:
    try:
        return BankItem.objects.published().get(slug=slug, kind=kind)
    except BankItem.DoesNotExist:
        raise Http404(f"No {kind} item '{slug}'.") from None


@require_safe
def design(request: HttpRequest, slug: str) -> HttpResponse:
    """A design prompt: the prompt first, then levels, follow-ups, numbers and resources behind <details>."""
    item = _item(slug, BankItem.DESIGN)
    details = item.details or {}
    wanted = details.get("resources", [])
    found = {r.slug: r for r in Resource.objects.filter(slug__in=wanted).select_related("stage")}
    resources = [found[slug] for slug in wanted if slug in found]
    levels = [(level, title, details.get("levels", {}).get(level, [])) for level, title in
              (("mid", "Mid-level"), ("senior", "Senior"), ("staff", "Staff and above"))]
    others = BankItem.objects.published().filter(kind=BankItem.DESIGN).exclude(pk=item.pk).order_by("position", "slug")
    context = {"item": item, "details": details, "levels": levels, "resources": resources, "others": others}
    if request.user.is_authenticated:
        # A written answer graded by the candidate's own model (llm_grading), when they set one.
        grading = model_grading.latest(request.user, Grading.DESIGN, item.pk)
        context.update({"grading_endpoint": model_grading.endpoint_for(request.user),
                        "model_grading": fragment_context(grading, "standalone"),
                        "last_answer": grading.answer if grading else ""})
    return render(request, "drills/design.html", context)


@login_required
@require_POST
def design_answer(request: HttpRequest, slug: str) -> HttpResponse:
    """A design prompt answered on its page, sent to the candidate's model; back to the page, which shows the
    grading as it runs (the answer is kept whatever the model does)."""
    item = _item(slug, BankItem.DESIGN)
    answer = str(request.POST.get("answer", ""))[:MAX_ANSWER]
    page = reverse("drills:design", args=[slug]) + "#your-answer"
    if not answer.strip():
        messages.warning(request, "Write your answer first: an empty answer is not sent for grading.")
        return redirect(page)
    if model_grading.request(request.user, item, answer, Grading.DESIGN, item.pk, page_url=page,
                             score_rule=RUBRIC_RULE) is None:
        messages.warning(request, "No endpoint grades your answers yet: set one in the grading settings.")
        return redirect("llm_grading:settings")
    return redirect(page)


def _rows(lines: list[str], grade: CritiqueGrade | None, flags: dict[int, str]) -> list[dict]:
    carried_from = {}
    if grade is not None:
        for planted in grade.planted:
            for number in planted.carried:
                carried_from[number] = planted.line
    return [{"number": number, "text": text, "flagged": number in flags, "why": flags.get(number, ""),
             "status": grade.status_of(number) if grade else "", "carried_from": carried_from.get(number)}
            for number, text in enumerate(lines, start=1)]


def _context(item: BankItem, grade: CritiqueGrade | None, flags: dict[int, str], attempt=None) -> dict:
    details = item.details or {}
    lines = grade.lines if grade is not None else details.get("lines", [])
    ratings = {}
    if attempt is not None:
        ratings = {mark.line: mark.self_rating for mark in attempt.marks.all()}
    return {
        "item": item, "title": details.get("title") or item.slug, "rows": _rows(lines, grade, flags),
        "grade": grade, "attempt": attempt, "rule": RULE, "self_ratings": SELF_RATINGS, "ratings": ratings,
        "started": sign_start(timezone.now()),
    }


@require_http_methods(["GET", "POST"])
def critique(request: HttpRequest, slug: str) -> HttpResponse:
    """A critique drill; on POST grade the flagged lines (stored for a logged-in candidate)."""
    item = _item(slug, BankItem.CRITIQUE)
    details = item.details or {}
    if request.method == "GET":
        context = _context(item, None, {})
        context["recent"] = CritiqueAttempt.objects.of(request.user).filter(item=item)[:5]
        return render(request, "drills/critique.html", context)
    flags = read_flags(details.get("lines", []), request.POST.getlist("flag"),
                       {key[4:]: value for key, value in request.POST.items() if key.startswith("why_")})
    grade = grade_critique(details, flags)
    attempt = None
    if request.user.is_authenticated:
        started = read_start(request.POST.get("started", ""))
        now = timezone.now()
        taken = (now - started).total_seconds() if started and started <= now else None
        attempt = CritiqueAttempt.record(item, request.user, grade, started_at=started, time_taken_s=taken)
        if not request.htmx:
            return redirect(attempt)
    context = _context(item, grade, flags, attempt)
    template = "drills/critique.html#drill" if request.htmx else "drills/critique.html"
    return render(request, template, context)


def _write_up(attempt: CritiqueAttempt) -> tuple[list[int], list[str], str]:
    """The critique write-up a model can grade: the lines of the found errors the candidate gave a reason for,
    the planted explanation of each (the rubric, in line order) and the reasons ("Line N: why", the answer)."""
    planted = {error.get("line"): error for error in (attempt.document or {}).get("planted", [])}
    marks = [mark for mark in attempt.marks.all() if mark.outcome == CritiqueMark.FOUND and mark.why.strip()]
    marks.sort(key=lambda mark: mark.line)
    rubric = [f"Line {mark.line}: {model_grading.plain(planted.get(mark.line, {}).get('explanation', ''))}"
              for mark in marks]
    answer = "\n".join(f"Line {mark.line}: {mark.why.strip()}" for mark in marks)
    return [mark.line for mark in marks], rubric, answer


def _grading_context(request: HttpRequest, attempt: CritiqueAttempt) -> dict:
    """The write-up's grading by the candidate's model (llm_grading), when they set an endpoint."""
    endpoint = model_grading.endpoint_for(request.user)
    if endpoint is None:
        return {}
    grading = model_grading.latest(request.user, Grading.CRITIQUE, attempt.pk)
    return {"grading_endpoint": endpoint, "model_grading": fragment_context(grading, "critique"),
            "gradable": bool(_write_up(attempt)[0])}


@login_required
@require_safe
def critique_attempt(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """A stored attempt, graded again from its own snapshot (the candidate's own attempts only)."""
    attempt = get_object_or_404(CritiqueAttempt.objects.of(request.user).select_related("item"), pk=pk,
                                item__slug=slug)
    grade = attempt.grade()
    context = _context(attempt.item, grade, {int(k): v for k, v in attempt.flags.items()}, attempt)
    context["recent"] = CritiqueAttempt.objects.of(request.user).filter(item=attempt.item)[:5]
    context.update(_grading_context(request, attempt))
    return render(request, "drills/critique.html", context)


@login_required
@require_POST
def critique_grade(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Send the attempt's reasons, with the planted explanations as the rubric, to the candidate's model."""
    attempt = get_object_or_404(CritiqueAttempt.objects.of(request.user).select_related("item"), pk=pk,
                                item__slug=slug)
    _, rubric, answer = _write_up(attempt)
    page = attempt.get_absolute_url() + "#model-grading"
    if model_grading.request(request.user, attempt.item, answer, Grading.CRITIQUE, attempt.pk, page_url=page,
                             score_rule=RUBRIC_RULE, rubric=rubric) is None:
        messages.warning(request, "Nothing was sent: set an endpoint in the grading settings, and give a reason "
                                  "for at least one error you found.")
    return redirect(page)


#: A model's verdict on a reason, as the self-assessment's rating (met: got it; partly; not: no).
VERDICT_RATING = {"met": "got", "partly": "partly", "not": "no"}


def _verdicts_of(request: HttpRequest, attempt: CritiqueAttempt) -> dict[int, str]:
    """Line → self-rating from the model's grading the candidate chose to use (``from_grading``), else empty."""
    if "from_grading" not in request.POST:
        return {}
    grading = model_grading.accept_suggestion(request.user, request.POST.get("from_grading"))
    if grading is None or grading.origin != Grading.CRITIQUE or grading.origin_id != attempt.pk:
        return {}
    lines, _, _ = _write_up(attempt)
    points = (grading.result or {}).get("points", [])
    return {line: VERDICT_RATING[point["verdict"]] for line, point in zip(lines, points)}


@login_required
@require_POST
def critique_assess(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Save the candidate's self-assessment of each found error (got it / partly / no)."""
    attempt = get_object_or_404(CritiqueAttempt.objects.of(request.user).select_related("item"), pk=pk,
                                item__slug=slug)
    allowed = {value for value, _ in SELF_RATINGS}
    proposed = _verdicts_of(request, attempt)
    changed = []
    for mark in attempt.marks.filter(outcome=CritiqueMark.FOUND):
        value = proposed.get(mark.line) or request.POST.get(f"rating_{mark.line}", "")
        if value in allowed and value != mark.self_rating:
            mark.self_rating = value
            changed.append(mark)
    CritiqueMark.objects.bulk_update(changed, ["self_rating"])
    if changed or attempt.assessed_at is None:
        attempt.assessed_at = timezone.now()
        attempt.save(update_fields=["assessed_at"])
    if not request.htmx:
        return redirect(attempt.get_absolute_url() + "#assess")
    grade = attempt.grade()
    context = _context(attempt.item, grade, {int(k): v for k, v in attempt.flags.items()}, attempt)
    context["assessed_now"] = True
    return render(request, "drills/critique.html#assess", context)
