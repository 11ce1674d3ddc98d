"""A person's own data: the overview (cohorts to leave), the full export and the account's deletion."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from coaching.models import Cohort, Membership
from coaching.services import leave_cohort
from home import data
from home.forms import DeleteAccountForm


@login_required
@require_safe
def overview(request: HttpRequest) -> HttpResponse:
    """The cohorts one is in (each with a button to leave it), the export and the deletion."""
    memberships = Membership.objects.filter(candidate=request.user).select_related("cohort", "cohort__coach")
    return render(request, "accounts/overview.html", {"memberships": memberships, "tables": data.TABLES})


@login_required
@never_cache
@require_safe
def export(request: HttpRequest) -> HttpResponse:
    """Everything the user did, as JSON and CSV in one zip download."""
    response = HttpResponse(data.export_zip(request.user), content_type="application/zip")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = f'attachment; filename="llm-serving-prep-{request.user.pk}-{stamp}.zip"'
    return response


@login_required
@require_POST
def leave(request: HttpRequest, pk: int) -> HttpResponse:
    """Leave one of one's cohorts (a 404 for any other cohort)."""
    # Looked up by the cohort's own pk (Django answers "no row" for a pk past the column's range).
    cohort = Cohort.objects.filter(pk=pk, memberships__candidate=request.user).first()
    if cohort is None:
        raise Http404("You are not in that cohort.")
    leave_cohort(cohort, request.user.pk)
    messages.success(request, f"You have left {cohort.name}; its coach no longer sees your work.")
    return redirect("account:overview")


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def delete(request: HttpRequest) -> HttpResponse:
    """Say what deleting the account removes and keeps (and, to a coach, what becomes of their cohorts); delete it
    on a POST with the password, handing the cohorts to the coach named or closing them."""
    form = DeleteAccountForm(request.user, request.POST or None)
    if request.method == "POST" and form.is_valid():
        data.delete_account(request.user, successor=form.successor_user)
        logout(request)
        messages.success(request, "Your account and everything listed as deleted are gone.")
        return redirect("home")
    cohorts = list(Cohort.objects.filter(coach=request.user).annotate(size=Count("memberships")))
    return render(request, "accounts/delete.html", {"form": form, "deleted": data.DELETED, "kept": data.KEPT,
                                                    "coaching": data.COACHING, "cohorts": cohorts})
