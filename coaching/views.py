"""Coach and candidate pages of coaching: thin adapters over :mod:`coaching.services`, :mod:`coaching.dashboard`
and :mod:`coaching.candidate_report`.

Coach pages answer 302 to the login page when logged out, 403 to a logged-in
non-coach, and 404 for another coach's objects or a candidate who is not in
one of the coach's cohorts. Any table is exported as CSV with ``?export=<name>``.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.roles import oversees_all
from calculators.models import Calibration
from drills.bank.services import item_title
from drills.models import Attempt, BankItem, ReviewLog

from . import candidate_report, dashboard, dashboard_cache, services
from .access import can_see_candidate, candidates_of, coach_required, cohorts_of
from .forms import AddItemForm, AddRoundForm, AddTemplateForm, AssignForm, QuestionForm, SetForm, add_form_for
from .models import Assignment, QuestionSet, SetEntry, SharedCalibration
from .services import CoachingError
from .visibility import hidden_work


def _tables_response(request: HttpRequest, tables, template: str, context: dict, about: str = "") -> HttpResponse:
    """Render the page, or one of its tables as CSV when ``?export=<name>`` asks for it.

    ``about`` names what the page is about in the file's name ("demo" gives ``demo-attempts.csv``), so the
    exports of two candidates or two assignments do not overwrite each other in a downloads folder.
    """
    wanted = request.GET.get("export")
    if wanted:
        table = next((t for t in tables if t.name == wanted), None)
        if table is None:
            raise Http404("No such table on this page.")
        response = HttpResponse(table.csv(), content_type="text/csv; charset=utf-8")
        name = "-".join(part for part in (slugify(about), table.name) if part)
        response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        return response
    return render(request, template, {**context, "tables": tables})


# --- the dashboard and drill-ins ----------------------------------------------------------------


def dashboard_poll_s() -> int:
    """Seconds (at least 1) between two refreshes of the open dashboard's tables: ``COACH_DASHBOARD_POLL_S``.

    Read per request, not at import, so a test can shorten it with the ``settings`` fixture.
    """
    return max(1, int(settings.COACH_DASHBOARD_POLL_S))


@coach_required
@require_safe
def dashboard_page(request: HttpRequest) -> HttpResponse:
    """Every cohort's completion, the candidates' summary, and who is falling behind (its tables rendered once
    per change, :mod:`coaching.dashboard_cache`; an export builds them afresh)."""
    if request.GET.get("export"):
        return _tables_response(request, dashboard.overview(request.user).tables, "coaching/dashboard.html", {})
    return _dashboard(request)


def _dashboard(request: HttpRequest, typed_name: str = "", status: int = 200) -> HttpResponse:
    """The dashboard page; ``typed_name`` goes back into the new cohort's box (a refused name, kept)."""
    return render(request, "coaching/dashboard.html", {
        "view": dashboard_cache.cached_dashboard(request.user), "poll_s": dashboard_poll_s(),
        "typed_name": typed_name}, status=status)


@coach_required
@require_safe
@never_cache
def dashboard_tables(request: HttpRequest) -> HttpResponse:
    """The dashboard's tables alone, polled by the open dashboard (htmx) so progress shows without a reload."""
    return render(request, "coaching/dashboard.html#tables", {"view": dashboard_cache.cached_dashboard(request.user),
                                                              "poll_s": dashboard_poll_s()})


@coach_required
@require_safe
def cohort_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One cohort: members, the invitation link, completion and the candidates' summary."""
    cohort = get_object_or_404(cohorts_of(request.user).prefetch_related("memberships__candidate"), pk=pk)
    view = dashboard.overview(request.user, cohort=cohort)
    invitation = cohort.invitations.filter(revoked=False).first()
    return _tables_response(request, view.tables, "coaching/cohort.html", {
        "cohort": cohort, "view": view, "invitation": invitation,
        # The coach's calibrations, each with whether it is shared here: one query (issue 32).
        "my_calibrations": Calibration.objects.owned_by(request.user).annotate(shared_here=Exists(
            SharedCalibration.objects.filter(cohort=cohort, calibration=OuterRef("pk")))),
        "invite_url": request.build_absolute_uri(invitation.get_absolute_url()) if invitation else ""},
        about=cohort.name)


