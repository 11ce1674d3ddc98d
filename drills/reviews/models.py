"""Spaced repetition: a candidate's deck of cards, the append-only review log, and their settings.

A :class:`Card` is a (user, bank item) pair carrying the state of the ``fsrs``
scheduler (state, step, stability, difficulty, due, last review) and a
``version`` that every review bumps. A :class:`ReviewLog` row is written once per
review and never changed; it records the card's version it was made against,
and a unique constraint on (card, card_version) means two tabs or a double click
record one review, whatever reaches the database first.

:class:`ReviewSettings` holds what the candidate chose (interview date, digest,
desired retention) and what the nightly job fitted (FSRS parameters and when);
their review day turns in their time zone (:func:`accounts.timezones.zone_of`).
The scheduling rules live in :mod:`drills.reviews.scheduling`, the review flow
in :mod:`drills.reviews.services`.
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.timezones import zone_of

__all__ = ["Card", "ReviewLog", "ReviewLogErasure", "ReviewSettings"]


class ReviewSettings(models.Model):
    """One candidate's review preferences, and the FSRS parameters fitted to their log."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_settings")
    interview_date = models.DateField(null=True, blank=True,
                                      help_text="The queue favours what would be forgotten before this day.")
    digest = models.BooleanField(default=False, help_text="E-mail me each morning what is due that day.")
    desired_retention = models.FloatField(default=0.9, help_text="The recall probability FSRS schedules for.")
    parameters = models.JSONField(default=list, blank=True,
                                  help_text="Fitted FSRS parameters; empty means the package's defaults.")
    fitted_at = models.DateTimeField(null=True, blank=True, help_text="When the parameters were last fitted.")
    fitted_reviews = models.PositiveIntegerField(default=0, help_text="How many reviews the fit used.")
    refit_checked_on = models.DateField(null=True, blank=True,
                                        help_text="The local day the nightly job last considered a refit.")
    refit_note = models.CharField(max_length=300, blank=True, help_text="What the last refit did, in a sentence.")
    last_digest_on = models.DateField(null=True, blank=True, help_text="The local day the last digest was sent.")
    reading_path = models.SlugField(max_length=80, blank=True,
                                    help_text="The runbook path the candidate follows (runbook.ReadingPath's slug).")

    class Meta:
        verbose_name_plural = "review settings"

    def __str__(self) -> str:
        return f"review settings of {self.user}"

    @property
    def tz(self) -> zoneinfo.ZoneInfo:
        """The user's time zone (:func:`accounts.timezones.zone_of`): their review day turns at 04:00 there."""
        return zone_of(self.user)

    @classmethod
    def for_user(cls, user) -> "ReviewSettings":
        """The user's settings to read: their row, or an unsaved one with the defaults when they have none yet
        (reading a page stores nothing; :meth:`stored_for` is for a write)."""
        found = cls.objects.filter(user=user).first() or cls(user=user)
        found.user = user  # the caller's user object: its time zone, once read, is not read again (:attr:`tz`)
        return found

    @classmethod
    def stored_for(cls, user) -> "ReviewSettings":
        """The user's settings row, created with the defaults if they have none: for the writes that need one
        (a card added, a review recorded, a setting chosen; the nightly refit and digest read the rows)."""
        found, _ = cls.objects.get_or_create(user=user)
        found.user = user
        return found


class CardQuerySet(models.QuerySet):
    def of(self, user) -> "CardQuerySet":
        """A user's cards in the deck (not suspended)."""
        return self.filter(user=user, suspended=False)

    def due_by(self, moment: datetime) -> "CardQuerySet":
        return self.filter(due__lte=moment)


class Card(models.Model):
    """A bank item in one candidate's deck, with its FSRS state."""

    LEARNING, REVIEW, RELEARNING = 1, 2, 3
    STATES = [(LEARNING, "Learning"), (REVIEW, "Review"), (RELEARNING, "Relearning")]
    VIA_ITEM, VIA_CHAPTER, VIA_TRACK, VIA_FINISHED, VIA_FILTER = "item", "chapter", "track", "finished", "filter"
    ADDED_VIA = [(VIA_ITEM, "one at a time"), (VIA_CHAPTER, "by chapter"), (VIA_TRACK, "by track"),
                 (VIA_FINISHED, "on finishing a chapter's questions"), (VIA_FILTER, "from a bank search")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_cards")
    item = models.ForeignKey("drills.BankItem", on_delete=models.CASCADE, related_name="cards")
    state = models.PositiveSmallIntegerField(choices=STATES, default=LEARNING)
    step = models.PositiveSmallIntegerField(null=True, blank=True, default=0)
    stability = models.FloatField(null=True, blank=True)
    difficulty = models.FloatField(null=True, blank=True)
    due = models.DateTimeField(db_index=True)
    last_review = models.DateTimeField(null=True, blank=True)
    reps = models.PositiveIntegerField(default=0)
    lapses = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=0, help_text="Bumped by every review; a review names the version "
                                                               "it was made against.")
    pending_problem = models.ForeignKey("drills.ProblemInstance", null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+", help_text="Problem templates: the variant drawn for the "
                                                                    "next review.")
    added_via = models.CharField(max_length=10, choices=ADDED_VIA, default=VIA_ITEM)
    added_at = models.DateTimeField(default=timezone.now)
    suspended = models.BooleanField(default=False, help_text="Taken out of the deck; its history is kept.")

    objects = CardQuerySet.as_manager()

    class Meta:
        ordering = ["due", "pk"]
        constraints = [models.UniqueConstraint(fields=["user", "item"], name="one_card_per_user_and_item")]
        indexes = [models.Index(fields=["user", "due"], name="card_user_due")]

    def __str__(self) -> str:
        return f"{self.user} · {self.item}"

    @property
    def is_new(self) -> bool:
        return self.last_review is None

    def to_fsrs(self):
        """This card as an ``fsrs.Card`` (UTC datetimes, as the package wants)."""
        from fsrs import Card as FsrsCard
        from fsrs import State

        return FsrsCard(card_id=self.pk or 1, state=State(self.state), step=self.step, stability=self.stability,
                        difficulty=self.difficulty, due=_utc(self.due), last_review=_utc(self.last_review))

    def take_fsrs(self, card) -> None:
        """Copy an ``fsrs.Card``'s state onto this row (not saved)."""
        self.state = int(card.state)
        self.step = card.step
        self.stability = card.stability
        self.difficulty = card.difficulty
        self.due = card.due
        self.last_review = card.last_review


