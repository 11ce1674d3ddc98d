"""``manage.py create_demo_accounts``: the groups and two demo logins, idempotently."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

COACH_GROUP = "coach"
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
)


class Command(BaseCommand):
    """Create the ``coach`` and ``candidate`` groups and the demo accounts, then print the logins.

    Running it again changes nothing, except that a demo account whose password
    was changed gets its demo password back (so the printed logins always work).
    For demonstrations and local development only.
    """

    help = "Create the coach/candidate groups and the demo candidate and coach accounts."

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        """Create or repair the groups and accounts, then print the logins."""
        groups = {}
        for name in (COACH_GROUP, CANDIDATE_GROUP):
            groups[name], created = Group.objects.get_or_create(name=name)
            self._report(f"group {name}", created)

        for account in DEMO_ACCOUNTS:
            self._ensure_account(account, groups[account.group])

        self.stdout.write("Demo logins:")
        for account in DEMO_ACCOUNTS:
            self.stdout.write(f"  {account.group:<9}  {account.username} / {account.password}")

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

    def _report(self, what: str, created: bool, detail: str = "") -> None:
        state = "created" if created else "exists"
        self.stdout.write(f"{what}: {state}{detail}")
