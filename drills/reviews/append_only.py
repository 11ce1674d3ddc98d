"""The review log is append-only in the database: triggers that refuse UPDATE and DELETE on ``drills_reviewlog``.

``ReviewLog.save()`` and ``.delete()`` refuse too, but a queryset's ``update()``/``delete()``, a cascade, the
admin or a plain SQL client would not go through them. The triggers (created by migration
``drills.0007_reviewlog_append_only`` on SQLite and PostgreSQL) refuse every UPDATE, and every DELETE
except one: the rows of a user for whom a :class:`~drills.reviews.models.ReviewLogErasure` marker exists,
which :func:`home.data.delete_account` writes in the transaction that deletes the account (on
PostgreSQL the marker must carry that very transaction's id) and removes before it commits.

:func:`lifted` drops the triggers for the length of a ``with`` block and puts them back: only the test
suite's database flush between transactional tests uses it.
"""

from __future__ import annotations

from contextlib import contextmanager

MESSAGE = "drills_reviewlog is append-only: a review is never changed or deleted (except with its account)"

SQLITE_CREATE = [
    f"""CREATE TRIGGER IF NOT EXISTS drills_reviewlog_no_update BEFORE UPDATE ON drills_reviewlog
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS drills_reviewlog_no_delete BEFORE DELETE ON drills_reviewlog
    WHEN NOT EXISTS (SELECT 1 FROM drills_reviewlogerasure WHERE user_id = OLD.user_id)
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
]
SQLITE_DROP = ["DROP TRIGGER IF EXISTS drills_reviewlog_no_update", "DROP TRIGGER IF EXISTS drills_reviewlog_no_delete"]

POSTGRES_CREATE = [
    f"""CREATE OR REPLACE FUNCTION drills_reviewlog_append_only() RETURNS trigger AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND EXISTS (
            SELECT 1 FROM drills_reviewlogerasure WHERE user_id = OLD.user_id AND txid = txid_current()) THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
    END;
    $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS drills_reviewlog_append_only ON drills_reviewlog",
    """CREATE TRIGGER drills_reviewlog_append_only BEFORE UPDATE OR DELETE ON drills_reviewlog
    FOR EACH ROW EXECUTE FUNCTION drills_reviewlog_append_only()""",
]
POSTGRES_DROP = ["DROP TRIGGER IF EXISTS drills_reviewlog_append_only ON drills_reviewlog",
                 "DROP FUNCTION IF EXISTS drills_reviewlog_append_only()"]


def create_statements(vendor: str) -> list[str]:
    """The SQL that installs the triggers on a database of ``vendor`` (``sqlite``, ``postgresql``)."""
    return {"sqlite": SQLITE_CREATE, "postgresql": POSTGRES_CREATE}.get(vendor, [])


def drop_statements(vendor: str) -> list[str]:
    """The SQL that removes them."""
    return {"sqlite": SQLITE_DROP, "postgresql": POSTGRES_DROP}.get(vendor, [])


def install(connection) -> None:
    """Create the triggers on ``connection`` (idempotent)."""
    with connection.cursor() as cursor:
        for statement in create_statements(connection.vendor):
            cursor.execute(statement)


def remove(connection) -> None:
    """Drop the triggers from ``connection`` (idempotent)."""
    with connection.cursor() as cursor:
        for statement in drop_statements(connection.vendor):
            cursor.execute(statement)


@contextmanager
def lifted(connection):
    """Drop the triggers for the ``with`` block, then create them again (test teardown's flush only)."""
    remove(connection)
    try:
        yield
    finally:
        install(connection)


def mark_erasure(user_id: int, connection) -> None:
    """Write the marker that lets ``user_id``'s reviews be deleted within the current transaction."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("INSERT INTO drills_reviewlogerasure (user_id, txid, created_at) "
                           "VALUES (%s, txid_current(), now())", [user_id])
        else:
            from drills.reviews.models import ReviewLogErasure

            ReviewLogErasure.objects.create(user_id=user_id)


def clear_erasure(user_id: int) -> None:
    """Remove the marker again (before the deleting transaction commits)."""
    from drills.reviews.models import ReviewLogErasure

    ReviewLogErasure.objects.filter(user_id=user_id).delete()
