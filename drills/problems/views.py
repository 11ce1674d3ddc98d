"""Drill pages: the problem templates, a seeded problem, and its step-by-step grading."""

from __future__ import annotations

import secrets
from contextlib import nullcontext

from django.contrib.auth.views import redirect_to_login
from django.db import transaction
from django.forms import BoundField
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_http_methods, require_safe

from calculators.engine.errors import EngineError
from calculators.engine.quantities import quantity as declared_quantity
from calculators.families import FAMILIES
from drills.followups.services import debrief, first_values
from drills.models import Attempt, FollowUpAttempt, ProblemInstance, StepAnswer
from drills.problems.followup_views import followup_context
from drills.problems.forms import AnswerForm, read_start, sign_start
from drills.problems.generation import MAX_SEED, draw_problem, drill_families
from drills.problems.grading import UnreadableAnswers, counts_blanks, grade_problem, stored_grade, submit
from drills.problems.presentation import (
    problem_facts,
    statement,
    step_choices,
    verdict_label,
    verdict_style,
    worked_sweep,
)
from drills.problems.storage import with_first_attempt

# Seconds a stored attempt's rendered step rows are kept in the cache (the page opened again shows them). The
# rows read only the attempt's stored steps and the problem, which never change; the bound is for a deploy that
# changes how a row is drawn: an attempt's rows drawn before it are shown for at most this long.
RESTORED_ROWS_CACHE_S = 15 * 60


def _family_or_404(family: str):
    if family not in FAMILIES or FAMILIES[family].generate is None:
        raise Http404(f"No drill family '{family}'.")
    return FAMILIES[family]


@require_safe
def index(request: HttpRequest) -> HttpResponse:
    """The problem templates, and the candidate's recent attempts."""
    families = drill_families()
    recent = []
    if request.user.is_authenticated:
        recent = Attempt.objects.filter(user=request.user).select_related("problem")[:10]
    return render(request, "drills/index.html", {"families": families, "recent": recent})


@require_http_methods(["GET", "POST"])
def new_problem(request: HttpRequest, family: str) -> HttpResponse:
    """A problem drawn from ``?seed=N`` (a request without one is sent to a fresh seed's address).

    Reading the page stores nothing, logged in or not: the page is drawn from the seed each time, except that a
    logged-in candidate who already stored this draw is sent to that problem (so grading it again is practice on
    it, never a second problem whose first attempt counts). A logged-in candidate's first POST stores the problem:
    Save keeps it for later (and sends them to its own page), their
    answers store it with the graded attempt in one transaction. A visitor's answers are graded and not saved.
    """
    _family_or_404(family)
    seed = request.GET.get("seed")
    try:
        seed = int(seed) if seed not in (None, "") else None
    except ValueError:
        seed = None
    if seed is None or not 0 <= seed < MAX_SEED:
        return redirect(f"{request.path}?seed={secrets.randbelow(MAX_SEED)}")
    try:
        instance = draw_problem(family, seed)
    except EngineError as error:  # no draw of this seed has an answer (generation.DRAW_ATTEMPTS)
        return _unsolvable_page(request, family, str(error))
    if request.user.is_authenticated:
        # The candidate already stored this very draw (same seed, generator and inputs): it is that problem, so a
        # second grading is practice on it rather than a second problem whose first attempt would count again.
        stored = ProblemInstance.objects.filter(created_by=request.user, family=family, seed=seed,
                                                generator_version=instance.generator_version,
                                                inputs=instance.inputs).order_by("pk").first()
        if stored is not None:
            return redirect(stored) if request.method == "GET" or request.POST.get("save") else \
                _problem_page(request, stored)
    if request.method == "POST" and request.user.is_authenticated and request.POST.get("save"):
        instance.created_by = request.user
        instance.save()
        return redirect(instance)
    return _problem_page(request, instance)


def _unsolvable_page(request: HttpRequest, family: str, reason: str) -> HttpResponse:
    """A problem that cannot be worked: the engine's sentence and a way to draw another (never an error page)."""
    return render(request, "drills/unsolvable.html", {"family": FAMILIES[family], "reason": reason})


@require_http_methods(["GET", "POST"])
def problem(request: HttpRequest, family: str, pk: int) -> HttpResponse:
    """Show one of the user's own problems; on POST grade the answers and save the attempt.

    A stored problem is its owner's (``created_by``): a visitor is sent to log in (their session may have
    ended); anyone else, and everyone for a problem whose owner deleted their account, gets a 404 on a GET and
    on a POST, which stores nothing. Coaches read their candidates' problems through the coaching pages
    (:mod:`coaching.visibility`), never here.
    """
    _family_or_404(family)
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    problems = ProblemInstance.objects.all()
    if request.method == "POST":  # the attempt to store needs the earliest one: read with the problem
        problems = with_first_attempt(problems, request.user)
    try:
        instance = problems.get(pk=pk)
    except ProblemInstance.DoesNotExist:
        raise Http404("No such problem.") from None
    if instance.family != family or instance.created_by_id is None or instance.created_by_id != request.user.pk:
        raise Http404("No such problem.")
    return _problem_page(request, instance)


