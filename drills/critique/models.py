"""Stored critique-drill attempts (registered with the app through :mod:`drills.models`).

An attempt keeps a snapshot of the document it graded (lines and planted
errors), the candidate's flags with their reasons, and the grade; one
:class:`CritiqueMark` per planted error (found or missed) and per other
flagged line (a false flag, or a line that carries a planted error's
consequence), so a coach can ask which kinds of error a candidate keeps
missing. The candidate's self-assessment of each found error lives on its mark.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse


class CritiqueAttemptQuerySet(models.QuerySet):
    """Critique attempts, by candidate."""

    def of(self, user) -> "CritiqueAttemptQuerySet":
        """Attempts of one candidate (never anyone else's)."""
        return self.filter(user=user) if user.is_authenticated else self.none()


class CritiqueAttempt(models.Model):
    """One graded submission of a critique drill by a logged-in candidate."""

    item = models.ForeignKey("drills.BankItem", on_delete=models.CASCADE, related_name="critique_attempts",
                             limit_choices_to={"kind": "critique"})
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="critique_attempts")
    document = models.JSONField(help_text="The lines and planted errors graded against (a snapshot).")
    flags = models.JSONField(default=dict, help_text="Line number → the candidate's reason.")
    planted_count = models.PositiveSmallIntegerField()
    found_count = models.PositiveSmallIntegerField()
    false_flag_count = models.PositiveSmallIntegerField()
    penalty = models.FloatField(help_text="Score lost per false flag when graded.")
    score = models.FloatField(help_text="found ÷ planted − penalty × false flags, clamped to 0–1.")
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(auto_now_add=True)
    time_taken_s = models.FloatField(null=True, blank=True)
    assessed_at = models.DateTimeField(null=True, blank=True, help_text="When the self-assessment was saved.")

    objects = CritiqueAttemptQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.user} on {self.item}: {self.score:.0%}"

    def get_absolute_url(self) -> str:
        return reverse("drills:critique_attempt", args=[self.item.slug, self.pk])

    def grade(self):
        """The grade recomputed from the stored snapshot and flags (:func:`drills.critique.services.grade_critique`)."""
        from drills.critique.services import grade_critique

        return grade_critique(self.document, {int(k): v for k, v in self.flags.items()}, self.penalty)

    def review_rating(self) -> int:
        """A 1–4 recall rating (again, hard, good, easy) for spaced repetition, from the score and self-ratings.

        A found error the candidate rated "no" counts as missed, "partly" as half.
        """
        marks = [m for m in self.marks.all() if m.outcome in (CritiqueMark.FOUND, CritiqueMark.MISSED)]
        if not marks:
            return 1
        credit = {"got": 1.0, "partly": 0.5, "no": 0.0}
        found = sum(credit.get(m.self_rating, 1.0) for m in marks if m.outcome == CritiqueMark.FOUND)
        value = max(0.0, found / len(marks) - self.penalty * self.false_flag_count)
        return 4 if value >= 0.9 else 3 if value >= 0.6 else 2 if value >= 0.3 else 1

    @classmethod
    @transaction.atomic
    def record(cls, item, user, grade, *, started_at=None, time_taken_s=None) -> "CritiqueAttempt":
        """Store a graded submission (:class:`drills.critique.services.CritiqueGrade`) with its marks."""
        attempt = cls.objects.create(
            item=item, user=user, document={"lines": grade.lines, "planted": item.details.get("planted", [])},
            flags={str(p.line): p.why for p in grade.found} | {str(f.line): f.why for f in grade.flags},
            planted_count=len(grade.planted), found_count=len(grade.found),
            false_flag_count=len(grade.false_flags), penalty=grade.penalty, score=grade.score,
            started_at=started_at, time_taken_s=time_taken_s)
        marks = [CritiqueMark(attempt=attempt, line=p.line, category=p.category, why=p.why,
                              outcome=CritiqueMark.FOUND if p.found else CritiqueMark.MISSED)
                 for p in grade.planted]
        marks += [CritiqueMark(attempt=attempt, line=f.line, why=f.why,
                               outcome=CritiqueMark.FALSE_FLAG if f.is_false else CritiqueMark.CARRIED)
                  for f in grade.flags]
        CritiqueMark.objects.bulk_create(marks)
        return attempt


class CritiqueMark(models.Model):
    """One line of an attempt that matters: a planted error (found or missed) or another flagged line."""

    FOUND, MISSED, FALSE_FLAG, CARRIED = "found", "missed", "false_flag", "carried"
    OUTCOMES = [(FOUND, "Found"), (MISSED, "Missed"), (FALSE_FLAG, "Wrongly flagged"),
                (CARRIED, "Carries a planted error")]
    RATINGS = [("got", "Got it"), ("partly", "Partly"), ("no", "No")]

    attempt = models.ForeignKey(CritiqueAttempt, on_delete=models.CASCADE, related_name="marks")
    line = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=12, choices=OUTCOMES)
    category = models.CharField(max_length=40, blank=True, help_text="The planted error's category.")
    why = models.TextField(blank=True, help_text="The candidate's reason for flagging the line.")
    self_rating = models.CharField(max_length=8, choices=RATINGS, blank=True,
                                   help_text="For a found error: did the reason match the planted explanation?")

    class Meta:
        ordering = ["attempt", "line"]
        constraints = [models.UniqueConstraint(fields=["attempt", "line"], name="one_mark_per_critique_line")]

    def __str__(self) -> str:
        return f"line {self.line}: {self.outcome}"
