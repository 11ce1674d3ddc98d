"""What ``/progress/`` shows a candidate, computed from their own review log and graded steps only.

All days are the candidate's local days. :func:`progress_for` returns plain
numbers; the page draws each series as a chart and prints it as a table.

- **Recall** per day: the share of reviews not rated Again; **predicted
  retention**: FSRS's mean retrievability just before those reviews (cards
  already learned); **accuracy**: the mean grade (problem score, or share of
  rubric points covered).
- **Accuracy per chapter** from the review log; **per ladder step** from every
  graded step (:class:`~drills.models.StepAnswer`) that is one of the capacity
  ladder's, in any family's problem (:func:`ladder_step_answers`: the KV drill's
  KV cache per token is the ladder's fifth step), reviews, drills and rounds
  alike; the **misconceptions** named most often, once per attempt, with the
  page that teaches each.
- **Reviews per day**, the **due forecast** (stopping at the interview date), the
  **streak** (consecutive local days with a review, ending today or yesterday),
  and the expected **retention on the interview day** per chapter.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache

from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.engine.quantities import ALIASES, FAMILY_ALIASES, canonical_key
from calculators.families import FAMILIES
from drills.models import Card, ReviewLog, ReviewSettings, StepAnswer
from drills.problems.generation import generate_inputs
from drills.reviews.scheduling import ChapterRetention, _now, due_forecast, local_today, retention_on_day
from runbook.models import chapter_text

HISTORY_DAYS = 30  # the most the charts show; they start at the first day with a review
FORECAST_DAYS = 30
TOP_MISCONCEPTIONS = 8


@dataclass
class DayRow:
    """One local day of the progress page: reviews done, how many recalled, the grades of worked problems."""

    day: date
    reviews: int = 0
    recalled: int = 0
    grades: list[float] = field(default_factory=list)
    predictions: list[float] = field(default_factory=list)

    @property
    def recall(self) -> float | None:
        return self.recalled / self.reviews if self.reviews else None

    @property
    def accuracy(self) -> float | None:
        return sum(self.grades) / len(self.grades) if self.grades else None

    @property
    def predicted(self) -> float | None:
        return sum(self.predictions) / len(self.predictions) if self.predictions else None


@dataclass
class Share:
    """A labelled mean over ``count`` observations (accuracy per chapter or per step)."""

    label: str
    count: int
    mean: float | None
    key: str = ""


@dataclass
class Misconception:
    """A misconception the candidate has made, with its explanation, link and count."""

    id: str
    title: str
    explanation: str
    link: str
    count: int


@dataclass
class Progress:
    """Everything the progress page shows for one candidate."""

    today: date
    days: list[DayRow]
    chapters: list[Share]
    ladder_steps: list[Share]
    misconceptions: list[Misconception]
    forecast: list[tuple[date, int]]
    streak: int
    longest_streak: int
    total_reviews: int
    cards: int
    learned: int
    interview_date: date | None
    retention_on_day: list[ChapterRetention]

    @property
    def has_history(self) -> bool:
        return self.total_reviews > 0

    @property
    def active_days(self) -> list[DayRow]:
        return [row for row in self.days if row.reviews]

    def chart_data(self) -> dict:
        """The series of every chart, for ``json_script``."""
        pct = lambda value: None if value is None else round(value * 100, 1)  # noqa: E731
        return {
            "days": [row.day.isoformat() for row in self.days],
            "reviews": [row.reviews for row in self.days],
            "recall": [pct(row.recall) for row in self.days],
            "predicted": [pct(row.predicted) for row in self.days],
            "accuracy": [pct(row.accuracy) for row in self.days],
            "chapters": {"labels": [row.label for row in self.chapters],
                         "values": [pct(row.mean) for row in self.chapters]},
            "steps": {"labels": [row.label for row in self.ladder_steps],
                      "values": [pct(row.mean) for row in self.ladder_steps]},
            "misconceptions": {"labels": [row.title for row in self.misconceptions],
                               "values": [row.count for row in self.misconceptions]},
            "forecast": {"labels": [day.isoformat() for day, _ in self.forecast],
                         "values": [count for _, count in self.forecast]},
            "retention": {"labels": [row.label for row in self.retention_on_day],
                          "kept": [pct(row.if_kept_up) for row in self.retention_on_day],
                          "stopped": [pct(row.if_stopped) for row in self.retention_on_day]},
        }


def streaks(days_with_reviews: set[date], today: date) -> tuple[int, int]:
    """(current, longest) runs of consecutive days; the current run may end today or yesterday."""
    longest = run = 0
    previous = None
    for day in sorted(days_with_reviews):
        run = run + 1 if previous is not None and day - previous == timedelta(days=1) else 1
        longest = max(longest, run)
        previous = day
    current = 0
    day = today if today in days_with_reviews else today - timedelta(days=1)
    while day in days_with_reviews:
        current += 1
        day -= timedelta(days=1)
    return current, longest


@lru_cache(maxsize=1)
def ladder_specs() -> tuple[tuple[str, str], ...]:
    """(key, label) of the capacity ladder's steps, in order."""
    result = FAMILIES["ladder"].run(generate_inputs("ladder", 0))
    return tuple((spec.key, spec.label) for spec in result.specs)