def _problem_page(request: HttpRequest, instance: ProblemInstance) -> HttpResponse:
    """The problem page for ``instance`` (saved or drawn from a seed); a POST grades the answers. A stored
    problem that cannot be solved (drawn before draws were checked) gets the engine's sentence instead."""
    try:
        solution = instance.solve()
    except EngineError as error:
        return _unsolvable_page(request, instance.family, str(error))
    graded = attempt = refused = seen = restored = None
    if request.method == "POST":
        form = AnswerForm(solution.specs, request.POST)
        form.is_valid()  # every field is optional; over-long text is reported beside its box
        unsaved = instance.pk is None and request.user.is_authenticated
        try:
            # Grading shows the expected values, so a blank or unreadable step records nothing and shows none,
            # unless the candidate asks to count blanks as unanswered (a typo is always theirs to fix). A drawn
            # problem is stored with a logged-in candidate's attempt, in the same transaction.
            with transaction.atomic() if unsaved else nullcontext():
                if unsaved:
                    instance.created_by = request.user
                    instance.save()
                submitted = submit(instance, request.user, form.answers(), strict=True,
                                   refuse_blank=not counts_blanks(request.POST),
                                   started_at=read_start(form.cleaned_data.get("started")))
        except UnreadableAnswers as error:
            if unsaved:  # rolled back with the attempt: the page stays the drawn problem's
                instance.pk, instance._state.adding = None, True
            refused = error
            for key, message in error.messages.items():
                form.add_error(key, message)
        else:
            graded, attempt = submitted.grade, submitted.attempt  # stored for a logged-in candidate only
    else:
        latest = None if request.GET.get("clear") else _latest_attempt(request.user, instance, len(solution.specs))
        if latest is None:
            form = AnswerForm(solution.specs, initial={"started": sign_start(timezone.now())})
        else:
            # The page opened again after grading shows that grade, as stored with the attempt (its answers back
            # in their boxes), and the follow-ups where they were left: a GET writes nothing.
            restored, steps = latest
            form = AnswerForm(solution.specs, {**{step.key: step.raw_input for step in steps},
                                               "started": sign_start(timezone.now())})
            form.is_valid()
            graded = stored_grade(solution, steps) or grade_problem(instance, form.answers())
        seen = _first_attempt(request.user, instance) if restored is not None or request.GET.get("clear") else None
    rows = [_step_row(form[spec.key], spec, number, graded.steps[number - 1] if graded else None,
                      solution.steps[number - 1])
            for number, spec in enumerate(solution.specs, start=1)]
    # After grading showed the expected values, a re-submission is practice: the first attempt is what counts.
    # Then the interviewer follows up (issue 33 item 1): the first link of the chain, from these answers.
    problem_url = instance.get_absolute_url()  # after a drawn problem was stored: its own address
    answered: list[dict] = []
    followup = None
    if graded and restored is not None:
        answered, followup = _chain_so_far(request, instance, restored, solution, graded, form.answers(),
                                           problem_url)
    elif graded:
        followup = followup_context(request, instance, 0, own=first_values(instance, form.answers(), graded=graded),
                                    problem_url=problem_url)
    context = {
        "problem": instance, "problem_url": problem_url, "family": instance.family_info, "form": form, "rows": rows,
        "graded": graded,
        "attempt": attempt, "solution": solution, "counted": _counted_attempt(attempt), "refused": refused,
        "seen": seen, "followup": followup, "restored": restored, "restored_rows_s": RESTORED_ROWS_CACHE_S,
        "answered": answered,
        "sweep": worked_sweep(instance, solution) if graded else None,
        # A simulated drill's grading simulates its follow-ups' sweeps (seconds): the form says so while it runs.
        "simulated": "simulation" in (instance.inputs or {}),
    }
    if request.htmx and request.method == "POST":
        # htmx swaps the #answers form (and the follow-up section, out of band): the statement and the config
        # facts beside them are not rendered.
        response = render(request, "drills/problem.html#graded_response", context)
        if instance.pk is not None and request.path != problem_url:
            response["HX-Push-Url"] = problem_url  # a drawn problem just stored: its own address
        return response
    context.update(statement=statement(instance, solution), facts=problem_facts(instance))
    return render(request, "drills/problem.html", context)


