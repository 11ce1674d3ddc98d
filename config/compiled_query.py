"""A single-row model read whose SQL is compiled once per process: :class:`CompiledGet`.

Django builds and compiles a queryset's SQL again on every evaluation. For the review answer's card (the card,
its question, the question's chapter and the owner's review settings: four joins, twenty-eight columns) the
compilation took 0.6 ms of the read's 1.6 ms, measured in-process on PostgreSQL, and the read is most of what
the reveal fragment does of its own. :class:`CompiledGet` compiles the queryset once, with marker values where
the per-call values go, and then only executes the SQL with the real values, building the instances with the
very machinery a queryset uses (the compiler's converters, ``Model.from_db`` and the ``select_related``
populators of ``django.db.models.query``), so a row reads back exactly as ``queryset.get()`` would give it
(``tests/reviews/test_compiled_query.py`` compares them).

It relies on the compiler's internals (``select``, ``klass_info``), which are not a public API: Django is
pinned to 5.2 LTS, and the test above fails if a release changes them.
"""

from __future__ import annotations

from typing import Callable

from django.core.exceptions import ImproperlyConfigured
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

# Values no real key takes: the positions they land at in the compiled parameters are where a call's values go.
_MARKER_BASE = -(2**62) + 7919
_KEY_MIN, _KEY_MAX = -(2**63), 2**63 - 1  # a 64-bit key column's range


class CompiledGet:
    """``build(*values).get()``, with the SQL compiled on first use for each database alias.

    ``build`` takes ``arity`` integers (primary keys, foreign key ids) and returns the queryset, filtered by
    them; every other value in it must be fixed. Calling the instance with ``arity`` integers returns the one
    matching instance, with its ``select_related`` objects and deferred fields as the queryset would load
    them. It raises the model's ``DoesNotExist`` when nothing matches (or a value is outside a 64-bit key's
    range), ``MultipleObjectsReturned`` when more than one row does, and, at the first call,
    ``ImproperlyConfigured`` if a value of ``build`` does not reach the SQL as a parameter exactly once.
    """

    def __init__(self, build: Callable[..., QuerySet], arity: int):
        self.build, self.arity = build, arity
        self._compiled: dict[str, tuple] = {}
        self._default_alias: str | None = None

    def _compile(self, alias: str) -> tuple:
        markers = [_MARKER_BASE - index for index in range(self.arity)]
        queryset = self.build(*markers).order_by()[:2]  # as get() does: no ordering, and two rows tell "several"
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()  # also fills compiler.select and klass_info, as executing would
        if any(list(params).count(marker) != 1 for marker in markers):
            raise ImproperlyConfigured(f"{self.build!r}: each value must reach the SQL once as a parameter.")
        slots = [list(params).index(marker) for marker in markers]
        select, klass_info = compiler.select, compiler.klass_info
        first, last = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        init_list = [column[0].target.attname for column in select[first:last]]
        converters = compiler.get_converters([column[0] for column in select[:compiler.col_count]])
        populators = get_related_populators(klass_info, select, alias)
        compiled = (sql, list(params), slots, compiler, converters, klass_info["model"], first, last, init_list,
                    populators)
        self._compiled[alias] = compiled
        return compiled

    def __call__(self, *values: int, using: str | None = None) -> Model:
        if len(values) != self.arity:
            raise TypeError(f"{self.arity} values expected, {len(values)} given.")
        if using is None:
            if self._default_alias is None:  # the router's database for reading the queryset's model
                self._default_alias = self.build(*([0] * self.arity)).db
            using = self._default_alias
        alias = using
        (sql, params, slots, compiler, converters, model, first, last, init_list,
         populators) = self._compiled.get(alias) or self._compile(alias)
        params = list(params)
        for slot, value in zip(slots, values):
            value = int(value)
            if not _KEY_MIN <= value <= _KEY_MAX:  # no row has it (and SQLite cannot even bind it), as get() says
                raise model.DoesNotExist(f"{model._meta.object_name} matching query does not exist.")
            params[slot] = value
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if not rows:
            raise model.DoesNotExist(f"{model._meta.object_name} matching query does not exist.")
        if len(rows) > 1:
            raise model.MultipleObjectsReturned(f"get() returned more than one {model._meta.object_name}.")
        row = next(iter(compiler.apply_converters(rows, converters))) if converters else rows[0]
        instance = model.from_db(alias, init_list, row[first:last])
        for populator in populators:
            populator.populate(row, instance)
        return instance
