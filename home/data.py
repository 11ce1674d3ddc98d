"""A person's own data: the full export (JSON and CSV in one zip) and the account's deletion.

:data:`TABLES` names every table that holds something a person did or was given, and how to select their
rows; :func:`export_zip` writes them all (``data.json`` with every table, one ``<table>.csv`` each, through
the project's one CSV writer) and :func:`delete_account` removes the account and everything listed as
deleted in :data:`DELETED`, in one transaction. What is kept is listed in :data:`KEPT`, and what becomes of a
coach's cohorts in :data:`COACHING` (the account pages show these lists).
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from typing import Callable

from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core.csv_export import write_csv
from home.deletion import clear_account_deletion, mark_account_deletion, settle_coaching


@dataclass(frozen=True)
class Table:
    """One exported table: its file name, its model (``app.Model``), what it holds, and the owner's rows."""

    name: str
    model: str
    about: str
    rows: Callable[[object], QuerySet]


def _model(label: str):
    return apps.get_model(label)


#: The columns of django-axes's log-in records that are exported (not the request's raw GET/POST data).
LOG_IN_FIELDS = ("id", "attempt_time", "ip_address", "user_agent", "path_info")
#: django-axes's log-in records, matched by user name: exported below and deleted with the account.
LOG_IN_MODELS = ("axes.AccessLog", "axes.AccessAttempt", "axes.AccessFailureLog")

TABLES = [
    Table("account", "auth.User", "your account: user name, e-mail, when it was made and last used",
          lambda u: _model("auth.User").objects.filter(pk=u.pk).values(
              "id", "username", "email", "first_name", "last_name", "date_joined", "last_login")),
    Table("problems", "drills.ProblemInstance", "the problems you drew or worked (seed and inputs)",
          lambda u: _model("drills.ProblemInstance").objects.filter(
              Q(created_by=u) | Q(attempts__user=u)).distinct()),
    Table("attempts", "drills.Attempt", "your worked-problem attempts",
          lambda u: _model("drills.Attempt").objects.filter(user=u)),
    Table("attempt_steps", "drills.StepAnswer", "every step of every attempt: what you typed and its verdict",
          lambda u: _model("drills.StepAnswer").objects.filter(attempt__user=u)),
    Table("followups", "drills.FollowUpAttempt", "your follow-ups: what you marked as moving, your new values, "
          "their grades", lambda u: _model("drills.FollowUpAttempt").objects.filter(user=u)),
    Table("cards", "drills.Card", "your review cards", lambda u: _model("drills.Card").objects.filter(user=u)),
    Table("reviews", "drills.ReviewLog", "every review you made",
          lambda u: _model("drills.ReviewLog").objects.filter(user=u)),
    Table("review_settings", "drills.ReviewSettings", "your review settings",
          lambda u: _model("drills.ReviewSettings").objects.filter(user=u)),
    Table("time_zone", "accounts.TimeZonePreference", "the time zone you chose",
          lambda u: _model("accounts.TimeZonePreference").objects.filter(user=u)),
    Table("rounds", "drills.Round", "your timed rounds", lambda u: _model("drills.Round").objects.filter(user=u)),
    Table("round_items", "drills.RoundItem", "the items of your rounds",
          lambda u: _model("drills.RoundItem").objects.filter(round__user=u)),
    Table("round_templates", "drills.RoundTemplate", "round presets you made",
          lambda u: _model("drills.RoundTemplate").objects.filter(owner=u)),
    Table("critiques", "drills.CritiqueAttempt", "your critique attempts",
          lambda u: _model("drills.CritiqueAttempt").objects.filter(user=u)),
    Table("critique_marks", "drills.CritiqueMark", "the lines you flagged in each critique",
          lambda u: _model("drills.CritiqueMark").objects.filter(attempt__user=u)),
    Table("lab_runs", "drills.LabRun", "your lab runs", lambda u: _model("drills.LabRun").objects.filter(user=u)),
    Table("calibrations", "calculators.Calibration", "the calibrations you fitted and saved, with the output pasted",
          lambda u: _model("calculators.Calibration").objects.filter(owner=u)),
    Table("calibration_in_use", "calculators.AppliedCalibration", "the calibration you apply",
          lambda u: _model("calculators.AppliedCalibration").objects.filter(user=u)),
    Table("calibrations_shared", "coaching.SharedCalibration", "the calibrations you shared with your cohorts",
          lambda u: _model("coaching.SharedCalibration").objects.filter(cohort__coach=u)),
    Table("memberships", "coaching.Membership", "the cohorts you are in",
          lambda u: _model("coaching.Membership").objects.filter(candidate=u)),
    Table("assignments", "coaching.Assignment", "the assignments given to you or to your cohorts",
          lambda u: _model("coaching.Assignment").objects.filter(
              Q(candidate=u) | Q(cohort__memberships__candidate=u)).distinct()),
    Table("assignment_work", "coaching.Work", "what each assignment started for you",
          lambda u: _model("coaching.Work").objects.filter(candidate=u)),
    Table("notices", "coaching.Notice", "the e-mails sent to you about assignments",
          lambda u: _model("coaching.Notice").objects.filter(candidate=u)),
    # The endpoint without its key: the key is never shown back, exported or logged (llm_grading.keys).
    Table("grading_endpoints", "llm_grading.Endpoint", "the endpoints you set to grade answers (never the key)",
          lambda u: _model("llm_grading.Endpoint").objects.filter(owner=u).values(
              "id", "cohort_id", "base_url", "model", "updated_at")),
    Table("graded_answers", "llm_grading.Grading", "your answers graded by a model: what was sent and the reply",
          lambda u: _model("llm_grading.Grading").objects.filter(user=u)),
    Table("questions_written", "drills.BankItem", "questions you wrote as a coach",
          lambda u: _model("drills.BankItem").objects.filter(author=u).defer("search_text")),
    Table("cohorts_coached", "coaching.Cohort", "the cohorts you coach",
          lambda u: _model("coaching.Cohort").objects.filter(coach=u)),
    Table("invitations", "coaching.Invitation", "the invitation links of your cohorts",
          lambda u: _model("coaching.Invitation").objects.filter(cohort__coach=u)),
    Table("question_sets", "coaching.QuestionSet", "the question sets you built",
          lambda u: _model("coaching.QuestionSet").objects.filter(coach=u)),
    Table("set_entries", "coaching.SetEntry", "the entries of your question sets",
          lambda u: _model("coaching.SetEntry").objects.filter(question_set__coach=u)),
    Table("assignments_given", "coaching.Assignment", "the assignments you gave as a coach",
          lambda u: _model("coaching.Assignment").objects.filter(coach=u)),
    Table("log_ins", "axes.AccessLog", "your log-ins: when, from which address and browser, and when you logged out",
          lambda u: _model("axes.AccessLog").objects.filter(username=u.get_username()).values(*LOG_IN_FIELDS,
                                                                                           "logout_time")),
    Table("failed_log_ins", "axes.AccessAttempt", "failed log-ins to your user name still counted, per address",
          lambda u: _model("axes.AccessAttempt").objects.filter(username=u.get_username()).values(
              *LOG_IN_FIELDS, "failures_since_start")),
    Table("failed_log_in_log", "axes.AccessFailureLog", "each failed log-in to your user name, if recorded",
          lambda u: _model("axes.AccessFailureLog").objects.filter(username=u.get_username()).values(
              *LOG_IN_FIELDS, "locked_out")),
]


