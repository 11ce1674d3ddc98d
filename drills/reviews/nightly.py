"""The nightly review work: refit each active candidate's FSRS parameters, and the due-today digest.

Each candidate's night and morning are their own: the beat job runs hourly
(:mod:`drills.tasks`) and picks, in each candidate's time zone, those past
:data:`REFIT_HOUR` not yet considered for a refit today and, among those who
opted in, those past :data:`DIGEST_HOUR` not yet sent today's digest. Both
per-user steps are idempotent for a local day (``refit_checked_on``,
``last_digest_on``, under a row lock), so a retried or duplicated task does
nothing twice.

The refit uses ``fsrs``'s optimiser only where it is installed (the
``fsrs[optimizer]`` extra pulls in PyTorch and is not installed by the README
or CI); otherwise, and below :data:`MIN_REVIEWS_FOR_FIT` reviews, the
parameters stay as they are and ``refit_note`` says why.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string

from drills.bank.services import item_title
from drills.models import ReviewLog, ReviewSettings
from drills.reviews.scheduling import _now, days_to_interview, due_queue, local_today, scheduler_for

REFIT_HOUR = 3
DIGEST_HOUR = 6
ACTIVE_DAYS = 30
MIN_REVIEWS_FOR_FIT = 200
DIGEST_ITEMS = 10


def load_optimizer():
    """``fsrs.Optimizer`` when its extra is installed, else ``None``."""
    try:
        from fsrs.optimizer import Optimizer
    except ImportError:
        return None
    # Without PyTorch the package defines a stand-in that raises when constructed.
    return Optimizer if hasattr(Optimizer, "compute_optimal_parameters") else None


# Read with each review settings row: its user and their time zone (ReviewSettings.tz), no query per row.
ZONE = "user__time_zone_preference"


def _local_now(review_settings: ReviewSettings, now: datetime) -> datetime:
    return now.astimezone(review_settings.tz)


def users_to_refit(now: datetime | None = None) -> list[tuple[int, date]]:
    """(user id, local day) of active candidates whose night it is and who were not considered today."""
    now = _now(now)
    active = ReviewSettings.objects.filter(
        user__review_logs__reviewed_at__gte=now - timedelta(days=ACTIVE_DAYS), user__is_active=True).distinct()
    active = active.select_related(ZONE)
    picked = []
    for row in active.order_by("user_id"):
        local = _local_now(row, now)
        if local.hour >= REFIT_HOUR and row.refit_checked_on != local.date():
            picked.append((row.user_id, local.date()))
    return picked


def users_to_digest(now: datetime | None = None) -> list[tuple[int, date]]:
    """(user id, local day) of opted-in candidates whose morning it is and who have no digest today yet."""
    now = _now(now)
    rows = ReviewSettings.objects.filter(digest=True, user__is_active=True, user__review_cards__suspended=False)
    rows = rows.select_related(ZONE)
    picked = []
    for row in rows.distinct().order_by("user_id"):
        local = _local_now(row, now)
        if local.hour >= DIGEST_HOUR and row.last_digest_on != local.date():
            picked.append((row.user_id, local.date()))
    return picked


def refit(user_id: int, day: date | None = None, now: datetime | None = None) -> str:
    """Refit one candidate's parameters from their log for local ``day``; returns the note stored."""
    now = _now(now)
    row = ReviewSettings.objects.select_related(ZONE).get(user_id=user_id)
    day = day or local_today(row.tz, now)
    if row.refit_checked_on == day:
        return row.refit_note
    logs = list(ReviewLog.objects.filter(user_id=user_id, card__isnull=False, reviewed_at__lte=now))
    parameters = None
    optimizer = load_optimizer()
    if len(logs) < MIN_REVIEWS_FOR_FIT:
        note = f"{len(logs)} reviews so far; a refit needs {MIN_REVIEWS_FOR_FIT}: the parameters stay as they are."
    elif optimizer is None:
        note = (f"{len(logs)} reviews, but fsrs's optimiser is not installed (pip install 'fsrs[optimizer]'): "
                "the default parameters stay.")
    else:
        fitted = [float(value) for value in optimizer([log.to_fsrs() for log in logs]).compute_optimal_parameters()]
        row.parameters = fitted
        if scheduler_for(row).parameters != tuple(fitted):  # out of bounds: the scheduler refused them
            parameters, note = None, f"The fit on {len(logs)} reviews gave parameters out of bounds: kept the old ones."
        else:
            parameters, note = fitted, f"Fitted on {len(logs)} reviews."
    with transaction.atomic():
        row = ReviewSettings.objects.select_for_update().get(user_id=user_id)
        if row.refit_checked_on == day:
            return row.refit_note
        row.refit_checked_on = day
        row.refit_note = note
        fields = ["refit_checked_on", "refit_note"]
        if parameters is not None:
            row.parameters, row.fitted_at, row.fitted_reviews = parameters, now, len(logs)
            fields += ["parameters", "fitted_at", "fitted_reviews"]
        row.save(update_fields=fields)
    return note


def digest_text(user, review_settings: ReviewSettings, now: datetime) -> tuple[str, str, int]:
    """(subject, body, number due) of the due-today digest."""
    queue = due_queue(user, now, review_settings)
    today = local_today(review_settings.tz, now)
    days_left = days_to_interview(review_settings, now)
    subject = f"{len(queue)} card{'s' if len(queue) != 1 else ''} due today · LLM Serving Prep"
    body = render_to_string("reviews/digest_email.txt", {
        "user": user, "count": len(queue), "today": today, "items": [item_title(c.item) for c in queue[:DIGEST_ITEMS]],
        "more": max(0, len(queue) - DIGEST_ITEMS), "days_left": days_left,
        "review_url": f"{settings.SITE_URL}/review/", "settings_url": f"{settings.SITE_URL}/review/settings/",
    })
    return subject, body, len(queue)


def send_digest(user_id: int, day: date | None = None, now: datetime | None = None) -> bool:
    """Send one candidate today's digest, once per local day; whether a mail went out."""
    now = _now(now)
    with transaction.atomic():
        row = ReviewSettings.objects.select_for_update(of=("self",)).select_related(ZONE).get(user_id=user_id)
        day = day or local_today(row.tz, now)
        if not row.digest or row.last_digest_on == day or not row.user.email or not row.user.is_active:
            return False
        subject, body, count = digest_text(row.user, row, now)
        row.last_digest_on = day
        row.save(update_fields=["last_digest_on"])
        if count == 0:
            return False
        # Inside the transaction: a failed send rolls the date back, and the retry sends it.
        send_mail(subject, body, None, [row.user.email])
    return True