def _step_row(field: BoundField, spec, number: int, grade, step) -> dict:
    """Step ``number``'s row of the answer form (``drills/problem.html#step``): its ``spec``, ``grade`` (``None``
    before grading) and worked ``step``, with its box's name, id, typed value and errors read from ``field`` once
    (each is computed again at every read of the bound field), its label (:func:`_step_label`), the choices of a
    verdict step's box (``[]`` for a typed one) and the grade's verdict style, label and misconception, each read
    once here instead of through a filter or a property in the partial."""
    box_id = field.id_for_label
    value = field.value()
    return {"spec": spec, "grade": grade, "step": step, "name": field.html_name, "id": box_id,
            "error_id": f"{box_id}-error", "value": value, "errors": field.errors,
            "label": _step_label(spec, number, box_id), "choices": step_choices(spec, value),
            "style": verdict_style(grade.verdict) if grade else None,
            "verdict_label": verdict_label(grade.verdict) if grade else None,
            "misconception": grade.misconception_info if grade else None}


_LABELS: dict[tuple, SafeString] = {}
LABEL_MEMO_SIZE = 512  # labels kept per process, oldest dropped first (a family's steps are a handful each)


def _step_label(spec, number: int, box_id: str) -> SafeString:
    """Step ``number``'s label with its key, unit and tolerance (``drills/_answer_step.html#label``), rendered once
    per process for each way a step is shown: the key holds everything the partial reads (the step's key decides
    its declared quantity: whether it is a verdict, answered by a choice, and its bounds)."""
    key = (spec.key, spec.label, spec.unit, spec.tolerance, spec.rounding, number, box_id)
    html = _LABELS.get(key)
    if html is None:
        while len(_LABELS) >= LABEL_MEMO_SIZE:
            _LABELS.pop(next(iter(_LABELS)), None)
        declared = declared_quantity(spec.key)  # a verdict step is answered by a choice (the step_choices filter)
        html = _LABELS[key] = mark_safe(render_to_string("drills/_answer_step.html#label", {
            "spec": spec, "number": number, "for_id": box_id, "show_key": True,
            "choices": declared is not None and bool(declared.verdict)}))
    return html


def _latest_attempt(user, instance: ProblemInstance, steps: int) -> tuple[Attempt, list[StepAnswer]] | None:
    """The owner's latest graded attempt of a stored ``instance`` (what the page shows when opened again) and its
    stored steps in ``position`` order, read in one query: the first ``steps`` rows (the problem's number of
    steps) of the candidate's steps of ``instance`` by attempt, latest first, each joined to its attempt
    (``select_related``). ``None`` for a visitor, an unsaved problem, or none graded yet (every stored attempt has
    its steps: :func:`~drills.problems.storage.store_attempt` saves them in the attempt's transaction)."""
    if not user.is_authenticated or instance.pk is None:
        return None
    rows = list(StepAnswer.objects.filter(attempt__user=user, attempt__problem=instance)
                .select_related("attempt").order_by("-attempt_id", "position")[:steps])
    if not rows:
        return None
    latest = rows[0].attempt  # an attempt stored with fewer steps than the problem has now: the rows after are older
    return latest, [row for row in rows if row.attempt_id == latest.pk]


def _chain_so_far(request: HttpRequest, instance: ProblemInstance, attempt: Attempt, solution, graded,
                  answers: dict[str, str], problem_url: str) -> tuple[list[dict], dict | None]:
    """The follow-ups of ``attempt`` read back (:func:`~drills.followups.services.debrief`, in order) and the
    section of the first link not answered yet (``None`` once the chain is done): where the candidate left it.
    Reads only."""
    stored = {link.position: link for link in FollowUpAttempt.objects.filter(  # a link graded again: the latest
        user=request.user, problem=instance, attempt=attempt).order_by("position", "pk")}
    labels = {spec.key: spec.label for spec in solution.specs}
    answered, own = [], first_values(instance, answers, graded=graded)
    position = 0
    while position in stored:
        answered.append(debrief(stored[position], labels))
        own = {key: float(value) for key, value in stored[position].own.items()}
        position += 1
    return answered, followup_context(request, instance, position, own=own, problem_url=problem_url)


def _first_attempt(user, instance: ProblemInstance) -> Attempt | None:
    """The candidate's first graded attempt of ``instance`` (the one that counts), or ``None``: the page
    opened again says so, since grading it again is practice. ``None`` for a visitor or an unsaved problem."""
    if not user.is_authenticated or instance.pk is None:
        return None
    return (Attempt.objects.filter(user=user, problem=instance).order_by("pk")
            .only("pk", "score", "submitted_at").first())


def _counted_attempt(attempt: Attempt | None) -> Attempt | None:
    """The attempt that counts when ``attempt`` is a re-submission (the practice note), else ``None``.

    Grading shows the expected values, so the candidate's first graded attempt of a problem is what counts
    (``Attempt.first_graded``): the earliest one saved before ``attempt``, which storing it read in the same
    statement (:func:`drills.problems.storage.store_attempt`).
    """
    return None if attempt is None else attempt.earliest_before
