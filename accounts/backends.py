"""The authentication backend that reads a session's user together with whether they coach."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef

from accounts.roles import COACH_GROUP

# The path a session records for a user this backend logged in (settings.AUTHENTICATION_BACKENDS).
PATH = "accounts.backends.CoachFlagBackend"


class CoachFlagBackend(ModelBackend):
    """Django's ``ModelBackend``, whose session user arrives with ``_is_coach`` already read.

    Every page's navigation asks :func:`coaching.access.is_coach`, which was a query of its own on every
    request; here it is an ``EXISTS`` in the query that reads the user, and ``is_coach`` uses the value it
    finds on the user. The flag is read anew on every request, like the user, so adding someone to the
    ``coach`` group or removing them takes effect at their next request.

    A failed log-in stops here (``PermissionDenied``, which Django's ``authenticate`` treats as "stop, and
    fail"): the plain ``ModelBackend`` listed after this one is there only to restore the sessions it
    logged in before this backend existed, and must not check the same password a second time.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        """The user whose ``username`` and ``password`` match, as ``ModelBackend`` finds them.

        Raises ``PermissionDenied`` when a username and password were given and do not match (or the
        account is inactive); returns ``None`` for other kinds of credentials, as ``ModelBackend`` does.
        """
        user = super().authenticate(request, username=username, password=password, **kwargs)
        given = username if username is not None else kwargs.get(get_user_model().USERNAME_FIELD)
        if user is None and given is not None and password is not None:
            raise PermissionDenied("Wrong username or password.")
        return user

    def get_user(self, user_id):
        """The active user with primary key ``user_id`` and ``_is_coach`` set, or ``None``."""
        users = get_user_model()._default_manager.annotate(
            _is_coach=Exists(Group.objects.filter(name=COACH_GROUP, user=OuterRef("pk"))))
        try:
            user = users.get(pk=user_id)
        except users.model.DoesNotExist:
            return None
        return user if self.user_can_authenticate(user) else None
