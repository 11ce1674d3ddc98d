"""What a signed-in candidate's home page shows: their day, computed from their own data only.

:func:`home_for` gathers, in a fixed number of queries:

- **Today**: the cards due by the end of the candidate's review day and the week's forecast
  (``drills.reviews.scheduling``).
- **Assignments** not yet done, soonest due first; one is *new* when nothing of it is started and it was
  assigned within :data:`NEW_DAYS` days.
- **The interview**: days left and the expected recall on the day (FSRS's recall averaged over the reviewed
  cards, card-weighted, the cards never reviewed counted apart), if they keep up with what falls due and if
  they stop now.
- **The next chapter on their path**: the first chapter of their reading path none of whose questions are
  in their deck yet (adding a chapter's questions is how the runbook marks a chapter done).
- **Misconceptions** they keep making: the graded steps named after one, most frequent first, each with
  the drill family it came from (one click draws a fresh problem of it).
- **First run**: the three steps still to take after signing up (time zone, path, first deck).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.utils import timezone

from accounts.timezones import chose_time_zone, zone_name_of
from calculators.engine.mistakes import MISCONCEPTIONS
from coaching import services as coaching
from drills.models import Card, ReviewSettings, StepAnswer
from drills.reviews.scheduling import (
    ReviewDay,
    days_to_interview,
    due_count,
    due_forecast,
    retention_on_day,
    review_day,
)
from runbook.models import Chapter, Document, ReadingPath, chapter_text

NEW_DAYS = 7
FORECAST_DAYS = 7
TOP_MISCONCEPTIONS = 3


@dataclass
class Interview:
    """The interview date's countdown: days left and the expected recall that day, kept up or stopped (0-1), over
    the ``reviewed`` cards (``None`` when there is none); ``new`` cards never reviewed are not in it (FSRS
    predicts nothing for them), and the page says how many there are."""

    day: date
    days_left: int
    if_kept_up: float | None
    if_stopped: float | None
    reviewed: int = 0
    new: int = 0


@dataclass
class Mistake:
    """A misconception the candidate made (on first graded attempts), with its page link and how often."""

    id: str
    title: str
    explanation: str
    link: str
    family: str
    count: int


@dataclass
class Home:
    """Everything the signed-in home page shows: today's reviews, the week's forecast, assignments, the path."""

    review_day: ReviewDay  # today's review day and the calendar date beside it
    due_today: int
    forecast: list[tuple[date, int]]
    deck_size: int
    assignments: list = field(default_factory=list)
    interview: Interview | None = None
    path: ReadingPath | None = None
    paths: list[ReadingPath] = field(default_factory=list)
    next_chapter: Chapter | None = None
    path_done: bool = False
    mistakes: list[Mistake] = field(default_factory=list)
    time_zone: str = "UTC"
    now: datetime | None = None  # the instant shown as "it is 01:23 there", in ``time_zone``
    zone_chosen: bool = False  # UTC may be chosen too: a candidate in UTC can finish the first step

    @property
    def first_run(self) -> bool:
        """Whether a step of the first-run guidance is left: a time zone, a path, a first deck."""
        return not self.zone_chosen or self.path is None or self.deck_size == 0

    @property
    def forecast_max(self) -> int:
        return max([count for _, count in self.forecast] or [0]) or 1


def _open_assignments(user, now: datetime) -> list:
    found = list(coaching.assignments_for(user))
    progress = coaching.progress_for([(assignment, user) for assignment in found], now)
    rows = []
    for assignment in found:
        row = progress[(assignment.pk, user.pk)]
        if row.status == coaching.DONE:
            continue
        row.is_new = row.status == coaching.NOT_STARTED and assignment.created_at >= now - timedelta(days=NEW_DAYS)
        rows.append(row)
    return sorted(rows, key=lambda row: (row.assignment.due_at, row.assignment.pk))


def _interview(user, review_settings: ReviewSettings, now: datetime) -> Interview | None:
    days_left = days_to_interview(review_settings, now)
    if days_left is None:
        return None
    rows = retention_on_day(user, now, review_settings)
    seen = [row for row in rows if row.reviewed]  # cards never reviewed have no expected recall (scheduling)
    cards = sum(row.reviewed for row in seen)
    kept = sum(row.if_kept_up * row.reviewed for row in seen) / cards if cards else None
    stopped = sum(row.if_stopped * row.reviewed for row in seen) / cards if cards else None
    new = sum(row.cards for row in rows) - cards
    return Interview(review_settings.interview_date, days_left, kept, stopped, reviewed=cards, new=new)


def _next_chapter(user, path: ReadingPath) -> tuple[Chapter | None, bool]:
    """The path's first chapter with no question in the deck; ``(None, True)`` when every one has some."""
    documents = {doc.number: doc.chapter for doc in Document.objects
                 .filter(number__in=path.document_numbers, chapter__isnull=False)
                 .select_related("chapter").defer(*chapter_text("chapter"))}
    in_deck = set(Card.objects.of(user).exclude(item__chapter=None).values_list("item__chapter", flat=True))
    chapters = [documents[n] for n in path.document_numbers if n in documents]
    for chapter in chapters:
        if chapter.pk not in in_deck:
            return chapter, False
    return None, bool(chapters)


def _mistakes(user) -> list[Mistake]:
    counted = Counter(StepAnswer.objects.filter(attempt__user=user).first_graded().slips()
                      .values_list("misconception", "attempt__problem__family"))
    by_id: dict[str, Counter] = {}
    for (ident, family), count in counted.items():
        by_id.setdefault(ident, Counter())[family or ""] += count
    ranked = sorted(by_id.items(), key=lambda pair: (-sum(pair[1].values()), pair[0]))[:TOP_MISCONCEPTIONS]
    mistakes = []
    for ident, families in ranked:
        info = MISCONCEPTIONS.get(ident)
        family = families.most_common(1)[0][0]
        mistakes.append(Mistake(ident, info.title if info else ident, info.explanation if info else "",
                                info.link if info else "", family, sum(families.values())))
    return mistakes


def home_for(user, now: datetime | None = None) -> Home:
    """Everything the signed-in home page shows for ``user`` at ``now`` (see the module's docstring)."""
    now = now or timezone.now()
    review_settings = ReviewSettings.for_user(user)
    day = review_day(review_settings.tz, now)
    paths = list(ReadingPath.objects.all())
    path = next((p for p in paths if p.slug == review_settings.reading_path), None)
    home = Home(review_day=day, due_today=due_count(user, now, review_settings),
                forecast=due_forecast(user, FORECAST_DAYS, now, review_settings),
                deck_size=Card.objects.of(user).count(), assignments=_open_assignments(user, now),
                interview=_interview(user, review_settings, now), path=path, paths=paths,
                mistakes=_mistakes(user), time_zone=zone_name_of(user), now=now, zone_chosen=chose_time_zone(user))
    if path is not None:
        home.next_chapter, home.path_done = _next_chapter(user, path)
    return home
