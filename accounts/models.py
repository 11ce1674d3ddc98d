"""The accounts app's one model: the time zone a person reads dates and times in."""

from __future__ import annotations

import zoneinfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

__all__ = ["TimeZonePreference"]


def validate_time_zone(value: str) -> None:
    """An IANA time zone name such as ``Europe/Paris``; raises ``ValidationError`` for anything else.

    ``ZoneInfo`` reads a file named after the text, so a name too long for a file name is an ``OSError`` there:
    refused like any other unknown name (a form's length check runs beside this validator, not before it).
    """
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValidationError(f"'{value}' is not a time zone name such as Europe/Paris or America/New_York.") from None


class TimeZonePreference(models.Model):
    """The time zone a user chose: every page shows dates and times in it, and their review day turns in it.

    No row means UTC. Read it with :func:`accounts.timezones.zone_of`; change it with
    :func:`accounts.timezones.set_time_zone`.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="time_zone_preference")
    time_zone = models.CharField(max_length=64, default="UTC", validators=[validate_time_zone],
                                 help_text="'Due today' means today in this time zone.")

    def __str__(self) -> str:
        return f"time zone of {self.user}: {self.time_zone}"
