"""The site's navigation, as data: the main sections and the reference strip under them."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest


@dataclass(frozen=True)
class NavLink:
    """One link: its label, where it goes, the path prefix that marks it active, and who sees it."""

    label: str
    href: str
    prefix: str
    members_only: bool = False


MAIN = (
    NavLink("Runbook", "/runbook/", "/runbook/"),
    NavLink("Calculators", "/calculators/", "/calculators/"),
    NavLink("Simulator", "/simulator/", "/simulator/"),
    NavLink("Lab", "/lab/", "/lab/"),
    NavLink("Drills", "/drills/", "/drills/"),
    NavLink("Review", "/review/", "/review/", members_only=True),
    NavLink("Rounds", "/rounds/", "/rounds/", members_only=True),
)

# Reference and tools, one line under the main bar, so the main bar never wraps.
STRIP = (
    NavLink("Glossary", "/glossary/", "/glossary/"),
    NavLink("Errata", "/errata/", "/errata/"),
    NavLink("Reading list", "/reading/", "/reading/"),
    NavLink("Question bank", "/bank/", "/bank/"),
    NavLink("Progress", "/progress/", "/progress/", members_only=True),
)


def _visible(links, request: HttpRequest):
    signed_in = request.user.is_authenticated if hasattr(request, "user") else False
    return [(link, request.path.startswith(link.prefix)) for link in links
            if signed_in or not link.members_only]


def navigation(request: HttpRequest) -> dict:
    """Context processor: ``nav_main`` and ``nav_strip`` as (link, is_active) pairs."""
    return {"nav_main": _visible(MAIN, request), "nav_strip": _visible(STRIP, request)}
