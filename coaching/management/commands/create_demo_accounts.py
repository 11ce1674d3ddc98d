"""``manage.py create_demo_accounts``: the groups and two demo logins, idempotently."""

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from accounts.roles import COACH_GROUP
from coaching import services
from coaching.models import Assignment, Cohort, Membership, QuestionSet
from drills.models import BankItem

CANDIDATE_GROUP = "candidate"


@dataclass(frozen=True)
class DemoAccount:
    """A demo login and the group it belongs to."""

    username: str
    password: str
    group: str
    email: str


DEMO_ACCOUNTS = (
    DemoAccount("demo", "demo-candidate-2026", CANDIDATE_GROUP, "demo@example.com"),
    DemoAccount("coach", "demo-coach-2026", COACH_GROUP, "coach@example.com"),
    DemoAccount("demo2", "demo-candidate-2026", CANDIDATE_GROUP, "demo2@example.com"),
)


class Command(BaseCommand):
    """Create the ``coach`` and ``candidate`` groups and the demo accounts, then print the logins.

    Running it again changes nothing, except that a demo account whose password
    was changed gets its demo password back (so the printed logins always work).
    For demonstrations and local development only.
    """

    help = "Create the coach/candidate groups and the demo candidate and coach accounts."

    def handle(self, *args, **options) -> None:
        """Create or repair the groups and accounts, then print the logins and the invitation link.

        The e-mails the demo assignment sends (console backend: printed) go out when the
        transaction commits, so they come before the logins block, which ``bin/serve`` repeats
        once the server listens.
        """
        with transaction.atomic():
            groups = {}
            for name in (COACH_GROUP, CANDIDATE_GROUP):
                groups[name], created = Group.objects.get_or_create(name=name)
                self._report(f"group {name}", created)

            for account in DEMO_ACCOUNTS:
                self._ensure_account(account, groups[account.group])

            cohort = self._ensure_coaching()

        self.stdout.write("Demo logins:")
        for account in DEMO_ACCOUNTS:
            self.stdout.write(f"  {account.group:<9}  {account.username} / {account.password}")
        invitation = cohort.invitations.filter(revoked=False).first()
        if invitation is not None:
            # A full address (SITE_URL), pasted as is into a browser or a message to a candidate.
            self.stdout.write(f"Invitation to “{cohort.name}” (demo, demo2 are in it): "
                              f"{settings.SITE_URL}{invitation.get_absolute_url()}")

    def _ensure_account(self, account: DemoAccount, group: Group) -> None:
        user_model = get_user_model()
        user, created = user_model._default_manager.get_or_create(
            username=account.username, defaults={"email": account.email}
        )
        changed = []
        if not user.is_active:
            user.is_active = True
            changed.append("re-activated")
        if not user.check_password(account.password):
            user.set_password(account.password)
            changed.append("password reset" if not created else "password set")
        if changed:
            user.save()
        if not user.groups.filter(pk=group.pk).exists():
            user.groups.add(group)
            changed.append(f"added to {group.name}")
        detail = "" if created or not changed else f" ({', '.join(changed)})"
        self._report(f"user {account.username}", created, detail)

    def _ensure_coaching(self):
        """The demo coach's cohort (both demo candidates), a set and an assignment to the cohort; returns the cohort."""
        users = {u.username: u
                 for u in get_user_model()._default_manager.filter(username__in=["coach", "demo", "demo2"])}
        cohort, created = Cohort.objects.get_or_create(coach=users["coach"], name="Demo cohort")
        self._report("cohort Demo cohort", created)
        if not cohort.invitations.filter(revoked=False).exists():
            services.invite(cohort, days=None)
        for name in ("demo", "demo2"):
            Membership.objects.get_or_create(cohort=cohort, candidate=users[name])
        question_set, created = QuestionSet.objects.get_or_create(
            coach=users["coach"], title="Week 1: KV cache and capacity",
            defaults={"instructions": "Work the ladder on the 70B and answer the open questions in your own words."})
        self._report("question set Week 1", created)
        if created:
            ladder = BankItem.objects.published().filter(kind=BankItem.PROBLEM, family="ladder").first()
            if ladder:
                services.add_entry(question_set, item=ladder,
                                   fixed_inputs={"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"})
            for item in BankItem.objects.published().filter(kind=BankItem.OPEN).order_by("slug")[:2]:
                services.add_entry(question_set, item=item)
        if question_set.entries.exists() and not Assignment.objects.filter(question_set=question_set).exists():
            services.assign(question_set, users["coach"], cohort=cohort, due_at=timezone.now() + timedelta(days=7))
            self._report("assignment Week 1 → Demo cohort", True)
        return cohort

    def _report(self, what: str, created: bool, detail: str = "") -> None:
        state = "created" if created else "exists"
        self.stdout.write(f"{what}: {state}{detail}")
