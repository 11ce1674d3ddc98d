"""Writing a reader's rows: make a table (or part of one) hold exactly the rows read, matched by a key."""

from __future__ import annotations

from typing import Callable

from django.db import models, transaction
from django.db.models import ProtectedError, RestrictedError

from runbook.loading.report import Tally


def sync(model: type[models.Model], rows: list[dict], tally: Tally, *, key: str = "slug",
         scope: models.QuerySet | None = None, m2m: dict[str, Callable[[dict], set[int]]] | None = None,
         protected: Callable[[models.Model], bool] | None = None, warnings: list[str] | None = None) -> None:
    """Make ``scope`` (default: every row of ``model``) hold exactly ``rows``, matched by ``key``.

    ``rows`` are field → value mappings. Rows of ``scope`` whose key is not among
    them are deleted (one by one: a row something must keep, such as a bank item an assignment someone
    started refers to, is unpublished instead, with a warning); a row whose fields already match counts as
    unchanged.
    ``m2m`` maps a many-to-many field to a function giving a row's target ids.
    A ``protected`` row (one written in the app) is left as it is, with a
    warning appended to ``warnings``. Counts go to ``tally``.
    """
    scope = scope if scope is not None else model._default_manager.all()
    wanted = {row[key] for row in rows}
    for obj in scope.exclude(**{f"{key}__in": wanted}):
        try:
            with transaction.atomic():
                obj.delete()
        except (ProtectedError, RestrictedError):
            # Still referred to by what must outlive it: a bank item whose set entry a candidate started (the
            # coaching Work row that hides that work from other coaches). Retire it instead: unpublished, it is
            # no longer offered, and the record of the work stays whole.
            if not hasattr(obj, "published"):
                raise
            if obj.published:
                type(obj)._default_manager.filter(pk=obj.pk).update(published=False)
            if warnings is not None:
                warnings.append(f"{model._meta.verbose_name} '{getattr(obj, key)}' is no longer in the content but "
                                f"an assignment someone started refers to it: unpublished, not deleted.")
        else:
            tally.removed += 1
    existing = {getattr(obj, key): obj for obj in model._default_manager.filter(**{f"{key}__in": wanted})}
    for row in rows:
        row = dict(row)
        relations = {name: ids(row) for name, ids in (m2m or {}).items()}
        obj = existing.get(row[key])
        if obj is not None and protected is not None and protected(obj):
            if warnings is not None:
                warnings.append(f"{model._meta.verbose_name} '{row[key]}' was written in the app: left as it is.")
            continue
        if obj is None:
            obj = model(**row)
            obj.save()
            for name, ids in relations.items():
                getattr(obj, name).set(ids)
            tally.created += 1
            continue
        changed = [name for name, value in row.items() if getattr(obj, name) != value]
        changed_relations = [name for name, ids in relations.items()
                             if set(getattr(obj, name).values_list("pk", flat=True)) != ids]
        if changed:
            for name in changed:
                setattr(obj, name, row[name])
            obj.save()
        for name in changed_relations:
            getattr(obj, name).set(relations[name])
        if changed or changed_relations:
            tally.updated += 1
        else:
            tally.unchanged += 1


def search_text(*parts: str) -> str:
    """The non-empty ``parts`` joined by newlines: a row's text for site search."""
    return "\n".join(part for part in parts if part)