def _utc(moment: datetime | None) -> datetime | None:
    return moment.astimezone(dt_timezone.utc) if moment is not None else None


class ReviewLogQuerySet(models.QuerySet):
    def of(self, user) -> "ReviewLogQuerySet":
        return self.filter(user=user)


class ReviewLog(models.Model):
    """One review, written once and never changed.

    Append-only in the database itself: triggers (migration ``drills.0007``, :mod:`drills.reviews.append_only`)
    refuse every UPDATE and every DELETE, except the DELETE of an account's own reviews inside the
    transaction that deletes the account (:class:`ReviewLogErasure`).

    ``grade`` is the problem's score (0–1) for a problem template, or the share
    of rubric points ticked for an open question; ``retrievability`` is what FSRS
    predicted the recall probability was just before the review; ``state_before``
    is the card's state then (a review of a learned card counts towards retention).
    """

    AGAIN, HARD, GOOD, EASY = 1, 2, 3, 4
    RATINGS = [(AGAIN, "Again"), (HARD, "Hard"), (GOOD, "Good"), (EASY, "Easy")]

    # History is never rewritten: removing a card, an item, a problem or an attempt leaves the review's ids as
    # they were (no SET_NULL, no database constraint to enforce on them); item_slug keeps what the item was.
    card = models.ForeignKey(Card, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="logs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_logs")
    item = models.ForeignKey("drills.BankItem", null=True, on_delete=models.DO_NOTHING, db_constraint=False,
                             related_name="+")
    item_slug = models.SlugField(max_length=120, help_text="Kept when the item is removed from the bank.")
    card_version = models.PositiveIntegerField(help_text="The card's version this review was made against.")
    rating = models.PositiveSmallIntegerField(choices=RATINGS)
    suggested_rating = models.PositiveSmallIntegerField(choices=RATINGS, null=True, blank=True)
    reviewed_at = models.DateTimeField(db_index=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True, help_text="Time on the card.")
    grade = models.FloatField(null=True, blank=True)
    problem = models.ForeignKey("drills.ProblemInstance", null=True, blank=True, on_delete=models.DO_NOTHING,
                                db_constraint=False, related_name="+")
    attempt = models.ForeignKey("drills.Attempt", null=True, blank=True, on_delete=models.DO_NOTHING,
                                db_constraint=False, related_name="reviews")
    answer = models.TextField(blank=True, help_text="What the candidate typed for an open question.")
    said_aloud = models.BooleanField(default=False)
    rubric_ticked = models.JSONField(default=list, blank=True, help_text="Indexes of the rubric points ticked.")
    state_before = models.PositiveSmallIntegerField(choices=Card.STATES)
    retrievability = models.FloatField(null=True, blank=True)
    stability_after = models.FloatField(null=True, blank=True)
    due_after = models.DateTimeField()

    objects = ReviewLogQuerySet.as_manager()

    class Meta:
        ordering = ["reviewed_at", "pk"]
        constraints = [models.UniqueConstraint(fields=["card", "card_version"], name="one_review_per_card_version")]
        indexes = [models.Index(fields=["user", "reviewed_at"], name="reviewlog_user_time")]

    def __str__(self) -> str:
        return f"{self.user} · {self.item_slug} · {self.get_rating_display()}"

    def save(self, *args, **kwargs):
        if self.pk is not None and not kwargs.get("force_insert"):
            raise ValueError("Review logs are append-only: a review is never changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("Review logs are append-only: a review is never deleted.")

    def to_fsrs(self):
        from fsrs import Rating
        from fsrs import ReviewLog as FsrsReviewLog

        return FsrsReviewLog(card_id=self.card_id or -self.pk, rating=Rating(self.rating),
                             review_datetime=_utc(self.reviewed_at), review_duration=self.duration_ms)


class ReviewLogErasure(models.Model):
    """The marker that lets an account deletion through the review log's DELETE trigger.

    :func:`home.data.delete_account` writes one row (the user's id and, on PostgreSQL, the current
    transaction id) before deleting the account and removes it before committing; the trigger lets a
    DELETE of a review through only while a row for that review's user exists (on PostgreSQL: written by
    the same transaction). Outside an account deletion no row exists, so every DELETE is refused.
    """

    user_id = models.BigIntegerField(db_index=True)
    txid = models.BigIntegerField(default=0, help_text="PostgreSQL's txid_current() of the deleting transaction.")
    created_at = models.DateTimeField(auto_now_add=True)
