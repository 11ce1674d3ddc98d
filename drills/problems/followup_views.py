"""The drill page's follow-ups: ``/drills/<family>/<id>/followup/`` and, for a drawn problem,
``/drills/<family>/new/followup/?seed=N`` (issue 33 item 1).

A GET shows a link's first question (which steps move?) and stores nothing. A POST with ``phase=marks`` asks
the new values of the marked steps (nothing stored either); ``phase=values`` grades both halves and, for a
logged-in candidate on their own stored problem, stores the :class:`FollowUpAttempt`. A visitor's values so far
travel in a signed token (``carry``), since nothing of theirs is stored.
"""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from calculators.engine.errors import EngineError
from calculators.engine.grader import shown_value
from calculators.families import FAMILIES
from drills.followups.services import chain, grade_link, refusal, store_link, stored_start
from drills.models import ProblemInstance
from drills.problems.forms import FollowUpForm, read_carry, sign_carry
from drills.problems.generation import MAX_SEED, draw_problem


def _drill_family(family: str) -> None:
    if family not in FAMILIES or FAMILIES[family].generate is None:
        raise Http404(f"No drill family '{family}'.")


@require_http_methods(["GET", "POST"])
def stored(request: HttpRequest, family: str, pk: int) -> HttpResponse:
    """A follow-up on one of the candidate's own stored problems (404 for anyone else's)."""
    _drill_family(family)
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    instance = ProblemInstance.objects.filter(pk=pk, family=family, created_by=request.user).first()
    if instance is None:
        raise Http404("No such problem.")
    return followup_page(request, instance)


@require_http_methods(["GET", "POST"])
def drawn(request: HttpRequest, family: str) -> HttpResponse:
    """A follow-up on a problem drawn from ``?seed=N`` and not stored (a visitor's): nothing is stored. Without a
    seed it is the family's new problem that comes first (a redirect)."""
    _drill_family(family)
    try:
        seed = int(request.GET.get("seed", ""))
    except ValueError:
        seed = -1
    if not 0 <= seed < MAX_SEED:  # a follow-up without its problem: work a problem first
        return redirect("drills:new", family=family)
    try:
        instance = draw_problem(family, seed)
    except EngineError:
        raise Http404("This seed draws no problem.") from None
    return followup_page(request, instance)


def _position(request: HttpRequest) -> int:
    raw = request.POST.get("link") if request.method == "POST" else request.GET.get("link")
    try:
        position = int(raw or 0)
    except ValueError:
        return 0
    return position if 0 <= position < 16 else 0


def followup_url(instance: ProblemInstance, problem_url: str | None = None) -> str:
    """Where ``instance``'s follow-up form posts (``problem_url``: the problem's address, when already known)."""
    url = problem_url or instance.get_absolute_url()
    if instance.pk is None:  # /drills/<family>/new/?seed=N
        return url.replace("/new/?", "/new/followup/?")
    return f"{url}followup/"


def followup_context(request: HttpRequest, instance: ProblemInstance, position: int = 0, *,
                     own: dict[str, float] | None = None, problem_url: str | None = None) -> dict | None:
    """The follow-up section's context for link ``position`` of ``instance`` (``None`` when the problem has no
    such link). ``own`` (the candidate's values so far) when known; else read: a logged-in owner's stored start,
    a visitor's signed carry. ``problem_url``: the problem's address when the caller has it. A GET or ``phase``
    start shows the marks; ``marks`` asks the values; ``values`` grades and stores."""
    links = chain(instance)
    if position >= len(links):
        return None
    link = links[position]
    owner = instance.pk is not None and request.user.is_authenticated and instance.created_by_id == request.user.pk
    attempt = None
    if own is None:
        if owner:
            start = stored_start(request.user, instance, position)
            if start is None:
                return {"link": link, "position": position, "number": position + 1, "total": len(links),
                        "missing": True, "url": followup_url(instance, problem_url), "problem": instance}
            own, attempt = start.own, start.attempt
        else:
            own = read_carry(request.POST.get("carry"))
    phase = "start"
    carry = sign_carry(own)  # the start phase's form posts the marks with the values so far (its hidden inputs)
    form = FollowUpForm(link)
    graded = stored_link = None
    if request.method == "POST" and request.POST.get("phase") in ("marks", "values") \
            and str(position) == request.POST.get("link", "0"):
        form = FollowUpForm(link, request.POST)
        form.is_valid()
        phase = request.POST["phase"]
        if phase == "values":
            unreadable = _unreadable(form, link)
            if unreadable:
                phase = "marks"  # show the value boxes again, with what was typed and why it was refused
                for key, message in unreadable.items():
                    form.add_error(f"value-{key}", message)
            else:
                graded = grade_link(link, own, form.marked(), form.answers())
                phase = "graded"
                if owner:
                    if attempt is None:
                        start = stored_start(request.user, instance, position)
                        attempt = start.attempt if start else None
                    stored_link = store_link(request.user, instance, position, graded, attempt, form.marked(),
                                             form.answers())
    marked = set(form.marked()) if phase != "start" and form.is_bound else set()
    before = link.original.values
    rows = []
    for spec in link.result.specs:
        rows.append({"key": spec.key, "label": spec.label, "unit": spec.unit, "spec": spec,
                     "was": (shown_value(spec.key, instance.family, before[spec.key], spec.unit) if spec.key in before
                             else "—"),
                     "marked": spec.key in marked, "field": form[f"value-{spec.key}"],
                     "mark": next((m for m in graded.marks if m.key == spec.key), None) if graded else None,
                     "value": next((v for v in graded.values if v.key == spec.key), None) if graded else None})
    has_next = position + 1 < len(links)
    return {"link": link, "position": position, "number": position + 1, "total": len(links), "phase": phase,
            "form": form, "rows": rows, "graded": graded, "stored": stored_link, "owner": owner,
            "url": followup_url(instance, problem_url), "problem": instance, "has_next": has_next,
            "carry": carry, "next_carry": sign_carry(graded.own) if graded else "", "marked": sorted(marked)}


def _unreadable(form: FollowUpForm, link) -> dict[str, str]:
    """Step key → the parser's message for each marked step whose typed value cannot be read (nothing is
    graded then, as on the drill page)."""
    units = {spec.key: spec.unit for spec in link.result.specs}
    return {key: message for key, text in form.answers().items() if (message := refusal(text, units[key]))}


def followup_page(request: HttpRequest, instance: ProblemInstance) -> HttpResponse:
    """The follow-up page (or, for htmx, its section) of ``instance``."""
    context = followup_context(request, instance, _position(request))
    if context is None:
        raise Http404("This problem has no such follow-up.")
    if request.htmx:
        return render(request, "drills/followup.html#section", {"fu": context})
    return render(request, "drills/followup.html", {"fu": context, "problem": instance,
                                                    "family": instance.family_info})
