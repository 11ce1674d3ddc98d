"""E-mail notices: of assignments (assigned, due soon; at most one of each kind per candidate), and of a cohort
whose coach deleted their account (handed to another coach, or closed)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone

from accounts.timezones import zones_of
from coaching.progress import DONE, assignments_for, progress_for

from .models import Assignment, Notice

# --- notices --------------------------------------------------------------------------------------


def send_notice(assignment_id: int, candidate_id: int, kind: str, now: datetime | None = None) -> bool:
    """E-mail one candidate about one assignment, at most once per kind; whether a mail went out.

    Nothing is sent to someone the assignment is no longer for (they left the
    cohort), nor a reminder for work already done.
    """
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    now = _now(now)
    assignment = Assignment.objects.select_related("question_set", "coach", "cohort").filter(pk=assignment_id).first()
    user = get_user_model().objects.filter(pk=candidate_id, is_active=True).first()
    if assignment is None or user is None or not user.email:
        return False
    if not Assignment.objects.for_candidate(user).filter(pk=assignment.pk).exists():
        return False
    if kind == Notice.REMINDER:
        assignment = assignments_for(user).get(pk=assignment.pk)
        if progress_for([(assignment, user)], now)[(assignment.pk, user.pk)].status == DONE:
            return False
    with transaction.atomic():
        try:
            with transaction.atomic():
                Notice.objects.create(assignment=assignment, candidate=user, kind=kind, sent_at=now)
        except IntegrityError:
            return False
        context = {"assignment": assignment, "user": user, "kind": kind,
                   "url": getattr(settings, "SITE_URL", "").rstrip("/") + reverse("coaching:my_assignment",
                                                                                  args=[assignment.pk])}
        subject = (f"New assignment: {assignment.question_set.title}" if kind == Notice.ASSIGNED
                   else f"Due tomorrow: {assignment.question_set.title}")
        send_mail(subject, render_to_string("coaching/notice_email.txt", context), None, [user.email])
    return True


def send_cohort_notice(candidate_id: int, cohort_name: str, old_coach: str, successor_id: int | None,
                       cohort_id: int | None) -> bool:
    """Tell one candidate that the coach ``old_coach`` of their cohort ``cohort_name`` deleted their account, and
    that the cohort is now coached by the user ``successor_id`` (``cohort_id`` is the cohort, kept) or closed
    (both ``None``); whether a mail went out.

    Sent after the deletion committed (:func:`home.deletion.settle_coaching`). Nothing is sent to an account
    gone or without an address, nor, for a handed-over cohort, to someone who left it since.
    """
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    from .models import Membership

    users = get_user_model()._default_manager
    user = users.filter(pk=candidate_id, is_active=True).first()
    successor = users.filter(pk=successor_id).first() if successor_id else None
    if user is None or not user.email or (successor_id and successor is None):
        return False
    if cohort_id and not Membership.objects.filter(cohort_id=cohort_id, candidate=user).exists():
        return False
    site = getattr(settings, "SITE_URL", "").rstrip("/")
    context = {"user": user, "cohort": cohort_name, "old_coach": old_coach, "successor": successor,
               "account_url": site + reverse("account:overview"), "assignments_url": site + reverse(
                   "coaching:my_assignments")}
    subject = (f"{cohort_name} is now coached by {successor.get_username()}" if successor
               else f"{cohort_name} has closed")
    send_mail(subject, render_to_string("coaching/cohort_notice_email.txt", context), None, [user.email])
    return True


def reminders_due(now: datetime | None = None) -> list[tuple[int, int]]:
    """(assignment id, candidate id) pairs whose due day is tomorrow in the candidate's time zone,
    not done and not yet reminded."""
    now = _now(now)
    window = list(Assignment.objects.filter(due_at__gt=now, due_at__lte=now + timedelta(hours=50))
                  .select_related("question_set", "candidate", "cohort")
                  .prefetch_related("question_set__entries__item", "cohort__memberships__candidate"))
    pairs = [(a, user) for a in window
             for user in ([a.candidate] if a.candidate_id else [m.candidate for m in a.cohort.memberships.all()])]
    if not pairs:
        return []
    zones = zones_of({u.pk for _, u in pairs})
    reminded = set(Notice.objects.filter(assignment__in=window, kind=Notice.REMINDER)
                   .values_list("assignment_id", "candidate_id"))
    import zoneinfo

    due = []
    for assignment, user in pairs:
        tz = zones.get(user.pk, zoneinfo.ZoneInfo("UTC"))
        tomorrow = now.astimezone(tz).date() + timedelta(days=1)
        if assignment.due_at.astimezone(tz).date() == tomorrow and (assignment.pk, user.pk) not in reminded:
            due.append((assignment, user))
    progress = progress_for(due, now)
    return [(a.pk, u.pk) for a, u in due if progress[(a.pk, u.pk)].status != DONE]


def _now(now: datetime | None) -> datetime:
    return now or timezone.now()