@coach_required
@require_POST
def cohort_new(request: HttpRequest) -> HttpResponse:
    """Create a cohort with an invitation link (POST); a bad name is a message on the dashboard."""
    try:
        cohort = services.create_cohort(request.user, request.POST.get("name", ""), with_invitation=True)
    except CoachingError as error:
        messages.error(request, str(error))
        # The dashboard again with the refused name in its box, so nothing typed is lost; never in the address
        # (a long or private name would land in the history and the server's logs).
        return _dashboard(request, request.POST.get("name", ""), status=400)
    return redirect(cohort)


@coach_required
@require_POST
def cohort_invite(request: HttpRequest, pk: int) -> HttpResponse:
    """A fresh invitation link (the old ones stop working)."""
    cohort = get_object_or_404(cohorts_of(request.user), pk=pk)
    cohort.invitations.update(revoked=True)
    services.invite(cohort)
    messages.success(request, "A new invitation link is ready; the old one no longer works.")
    return redirect(cohort)


@coach_required
@require_POST
def cohort_remove(request: HttpRequest, pk: int, user_pk: int) -> HttpResponse:
    """Remove a candidate from one of the coach's cohorts (POST); 404 when they are not in it."""
    cohort = get_object_or_404(cohorts_of(request.user), pk=pk)
    if not services.leave_cohort(cohort, user_pk):
        raise Http404("Not a member of this cohort.")
    messages.success(request, "Removed from the cohort.")
    return redirect(cohort)


def _visible_candidate(request: HttpRequest, pk: int):
    if not can_see_candidate(request.user, pk):
        raise Http404("No such candidate in your cohorts.")
    return get_object_or_404(get_user_model(), pk=pk)


@coach_required
@require_safe
def candidate_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One candidate: assignments, ladder steps, misconceptions, recent attempts and answers."""
    person = _visible_candidate(request, pk)
    return _tables_response(request, candidate_report.candidate_tables(request.user, person), "coaching/candidate.html",
                            {"person": person}, about=person.get_username())


@coach_required
@require_safe
def attempt_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Exactly what the candidate typed for each step, what was read, and how it was graded."""
    attempt = get_object_or_404(Attempt.objects.select_related("problem", "user"), pk=pk)
    _visible_candidate(request, attempt.user_id)
    hidden = hidden_work(request.user, [attempt.user_id])
    if attempt.pk in hidden.attempt_ids:
        raise Http404("Not work this coach may see.")
    steps = list(attempt.steps.all())
    return render(request, "coaching/attempt.html", {"attempt": attempt, "steps": steps,
                                                     "counted": candidate_report.counted_attempt(attempt, hidden),
                                                     "inputs": sorted(attempt.problem.inputs.items())})


@coach_required
@require_safe
def review_page(request: HttpRequest, pk: int) -> HttpResponse:
    """An open answer: what was written, which rubric points were ticked, the rating."""
    log = get_object_or_404(ReviewLog.objects.select_related("item", "user"), pk=pk)
    _visible_candidate(request, log.user_id)
    if log.pk in hidden_work(request.user, [log.user_id]).review_ids:
        raise Http404("Not work this coach may see.")
    rubric = [(i, point, i in (log.rubric_ticked or [])) for i, point in enumerate((log.item.rubric if log.item
                                                                                   else None) or [])]
    return render(request, "coaching/review.html", {"log": log, "rubric": rubric})


@coach_required
@require_safe
def assignment_page(request: HttpRequest, pk: int) -> HttpResponse:
    """Score and time per item and per candidate of one assignment."""
    found = Assignment.objects.select_related("question_set", "cohort", "candidate").prefetch_related(
        "question_set__entries__item", "question_set__entries__round_template")
    if not oversees_all(request.user):
        found = found.filter(coach=request.user)
    assignment = get_object_or_404(found, pk=pk)
    return _tables_response(request, dashboard.assignment_tables(assignment, request.user),
                            "coaching/assignment.html", {"assignment": assignment}, about=f"assignment {assignment.pk}")


# --- authoring ------------------------------------------------------------------------------------


@coach_required
@require_safe
def questions(request: HttpRequest) -> HttpResponse:
    """The coach's own questions, and bank items to copy."""
    mine = BankItem.objects.filter(author=request.user).order_by("-updated_at")
    query = request.GET.get("q", "").strip()[:100]
    bank = BankItem.objects.published().order_by("kind", "slug")
    if query:
        bank = bank.filter(search_text__icontains=query)
    return render(request, "coaching/questions.html", {
        "mine": [(item, item_title(item)) for item in mine], "query": query,
        "bank": [(item, item_title(item)) for item in bank[:40]]})


