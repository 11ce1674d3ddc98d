"""Filters of the server log (``LOGGING`` in config/settings.py)."""

from __future__ import annotations

import logging


class RefusalWithoutTraceback(logging.Filter):
    """A refused request (a 4xx: 403 "This page is for coaches.", 404) is one line, without its traceback.

    Django's ``django.request`` logger passes the exception it answered with a 403 or 404 as ``exc_info``,
    so every refusal wrote a full traceback. The record keeps its message (``Forbidden (Permission denied):
    /coach/``) and its ``status_code``; a 5xx (a server error) keeps its traceback. Never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Clear ``exc_info`` of a record whose ``status_code`` is below 500; always ``True``."""
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