DELETED = [
    "your account (user name, e-mail, password hash) and your log-in session",
    "every worked-problem attempt with all its steps, every review card and every review you made",
    "your timed rounds, critiques, lab runs, calibrations (and their shares), review settings, time zone and round "
    "presets",
    "your cohort memberships, the assignments given to you alone, their progress and the e-mails sent about them",
    "the endpoints you set to grade answers, with their keys (a cohort's too), and every answer graded by a model",
    "the record of your log-ins and of failed log-ins to your user name",
]
KEPT = [
    "problems you drew: a seed and calculator inputs, with nothing that names you",
    "e-mails already sent, and the web server's access logs (outside the database)",
]
#: What happens to a coach's cohorts, sets, assignments and questions (the deletion page shows it to coaches).
COACHING = [
    "Name another coach below and they take over your cohorts, question sets, assignments, round presets and "
    "the questions you wrote: your candidates' assignments and progress carry on, and each candidate is told by "
    "e-mail who now sees their work (they can leave the cohort).",
    "Leave the box empty and your cohorts close: their assignments and your question sets end with your account, "
    "and each candidate is told by e-mail. Candidates keep all their own work. The questions you wrote are "
    "archived (no author, unpublished): nobody new sees them, and a candidate who has one in their deck can "
    "still answer it.",
]


def _rows(table: Table, user) -> list[dict]:
    query = table.rows(user)
    if query.query.values_select or getattr(query, "_fields", None):
        return list(query)
    return list(query.values())


def collect(user) -> dict[str, list[dict]]:
    """Every table of :data:`TABLES` as a list of row dicts (column -> value), for ``user``."""
    return {table.name: _rows(table, user) for table in TABLES}


def _cell(value):
    if isinstance(value, (dict, list)):
        return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def export_zip(user) -> bytes:
    """One zip: ``data.json`` (every table) and ``<table>.csv`` per table, with a ``README.txt`` naming them."""
    data = collect(user)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data.json", json.dumps({"exported_at": timezone.now(), "tables": data},
                                                 cls=DjangoJSONEncoder, ensure_ascii=False, indent=1))
        for table in TABLES:
            rows = data[table.name]
            columns = list(rows[0]) if rows else [f.attname for f in _model(table.model)._meta.concrete_fields]
            archive.writestr(f"{table.name}.csv", write_csv(columns, ([_cell(r[c]) for c in columns] for r in rows)))
        archive.writestr("README.txt", "Everything you did on LLM Serving Prep, as JSON (data.json) and CSV.\n\n"
                         + "\n".join(f"{t.name}.csv: {t.about} ({len(data[t.name])} rows)" for t in TABLES) + "\n")
    return buffer.getvalue()


def delete_account(user, successor=None) -> None:
    """Delete ``user`` and what :data:`DELETED` lists, keep what :data:`KEPT` lists, in one transaction.

    A coach's cohorts, sets, assignments and questions go to ``successor`` (a coach, checked by
    :func:`home.deletion.successor_named`) or close (``None``), as :data:`COACHING` says, with every member
    told (:func:`home.deletion.settle_coaching`). The log-in records of django-axes are matched by user name
    (:data:`LOG_IN_MODELS`). Reviews go through the review log's DELETE trigger by the marker written here and
    removed before the commit. Raises nothing of its own.
    """
    user_id = user.pk
    with transaction.atomic():
        settle_coaching(user, successor)
        for label in LOG_IN_MODELS:
            _model(label).objects.filter(username=user.get_username()).delete()
        mark_account_deletion(user)
        get_user_model().objects.filter(pk=user_id).delete()
        clear_account_deletion(user_id)
