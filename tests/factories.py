"""How a test makes its objects, declared once (factory-boy): users with a role, chapters, bank items, cohorts.

Each factory saves through the ORM, as the hand-written helpers it replaces did; the defaults are the values those
helpers used, so a test names only what it is about. Services with side effects (``coaching.services.create_cohort``,
``assign``, ``accept_invitation``) are not wrapped here: a test that needs their bookkeeping calls them.

- :class:`UserFactory`: ``UserFactory(username="carol", role="coach")`` is carol, carol@example.com, with the
  password :data:`PASSWORD`, in the group ``coach`` (created when missing); no ``role`` puts her in no group.
- :class:`ChapterFactory`: a chapter of track B with a one-word body, a 10-minute read and a dummy content hash.
- :class:`BankItemFactory`: an open question for engineers on the topic "kv cache", its prompt and model answer made
  from its slug, its track the chapter's; :class:`ProblemTemplateFactory`: a problem template of a calculator
  family (``ladder`` unless told).
- :class:`CohortFactory` (``members=[…]`` adds memberships), :class:`MembershipFactory`,
  :class:`QuestionSetFactory`, :class:`AssignmentFactory` (to a candidate, due a week after it was made).
- :func:`problem_templates`: the seventeen problem templates synced into the bank, by slug.
"""

from __future__ import annotations

from datetime import timedelta

import factory
from django.utils import timezone
from factory.django import DjangoModelFactory, Password

#: The password of every user a factory makes (and of the ``candidate`` and ``coach`` fixtures).
PASSWORD = "correct-horse-battery-staple-9"


class UserFactory(DjangoModelFactory):
    """A user: ``username`` (``user<n>`` unless told), ``<username>@example.com``, :data:`PASSWORD`.

    ``role`` names the group the user joins (``"candidate"``, ``"coach"``, …; created when missing), none if omitted.
    """

    class Meta:
        model = "auth.User"
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = Password(PASSWORD)

    @factory.post_generation
    def role(user, create, extracted, **kwargs):
        """Put the user in the group named ``extracted``, when one is given."""
        if extracted:
            from django.contrib.auth.models import Group

            user.groups.add(Group.objects.get_or_create(name=extracted)[0])


class ChapterFactory(DjangoModelFactory):
    """A chapter: ``number`` (from 100 unless told, clear of the runbook's own), slug ``<number>-chapter``."""

    class Meta:
        model = "runbook.Chapter"

    number = factory.Sequence(lambda n: 100 + n)
    slug = factory.LazyAttribute(lambda chapter: f"{chapter.number:02d}-chapter")
    track = "B"
    title = factory.LazyAttribute(lambda chapter: f"Chapter {chapter.number}")
    summary = "S."
    reading_minutes = 10
    body = "Body."
    content_hash = "x" * 64


class BankItemFactory(DjangoModelFactory):
    """An open question (``kind`` "open" unless told) for engineers on "kv cache", in ``chapter`` (none unless told).

    Its prompt is "Explain <slug>.", its model answer "The model answer of <slug>: **53 users** worst case.", its
    rubric empty unless told, its track the chapter's (blank without one).
    """

    class Meta:
        model = "drills.BankItem"

    kind = "open"
    slug = factory.Sequence(lambda n: f"item-{n}")
    prompt = factory.LazyAttribute(lambda item: f"Explain {item.slug}.")
    model_answer = factory.LazyAttribute(lambda item: f"The model answer of {item.slug}: **53 users** worst case.")
    rubric = factory.LazyFunction(list)
    chapter = None
    track = factory.LazyAttribute(lambda item: item.chapter.track if item.chapter else "")
    topic = "kv cache"
    roles = factory.LazyFunction(lambda: ["engineer"])


class ProblemTemplateFactory(BankItemFactory):
    """A problem template of the calculator family ``family`` (``ladder`` unless told), for no particular role."""

    kind = "problem"
    slug = factory.Sequence(lambda n: f"problem-template-{n}")
    family = "ladder"
    prompt = factory.LazyAttribute(lambda item: f"Work the {item.family} problem.")
    model_answer = ""
    topic = ""
    roles = factory.LazyFunction(list)


class CohortFactory(DjangoModelFactory):
    """A cohort of ``coach`` (a new coach unless told) named ``name``; ``members=[…]`` makes their memberships."""

    class Meta:
        model = "coaching.Cohort"
        skip_postgeneration_save = True

    coach = factory.SubFactory(UserFactory, role="coach")
    name = factory.Sequence(lambda n: f"Cohort {n}")

    @factory.post_generation
    def members(cohort, create, extracted, **kwargs):
        """Make each user of ``extracted`` a member of the cohort (as joining without an invitation does)."""
        for candidate in extracted or ():
            MembershipFactory(cohort=cohort, candidate=candidate)


class MembershipFactory(DjangoModelFactory):
    """``candidate`` (a new candidate unless told) in ``cohort`` (a new cohort unless told), with no invitation."""

    class Meta:
        model = "coaching.Membership"

    cohort = factory.SubFactory(CohortFactory)
    candidate = factory.SubFactory(UserFactory, role="candidate")


class QuestionSetFactory(DjangoModelFactory):
    """A set of ``coach`` (a new coach unless told) titled ``title``, with no entries and no instructions."""

    class Meta:
        model = "coaching.QuestionSet"

    coach = factory.SubFactory(UserFactory, role="coach")
    title = factory.Sequence(lambda n: f"Set {n}")


class AssignmentFactory(DjangoModelFactory):
    """``question_set`` given by its coach to ``candidate``, made ``created_at`` (now) and due 7 days later.

    Saved directly: no notice is queued and no work is started, unlike ``coaching.services.assign``.
    """

    class Meta:
        model = "coaching.Assignment"

    question_set = factory.SubFactory(QuestionSetFactory)
    coach = factory.SelfAttribute("question_set.coach")
    candidate = factory.SubFactory(UserFactory, role="candidate")
    created_at = factory.LazyFunction(timezone.now)
    due_at = factory.LazyAttribute(lambda assignment: assignment.created_at + timedelta(days=7))


def problem_templates() -> dict:
    """The bank's problem items after :func:`drills.bank.problem_templates.sync_problem_templates` has made one
    template per calculator family (needs the database): slug → ``BankItem``."""
    from drills.bank.problem_templates import sync_problem_templates
    from drills.models import BankItem

    sync_problem_templates()
    return {item.slug: item for item in BankItem.objects.filter(kind=BankItem.PROBLEM)}