def ladder_step_answers(steps) -> dict[str, list[StepAnswer]]:
    """Ladder step key → the graded steps among ``steps`` (a :class:`~drills.models.StepAnswer` queryset) that are
    that ladder step, whatever family's problem they were graded in, in attempt order.

    A step is a ladder step when its key, read as its family's canonical key
    (:func:`~calculators.engine.quantities.canonical_key`: a step stored as ``weight_gib`` is ``weights_gib``), is
    one of the ladder's (:func:`ladder_specs`): every quantity is declared once with one key
    (:mod:`calculators.engine.quantities`), so the KV drill's ``kv_bytes_per_token`` is the ladder's "KV cache per
    token". The progress page and the coach's "Score per ladder step" both read it.
    """
    keys = {key for key, _ in ladder_specs()}
    stored = keys | {old for old, new in ALIASES.items() if new in keys} | {
        old for (_, old), new in FAMILY_ALIASES.items() if new in keys}
    found: dict[str, list[StepAnswer]] = defaultdict(list)
    for step in (steps.filter(key__in=stored).select_related("attempt__problem")
                 .only("key", "credit", "verdict", "attempt__problem__family").order_by("attempt_id", "position")):
        key = canonical_key(step.key, step.attempt.problem.family)
        if key in keys:
            found[key].append(step)
    return found


def progress_for(user, now: datetime | None = None, review_settings: ReviewSettings | None = None) -> Progress:
    """The candidate's progress at ``now``: days, chapters, ladder steps, misconceptions, streaks and forecast."""
    now = _now(now)
    review_settings = review_settings or ReviewSettings.for_user(user)
    tz = review_settings.tz
    today = local_today(tz, now)
    first = today - timedelta(days=HISTORY_DAYS - 1)
    rows = {first + timedelta(days=offset): DayRow(first + timedelta(days=offset)) for offset in range(HISTORY_DAYS)}

    logs = list(ReviewLog.objects.of(user).filter(reviewed_at__lte=now).select_related("item__chapter")
            .defer(*chapter_text("item__chapter")))
    active_days: set[date] = set()
    by_chapter: dict[tuple, list[float]] = defaultdict(list)
    for log in logs:
        day = local_today(tz, log.reviewed_at)  # the review day: a 01:00 review counts for the evening before
        active_days.add(day)
        if log.grade is not None:
            chapter = log.item.chapter if log.item else None
            key = (chapter.number, f"{chapter.label} · {chapter.title}") if chapter else (999, "No chapter")
            by_chapter[key].append(log.grade)
        row = rows.get(day)
        if row is None:
            continue
        row.reviews += 1
        row.recalled += log.rating != ReviewLog.AGAIN
        if log.grade is not None:
            row.grades.append(log.grade)
        if log.retrievability is not None and log.state_before != Card.LEARNING:
            row.predictions.append(log.retrievability)
    chapters = [Share(label, len(values), sum(values) / len(values))
                for (_, label), values in sorted(by_chapter.items())]

    # A re-submission after grading showed the expected values is practice: only first attempts count.
    steps = StepAnswer.objects.filter(attempt__user=user, attempt__submitted_at__lte=now).first_graded()
    ladder = {key: [step.credit for step in found] for key, found in ladder_step_answers(steps).items()}
    # Every step of the ladder, answered or not (a step never answered shows 0 answers and no mean).
    ladder_steps = [Share(label, len(ladder.get(key, [])),
                          sum(ladder[key]) / len(ladder[key]) if ladder.get(key) else None, key)
                    for key, label in ladder_specs()]

    counted = Counter(steps.slips().values_list("misconception", flat=True))
    misconceptions = []
    for ident, count in counted.most_common(TOP_MISCONCEPTIONS):
        info = MISCONCEPTIONS.get(ident)
        misconceptions.append(Misconception(ident, info.title if info else ident, info.explanation if info else "",
                                            info.link if info else "", count))

    # The charts start at the first day with a review (at least a week back), within the 30 days.
    shown_from = max(first, min([today - timedelta(days=6), *active_days]))
    current, longest = streaks(active_days, today)
    cards = Card.objects.of(user)
    return Progress(
        today=today, days=[row for day, row in rows.items() if day >= shown_from], chapters=chapters,
        ladder_steps=ladder_steps,
        misconceptions=misconceptions, forecast=due_forecast(user, FORECAST_DAYS, now, review_settings),
        streak=current, longest_streak=longest, total_reviews=len(logs), cards=cards.count(),
        learned=cards.filter(state=Card.REVIEW).count(), interview_date=review_settings.interview_date,
        retention_on_day=retention_on_day(user, now, review_settings),
    )
