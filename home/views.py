"""The home page: the landing page for a visitor, the candidate's day for everyone signed in, its first-run steps."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from accounts.timezones import remember_time_zone, set_time_zone, zone_label, zone_names
from drills.models import ReviewSettings
from home.overview import home_for
from runbook.models import ReadingPath


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """The landing page for a visitor; a signed-in candidate's day (:func:`home.overview.home_for`) otherwise."""
    if request.user.is_authenticated:
        return render(request, "home_user.html", {"home": home_for(request.user)})
    return render(request, "home.html")


@login_required
@require_POST
def start(request: HttpRequest) -> HttpResponse:
    """The first-run steps on the home page: keep the browser's time zone (``time_zone``) or a path (``path``).

    An unknown zone or path changes nothing and says so; either way the candidate goes back home.
    """
    zone = request.POST.get("time_zone")
    path = request.POST.get("path")
    if zone is not None:
        if zone in zone_names():
            set_time_zone(request.user, zone)
            remember_time_zone(request, zone)
            messages.success(request, f"Time zone set to {zone_label(zone)}: your day turns at 04:00 there.")
        else:
            messages.error(request, "That time zone is not one we know: choose yours on the review settings page.")
    if path is not None:
        chosen = ReadingPath.objects.filter(slug=path).first()
        if chosen is not None:
            row = ReviewSettings.stored_for(request.user)
            row.reading_path = chosen.slug
            row.save(update_fields=["reading_path"])
            messages.success(request, f"Following {chosen.title.lower()}.")
        else:
            messages.error(request, "No such path: choose one of those listed.")
    return redirect("home")