def _question_form_page(request: HttpRequest, item: BankItem | None) -> HttpResponse:
    form = QuestionForm(request.POST or None, initial=QuestionForm.initial_for(item) if item else None)
    if request.method == "POST" and form.is_valid():
        saved = services.save_question(request.user, form.cleaned_data, item)
        messages.success(request, "Saved. Only you and your cohorts see it until staff publish it.")
        return redirect("coaching:question_edit", saved.pk)
    data = form.data if form.is_bound else form.initial
    return render(request, "coaching/question_form.html", {
        "form": form, "item": item, "title": item_title(item, 90) if item else "",
        "preview_prompt": services.preview_html(data.get("prompt", "")),
        "preview_answer": services.preview_html(data.get("model_answer", ""))})


@coach_required
@require_http_methods(["GET", "HEAD", "POST"])
def question_new(request: HttpRequest) -> HttpResponse:
    """The form for a new authored question."""
    return _question_form_page(request, None)


@coach_required
@require_http_methods(["GET", "HEAD", "POST"])
def question_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """The form for one of the coach's questions (any question for a superuser)."""
    found = BankItem.objects.all() if oversees_all(request.user) else BankItem.objects.filter(author=request.user)
    return _question_form_page(request, get_object_or_404(found, pk=pk))


@coach_required
@require_POST
def question_preview(request: HttpRequest) -> HttpResponse:
    """The sanitised HTML of the posted Markdown (``field`` names which), for the live preview."""
    field = request.POST.get("field", "prompt")
    if field not in ("prompt", "model_answer"):
        field = "prompt"
    return HttpResponse(services.preview_html(request.POST.get(field, "")[:20_000]))


@coach_required
@require_POST
def question_copy(request: HttpRequest) -> HttpResponse:
    """Copy a visible bank item as the coach's own unpublished question and open it for editing (POST)."""
    item = get_object_or_404(BankItem.objects.visible_to(request.user), slug=request.POST.get("item", ""))
    copy = services.copy_item(request.user, item)
    messages.success(request, f"Copied {item.slug}; edit your copy below.")
    return redirect("coaching:question_edit", copy.pk)


# --- sets and assigning ---------------------------------------------------------------------------


def _own_set(request: HttpRequest, pk: int) -> QuestionSet:
    found = QuestionSet.objects.all() if oversees_all(request.user) else QuestionSet.objects.filter(coach=request.user)
    return get_object_or_404(found, pk=pk)


@coach_required
@require_safe
def sets(request: HttpRequest) -> HttpResponse:
    """The coach's question sets, with the form for a new one."""
    return render(request, "coaching/sets.html", {"sets": QuestionSet.objects.filter(coach=request.user)
                  .prefetch_related("entries", "assignments"), "form": SetForm()})


@coach_required
@require_http_methods(["GET", "HEAD", "POST"])
def set_new(request: HttpRequest) -> HttpResponse:
    """Create a question set (POST); a form error re-shows the sets page with what was typed."""
    form = SetForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        created = QuestionSet.objects.create(coach=request.user, **form.cleaned_data)
        return redirect(created)
    return render(request, "coaching/sets.html", {"sets": QuestionSet.objects.filter(coach=request.user),
                                                  "form": form})


def _set_page(request: HttpRequest, question_set: QuestionSet, form: SetForm | None = None,
              bound_add_form=None, status: int = 200) -> HttpResponse:
    """The set page; ``bound_add_form`` replaces its unbound twin so a rejected add keeps what was typed."""
    if form is None:
        form = SetForm(initial={"title": question_set.title, "instructions": question_set.instructions})
    add_forms = {"add_item": AddItemForm(request.user), "add_template": AddTemplateForm(request.user),
                 "add_round": AddRoundForm(request.user)}
    for name, unbound in add_forms.items():
        if bound_add_form is not None and type(bound_add_form) is type(unbound):
            add_forms[name] = bound_add_form
    typed = add_forms["add_item"].data.get("item", "") if add_forms["add_item"].is_bound else ""
    return render(request, "coaching/set.html", {
        "set": question_set, "form": form, **add_forms, "options": add_forms["add_item"].options(typed),
        "entries": question_set.entries.select_related("item", "round_template"),
        "assignments": question_set.assignments.select_related("cohort", "candidate")}, status=status)


