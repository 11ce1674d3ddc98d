"""How django-axes names the account a login attempt was for (``AXES_USERNAME_CALLABLE``)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest

# axes stores the username in AccessAttempt.username, a varchar(255).
AXES_USERNAME_MAX = 255


def attempted_username(request: HttpRequest, credentials: dict | None = None) -> str | None:
    """The username of a login attempt, cut to the 255 characters axes can store.

    Django's login form has no length validator on the username (it sets
    ``max_length`` only after the field is built), so a 10,000-character
    username reaches ``authenticate()``, and axes would then write it into a
    255-character column: PostgreSQL refuses it and the login page answered
    500. Usernames are at most 150 characters, so cutting never merges two
    real accounts' counters. Otherwise this is axes's own rule: the
    credentials' ``username``, else the POSTed one.
    """
    field = getattr(settings, "AXES_USERNAME_FORM_FIELD", "username")
    username = credentials.get(field) if credentials else getattr(request, "data", request.POST).get(field)
    return username[:AXES_USERNAME_MAX] if isinstance(username, str) else username
