"""Site-wide request middleware of the project."""

from __future__ import annotations

from django.http import Http404, HttpRequest, QueryDict

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


# What a NUL becomes: visible, and refused by the answer parser like the NUL was, so nothing changes meaning.
REPLACEMENT = "\ufffd"


def without_nul(data: QueryDict) -> QueryDict:
    """``data`` with every NUL in its keys and values replaced by U+FFFD (the same object when it has none)."""
    if not any("\x00" in key or any("\x00" in value for value in values) for key, values in data.lists()):
        return data
    clean = QueryDict(mutable=True, encoding=data.encoding)
    for key, values in data.lists():
        clean.setlist(key.replace("\x00", REPLACEMENT), [value.replace("\x00", REPLACEMENT) for value in values])
    clean._mutable = False
    return clean


class NulMiddleware:
    r"""Replace NUL characters in form data and query strings by U+FFFD before a view sees them.

    PostgreSQL refuses NUL in text (psycopg raises ``DataError`` for a string
    parameter holding one; ``jsonb`` refuses ``\\u0000``), so a NUL that a form
    copied into a lookup or a save was a 500 — whatever the view. Nobody types
    one; replacing it keeps everything the user sent (a 400 would lose it) and
    keeps it visibly wrong: "53\\x00" still reads as an unreadable answer, not
    as 53. A NUL in a path argument (``/invite/%00/``) is a 404. CSRF-exempt
    views (the JSON API) read their own body and are left alone; this runs
    after ``CsrfViewMiddleware``, which has already parsed the form.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        """Clean ``request.GET`` and a form ``request.POST``; raise ``Http404`` for a NUL in the path arguments."""
        if getattr(view_func, "csrf_exempt", False):
            return None
        if any("\x00" in str(value) for value in (*view_args, *view_kwargs.values())):
            raise Http404("No page has a NUL character in its address.")
        request.GET = without_nul(request.GET)
        if request.method == "POST" and request.content_type in FORM_TYPES:
            request.POST = without_nul(request.POST)
        return None


class MethodNotAllowedPageMiddleware:
    """An empty 405 (a form's address opened with GET: reloaded, bookmarked, typed) gets ``templates/405.html``.

    Django's ``require_http_methods`` and class-based views answer ``HttpResponseNotAllowed`` with no body, which
    a browser shows as a blank page. The page keeps the status and the ``Allow`` header and links back to the
    page the visitor came from (the ``Referer``, if it is this site's) and to the home page. A 405 that has a
    body of its own (the JSON API's) is left as it is.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        response = self.get_response(request)
        if response.status_code != 405 or response.streaming or response.content:
            return response
        from django.shortcuts import render
        from django.utils.http import url_has_allowed_host_and_scheme

        referer = request.headers.get("Referer", "")
        back = referer if referer and url_has_allowed_host_and_scheme(
            referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()) else None
        page = render(request, "405.html", {"back": back}, status=405)
        page["Allow"] = response.get("Allow", "")
        return page


class SecurityHeadersMiddleware:
    """Add ``Content-Security-Policy`` and ``Permissions-Policy`` to every response.

    The values are the ``CONTENT_SECURITY_POLICY`` and ``PERMISSIONS_POLICY``
    settings (``config/settings.py``). The policy allows scripts, styles,
    fonts and fetches from the site itself only: no inline ``<script>``, no
    ``style`` attribute, no ``eval`` (htmx's injected indicator ``<style>`` is
    turned off in ``templates/base.html``, its indicator rules live in
    ``static/css/app.css``). A view that sets its own header keeps it.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        response = self.get_response(request)
        from django.conf import settings

        if settings.CONTENT_SECURITY_POLICY:
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        if settings.PERMISSIONS_POLICY:
            response.headers.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response


# SQLSTATEs of a database that cannot take writes: read-only transaction, insufficient resources, disk full.
UNWRITABLE_SQLSTATES = {"25006", "53000", "53100"}
UNWRITABLE_WORDS = ("readonly database", "read-only", "disk is full", "no space left on device")


def database_unwritable(error: BaseException) -> bool:
    """Whether ``error`` says the database cannot save right now (read-only, or its disk full).

    PostgreSQL says so by SQLSTATE (psycopg's error is the ``__cause__`` of Django's); SQLite only in
    its message ("attempt to write a readonly database", "database or disk is full").
    """
    from django.db import DatabaseError

    if not isinstance(error, DatabaseError):
        return False
    cause = error.__cause__
    if getattr(cause, "sqlstate", None) in UNWRITABLE_SQLSTATES:
        return True
    text = str(error).lower()
    return any(words in text for words in UNWRITABLE_WORDS)


# Form fields that are not something a person typed (tokens, versions, stamps), or must never be shown back.
NOT_TYPED = ("csrfmiddlewaretoken", "version", "started", "opened", "next", "confirm", "save", "blanks")

TWIN = "base-"
"""The prefix of a text box's hidden twin (``base-<name>``): what the box held when its page was shown, so the
server writes only the boxes a page changed (a round item's form, :func:`drills.rounds.services.typed`). A twin is
not typed text either."""


def typed_text(request: HttpRequest) -> list[tuple[str, str]]:
    """(field name, text) of what the POST carried that a person typed, for the "cannot save" page to show
    back: every non-blank value but passwords, keys and the form's own tokens, stamps and versions."""
    if request.method != "POST":
        return []
    return [(name, value) for name, values in request.POST.lists() for value in values
            if value.strip() and name not in NOT_TYPED and not name.startswith(TWIN)
            and not any(word in name for word in ("password", "key"))]


class DatabaseUnwritableMiddleware:
    """A database that cannot take writes answers a clear "cannot save right now" page (503), not a traceback.

    Pages that only read keep working; a write that fails because the database is read-only (a replica
    promoted late, a failover, ``default_transaction_read_only``) or out of disk gets the page
    ``templates/cannot_save.html`` with ``Retry-After: 60``; ``/healthz`` checks a write too
    (``core.views.healthz``). Any other database error is left to Django.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        """Render the 503 page for an unwritable database; ``None`` (Django's handling) otherwise."""
        if not database_unwritable(exception):
            return None
        import logging

        from django.shortcuts import render

        logging.getLogger(__name__).error("Database cannot save: %s", exception)
        response = render(request, "cannot_save.html", {"typed": typed_text(request)}, status=503)
        response["Retry-After"] = "60"
        return response
