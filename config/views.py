"""Site-wide views that belong to no app: the landing page and the health check."""

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """Render the landing page: what the product is and where to start."""
    return render(request, "home.html")


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 when ``SELECT 1`` works on the default database, 503 otherwise."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        return JsonResponse({"status": "error", "database": "unreachable"}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