@coach_required
@require_http_methods(["GET", "HEAD", "POST"])
def set_page(request: HttpRequest, pk: int) -> HttpResponse:
    """A set: its ordered entries, forms to add bank items, problem templates and round presets."""
    question_set = _own_set(request, pk)
    form = SetForm(request.POST or None, initial={"title": question_set.title,
                                                  "instructions": question_set.instructions})
    if request.method == "POST" and form.is_valid():
        for name, value in form.cleaned_data.items():
            setattr(question_set, name, value)
        question_set.updated_at = timezone.now()
        question_set.save(update_fields=["updated_at", *form.cleaned_data])
        return redirect(question_set)
    return _set_page(request, question_set, form=form)


@coach_required
@require_POST
def set_add(request: HttpRequest, pk: int) -> HttpResponse:
    """Add a bank item, a problem template (with fixed inputs) or a round preset to the set.

    A rejected add re-renders the set page with that form bound, so the chosen option and the typed text
    stay and the error sits beside its field (a form error, not a failed request: status 200); a redirect
    would lose both.
    """
    question_set = _own_set(request, pk)
    add_form = add_form_for(request.POST, request.user)
    if not add_form.is_valid():
        return _set_page(request, question_set, bound_add_form=add_form)
    data = add_form.cleaned_data
    if "round" in data:
        services.add_entry(question_set, round_template=data["round"])
    else:
        try:
            services.add_entry(question_set, item=data["item"], fixed_inputs=data.get("fixed_inputs") or {},
                               followups=data.get("followups") or 0)
        except CoachingError as error:
            add_form.add_error("item", str(error))
            return _set_page(request, question_set, bound_add_form=add_form)
        typed = str(request.POST.get("fixed_context", "")).strip()
        if data.get("fixed_context") is not None and typed != str(data["fixed_context"]):
            # "8k" and "2^13" are read as the calculators read them: say what was read.
            messages.info(request, f"Context limit: “{typed}” read as {data['fixed_context']:,} tokens.")
    return redirect(question_set)


@coach_required
@require_safe
def item_search(request: HttpRequest) -> HttpResponse:
    """The bank item box's suggestions for what was typed (``item``): the ``<option>`` list htmx swaps into
    the box's ``<datalist>``, searched by slug, title and text among the items the coach may see."""
    form = AddItemForm(request.user)
    return render(request, "coaching/set.html#item-options",
                  {"options": form.options(request.GET.get("item", ""))})


def _own_entry(request: HttpRequest, pk: int, entry_pk: int) -> SetEntry:
    return get_object_or_404(SetEntry, pk=entry_pk, question_set=_own_set(request, pk))


@coach_required
@require_POST
def entry_remove(request: HttpRequest, pk: int, entry_pk: int) -> HttpResponse:
    """Remove an entry from one of the coach's sets (POST)."""
    entry = _own_entry(request, pk, entry_pk)
    try:
        services.remove_entry(entry)
    except CoachingError as error:
        messages.error(request, str(error))
    return redirect(entry.question_set)


@coach_required
@require_POST
def entry_move(request: HttpRequest, pk: int, entry_pk: int) -> HttpResponse:
    """Move an entry of one of the coach's sets up or down (POST ``direction``)."""
    entry = _own_entry(request, pk, entry_pk)
    services.move_entry(entry, -1 if request.POST.get("direction") == "up" else 1)
    return redirect(entry.question_set)


@coach_required
@require_http_methods(["GET", "HEAD", "POST"])
def set_assign(request: HttpRequest, pk: int) -> HttpResponse:
    """Assign the set to a cohort or one candidate, with a due time and an optional time limit."""
    question_set = _own_set(request, pk)
    cohorts = list(cohorts_of(request.user))
    people = list(candidates_of(request.user))
    form = AssignForm(cohorts, people, request.POST or None)
    if request.method == "POST" and form.is_valid():
        kind, _, ident = form.cleaned_data["target"].partition(":")
        target = ({"cohort": next(c for c in cohorts if str(c.pk) == ident)} if kind == "cohort"
                  else {"candidate": next(u for u in people if str(u.pk) == ident)})
        limit = form.cleaned_data.get("time_limit_min")
        try:
            assignment = services.assign(question_set, request.user, due_at=form.cleaned_data["due_at"],
                                         time_limit_s=limit * 60 if limit else None, **target)
        except CoachingError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Assigned to {assignment.target_label}; they will get an e-mail.")
            return redirect(assignment)
    return render(request, "coaching/assign.html", {"set": question_set, "form": form})
