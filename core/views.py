"""Site-wide views that belong to no app: the favicon, the health check and the benchmark floor."""

import secrets

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import DatabaseError, connection, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe


@require_safe
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """``/favicon.ico``, asked for by browsers and feed readers that ignore ``<link rel="icon">``: the SVG icon.

    Resolved per request, so it names the hashed file once ``collectstatic`` has run.
    """
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when the default database reads (``SELECT 1``) and takes a write, 503 otherwise.

    The write is a session row inserted inside a transaction that is then rolled back: a read-only or
    full database fails it (``"database": "read-only"``) while every page that only reads still works.
    """
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        return JsonResponse({"status": "error", "database": "unreachable"}, status=503)
    try:
        with transaction.atomic():
            Session.objects.create(session_key="healthz-write-check-" + secrets.token_hex(8), session_data="",
                                   expire_date=timezone.now())
            transaction.set_rollback(True)
    except DatabaseError:
        return JsonResponse({"status": "error", "database": "read-only"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})


@require_safe
def floor(request: HttpRequest) -> HttpResponse:
    """The benchmark floor: a static template rendered through the full middleware stack.

    ``bench/bench_http.py`` divides every page's throughput by this one's. It
    answers only when the ``BENCH_FLOOR`` setting (environment variable of the
    same name) is true, and is a 404 otherwise, so a production site does not
    grow a page nobody reads; it touches no model and shows nothing private.
    """
    if not settings.BENCH_FLOOR:
        raise Http404("The benchmark floor is off (BENCH_FLOOR=false).")
    return render(request, "bench/floor.html")


@require_POST
def floor_write(request: HttpRequest) -> HttpResponse:
    """The benchmark's write floor: what any write costs, whatever it saves -- one INSERT and its COMMIT.

    A POST through the full middleware stack (the session and its user, the CSRF check) that inserts one
    row in a transaction and answers a fixed fragment; ``bench/bench_http.py`` compares the graded
    submission with it. The row is a session row that has already expired (``manage.py clearsessions``
    deletes it; nobody can sign in with it), so the floor needs no table of its own. Like :func:`floor`,
    a 404 unless the ``BENCH_FLOOR`` setting is true, and signed-in visitors only (a 404 for anyone else,
    like the page it stands for).
    """
    if not settings.BENCH_FLOOR or not request.user.is_authenticated:
        raise Http404("The benchmark floor is off (BENCH_FLOOR=false).")
    with transaction.atomic():
        Session.objects.create(session_key="floor-write-" + secrets.token_hex(14), session_data="",
                               expire_date=timezone.now())
    return render(request, "bench/floor_write.html")
