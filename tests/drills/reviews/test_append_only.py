"""The review log is append-only in the database (issue 21, finding 3), on SQLite and on PostgreSQL.

Triggers refuse UPDATE and DELETE whatever goes around ``ReviewLog.save()``: a queryset's ``update()`` or
``delete()``, raw SQL. Deleting a card, an item or a problem leaves the reviews' ids as they were; an
account deletion goes through (the marker, written in its transaction); ``load_content`` removes only
items that came from fixture files. Run with ``DATABASE_URL=postgres://…`` for the PostgreSQL triggers.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from tests.url_table import build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(candidate, coach):
    """The url table's world, with two reviews by alice: her open card's and her problem card's."""
    from django.utils import timezone

    from drills.models import ReviewLog

    world = build_world(candidate, coach)
    now = timezone.now()
    for card in (world.objects.open_card, world.objects.problem_card):
        ReviewLog.objects.create(user=candidate, card=card, item=card.item, item_slug=card.item.slug,
                                 card_version=card.version, rating=3, answer="what alice typed",
                                 reviewed_at=now, state_before=0, due_after=now,
                                 problem=world.objects.problem if card.item.kind == "problem" else None)
    return world


def _a_review(user):
    from drills.models import ReviewLog

    log = ReviewLog.objects.filter(user=user).order_by("pk").first()
    assert log is not None
    return log


def test_an_update_through_the_queryset_is_refused(world, candidate):
    from drills.models import ReviewLog

    log = _a_review(candidate)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        ReviewLog.objects.filter(pk=log.pk).update(rating=1, answer="rewritten")
    log.refresh_from_db()
    assert log.answer != "rewritten"


def test_a_delete_through_the_queryset_or_raw_sql_is_refused(world, candidate):
    from drills.models import ReviewLog

    count = ReviewLog.objects.filter(user=candidate).count()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        ReviewLog.objects.filter(user=candidate).delete()
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM drills_reviewlog")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE drills_reviewlog SET user_id = user_id")
    assert ReviewLog.objects.filter(user=candidate).count() == count > 0


def test_deleting_the_card_the_item_and_the_problem_rewrites_no_review(world, candidate):
    from drills.models import BankItem, Card, ProblemInstance, ReviewLog

    before = list(ReviewLog.objects.filter(user=candidate).order_by("pk").values())
    ids = {(row["card_id"], row["item_id"], row["problem_id"]) for row in before}
    Card.objects.filter(user=candidate).delete()
    BankItem.objects.filter(pk__in=[row["item_id"] for row in before if row["item_id"]]).delete()
    ProblemInstance.objects.filter(pk__in=[row["problem_id"] for row in before if row["problem_id"]]).delete()
    after = list(ReviewLog.objects.filter(user=candidate).order_by("pk").values())
    assert after == before
    assert {(row["card_id"], row["item_id"], row["problem_id"]) for row in after} == ids


def test_a_marker_for_another_user_lets_nothing_through(world, candidate):
    from drills.models import ReviewLog, ReviewLogErasure

    ReviewLogErasure.objects.create(user_id=candidate.pk + 999)
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        ReviewLog.objects.filter(user=candidate).delete()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL ties the marker to its transaction")
def test_on_postgresql_a_marker_left_by_another_transaction_lets_nothing_through(world, candidate):
    from drills.models import ReviewLog, ReviewLogErasure

    ReviewLogErasure.objects.create(user_id=candidate.pk, txid=1)  # not this transaction's id
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        ReviewLog.objects.filter(user=candidate).delete()


def test_the_triggers_are_in_the_database(db):
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'drills_reviewlog'")
            assert {row[0] for row in cursor.fetchall()} == {"drills_reviewlog_no_update", "drills_reviewlog_no_delete"}
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'drills_reviewlog'::regclass "
                           "AND NOT tgisinternal")
            assert {row[0] for row in cursor.fetchall()} == {"drills_reviewlog_append_only"}


def test_load_content_removes_only_items_from_fixture_files(world, coach, settings, tmp_path):
    from drills.models import BankItem
    from runbook.loading import load_content

    archived = BankItem.objects.create(slug="archived-by-a-deleted-coach", prompt="Kept?", model_answer="Yes.",
                                       rubric=["kept"], published=False)
    fixture_only = BankItem.objects.create(slug="gone-from-the-files", prompt="Old", model_answer="Old.",
                                           rubric=["x"], source_path="questions/99-old.yaml")
    load_content(settings.BASE_DIR / "fixtures")
    assert BankItem.objects.filter(pk=archived.pk).exists()
    assert not BankItem.objects.filter(pk=fixture_only.pk).exists()


def test_the_test_database_is_named_for_this_run(db):
    """Two test runs on one database server never drop each other's database (issue 21, finding 8)."""
    import os

    name = str(connection.settings_dict["NAME"])
    assert str(os.getpid()) in name
