"""The candidate's side of coaching: assignments, starting an entry or a timed one, accepting an invitation."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from . import services
from .access import is_coach
from .models import Assignment, SetEntry
from .services import CoachingError


@login_required
@require_safe
def my_assignments(request: HttpRequest) -> HttpResponse:
    """The candidate's assignments with their status."""
    found = list(services.assignments_for(request.user))
    progress = services.progress_for([(a, request.user) for a in found])
    rows = [progress[(a.pk, request.user.pk)] for a in found]
    return render(request, "coaching/my_assignments.html", {"rows": rows, "now": timezone.now()})


def _my_assignment(request: HttpRequest, pk: int) -> Assignment:
    try:
        return services.assignment_for(request.user, pk)
    except Assignment.DoesNotExist:
        raise Http404("No such assignment for you.") from None


@login_required
@require_safe
def my_assignment(request: HttpRequest, pk: int) -> HttpResponse:
    """A candidate's view of one of their assignments: its instructions and their progress on each entry."""
    assignment = _my_assignment(request, pk)
    progress = services.progress_for([(assignment, request.user)])[(assignment.pk, request.user.pk)]
    return render(request, "coaching/my_assignment.html", {
        "assignment": assignment, "progress": progress,
        "instructions": services.preview_html(assignment.question_set.instructions)})


@login_required
@require_POST
def start_entry(request: HttpRequest, pk: int, entry_pk: int) -> HttpResponse:
    """Start (or resume) one entry of an assignment: its problem, round or question (POST)."""
    assignment = _my_assignment(request, pk)
    entry = get_object_or_404(SetEntry, pk=entry_pk, question_set_id=assignment.question_set_id)
    try:
        return redirect(services.start_entry(assignment, request.user, entry))
    except CoachingError as error:
        messages.error(request, str(error))
        return redirect("coaching:my_assignment", assignment.pk)


@login_required
@require_POST
def start_timed(request: HttpRequest, pk: int) -> HttpResponse:
    """Start (or resume) an assignment with a time limit as one timed round (POST)."""
    assignment = _my_assignment(request, pk)
    try:
        return redirect(services.start_timed(assignment, request.user))
    except CoachingError as error:
        messages.error(request, str(error))
        return redirect("coaching:my_assignment", assignment.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """Accept an invitation: join the coach's cohort (the coach then sees your work on their assignments)."""
    found = services.live_invitation(token)
    if found is None:
        raise Http404("This invitation link is not valid (any more).")
    if request.method == "POST":
        try:
            services.accept_invitation(found, request.user)
        except CoachingError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, f"You joined {found.cohort.name}, coached by {found.cohort.coach}.")
            return redirect("coaching:my_assignments")
    member = found.cohort.memberships.filter(candidate=request.user).exists()
    return render(request, "coaching/invitation.html", {"invitation": found, "member": member,
                                                        "own": found.cohort.coach_id == request.user.pk,
                                                        "coach_account": is_coach(request.user)})


def invitation_login_note(token: str) -> str:
    """What the login page says when an invitation sent the visitor there (``next``): the cohort and the coach
    who invited them; ``""`` for a revoked, expired or unknown token (nothing about it is told)."""
    found = services.live_invitation(token)
    if found is None:
        return ""
    return f"{found.cohort.coach} invited you to join the cohort “{found.cohort.name}”. Log in, or create an " \
           "account, to accept."


invitation.login_note = invitation_login_note  # type: ignore[attr-defined]  # read by accounts.views.next_note
