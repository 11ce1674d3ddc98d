"""History and caches with htmx: the same address answers a whole page or a fragment, and must never mix them up.

A view answers a fragment when ``request.htmx`` (the ``HX-Request`` header) and a
whole page otherwise, at the same address. Two things then go wrong without help:

- **Caches.** The browser's HTTP cache keys on the address alone unless told
  otherwise: after a filter swap pushed ``/bank/?topic=x`` (a fragment), Back from
  another page could show that cached fragment, with no layout. Every response
  therefore says ``Vary: HX-Request, HX-History-Restore-Request``.
- **History restores.** When htmx goes Back to an entry it has no snapshot of, it
  asks the server again with ``HX-Request: true`` and
  ``HX-History-Restore-Request: true`` and swaps what comes back for the whole
  ``<body>``. Such a request must get the whole page: the middleware removes the
  htmx request headers from it before any view looks, so ``request.htmx`` is false.

Sources: the htmx documentation ("Caching", "History Support"), htmx 2's
``loadHistoryFromServer``.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

# The headers htmx adds to a request it makes; a history restore is answered as if none had been sent.
_HTMX_REQUEST_HEADERS = ("HTTP_HX_REQUEST", "HTTP_HX_TARGET", "HTTP_HX_TRIGGER", "HTTP_HX_TRIGGER_NAME",
                         "HTTP_HX_BOOSTED", "HTTP_HX_PROMPT")


class HtmxHistoryMiddleware:
    """Answer htmx history restores with whole pages, and make every response vary on the htmx headers."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.META.get("HTTP_HX_HISTORY_RESTORE_REQUEST") == "true":
            for key in _HTMX_REQUEST_HEADERS:
                request.META.pop(key, None)
            request.__dict__.pop("headers", None)  # HttpRequest.headers is cached from META on first use
        response = self.get_response(request)
        patch_vary_headers(response, ("HX-Request", "HX-History-Restore-Request"))
        return response
