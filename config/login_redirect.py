"""A request that needs a log-in, sent from a page whose session has ended, leads back to that page.

``login_required`` answers any request without a session by a redirect to the log-in page with
``next`` set to the address asked for. Two kinds of request would land somewhere useless:

- **htmx requests** ("Reveal the model answer", a recompute, a poll): htmx follows the redirect
  inside the XMLHttpRequest and swaps the whole log-in page into the card, and ``next`` names the
  endpoint, often POST-only, so logging in there ends on a 405. They get ``HX-Redirect`` instead (a
  full-page load of the log-in page) with ``next`` set to the page the user was on (``HX-Current-URL``),
  and ``HX-Trigger: login-required``, the event on which ``static/js/keep-typed.js`` keeps what was
  typed in the page's fields (sessionStorage) to put it back once the user is logged in again.
- **Plain form posts** (the same buttons without JavaScript): ``next`` becomes the page the form was
  on (the same-origin ``Referer``), or nothing (the home page) when it cannot be told.

A third kind fails before any log-in check: an htmx request whose CSRF token went stale (the cookies were
cleared, or a log-in elsewhere rotated the token). :func:`csrf_failure` (``CSRF_FAILURE_VIEW``) still refuses
it with a 403, and tells htmx to keep what was typed and load the page again, which brings a fresh token (and
the log-in page, with ``next`` the page, if the session is gone too).

Sources: Django's ``redirect_to_login`` and ``CSRF_FAILURE_VIEW``; htmx's response headers (``HX-Redirect``,
``HX-Trigger``), which htmx 2 follows whatever the status.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.csrf import csrf_failure as django_csrf_failure
from django_htmx.http import HttpResponseClientRedirect

# The event htmx fires (from the HX-Trigger header) just before it follows HX-Redirect to the log-in page.
LOGIN_REQUIRED_EVENT = "login-required"


def _login_redirect_next(response: HttpResponse) -> str | None:
    """The ``next`` of a redirect to the log-in page (``""`` when it has none); ``None`` for any other response."""
    if response.status_code not in (301, 302, 303, 307, 308) or "Location" not in response:
        return None
    location = urlsplit(response["Location"])
    if location.path != urlsplit(resolve_url(settings.LOGIN_URL)).path:
        return None
    return parse_qs(location.query).get("next", [""])[0]


def _same_site_path(request: HttpRequest, url: str | None) -> str | None:
    """``url``'s path and query when it is an address on this site, else ``None``."""
    if not url or not url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()},
                                                      require_https=request.is_secure()):
        return None
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


class LoginRedirectMiddleware:
    """Send a log-in that interrupts an htmx request or a form post back to the page, not to the endpoint."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if _login_redirect_next(response) is None:
            return response
        if getattr(request, "htmx", False):
            page = _same_site_path(request, request.htmx.current_url)
            login = redirect_to_login(page or resolve_url(settings.LOGIN_REDIRECT_URL))
            redirect = HttpResponseClientRedirect(login["Location"])
            redirect["HX-Trigger"] = LOGIN_REQUIRED_EVENT
            return redirect
        if request.method not in ("GET", "HEAD"):
            page = _same_site_path(request, request.headers.get("Referer"))
            return redirect_to_login(page or resolve_url(settings.LOGIN_REDIRECT_URL))
        return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's 403 for a request without a valid CSRF token; for htmx, also reload the page it came from.

    The 403 keeps its status and body; an htmx request also gets ``HX-Trigger: login-required`` (what was
    typed is kept) and ``HX-Redirect`` to its page (``HX-Current-URL`` on this site, else the home page).
    """
    response = django_csrf_failure(request, reason=reason)
    if request.headers.get("HX-Request") == "true":
        page = _same_site_path(request, request.headers.get("HX-Current-URL"))
        response["HX-Redirect"] = page or resolve_url(settings.LOGIN_REDIRECT_URL)
        response["HX-Trigger"] = LOGIN_REQUIRED_EVENT
    return response
