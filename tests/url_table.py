"""Every URL pattern of the site, and what the fault tests do with it (shared by the fuzz and CSRF tests).

:func:`url_patterns` walks ``django.urls.get_resolver()``; :data:`TABLE` says,
for every named pattern, whether the view accepts POST (:class:`Post`), binds
a form to its query string (:class:`Get`), or is left out and why
(:class:`Skip`). ``tests/config/test_fuzz_forms.py`` fails when a pattern is missing
from the table, so a new URL cannot escape the fuzzing and the CSRF audit.

:func:`build_world` creates the real objects the URLs name (cards, rounds,
sets, assignments, critique attempts, …) so that the fuzzed requests reach
the views' code rather than a 404, and lists the form field names that
depend on data (a problem's step keys, a calculator family's inputs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Iterator

from django.urls import URLPattern, URLResolver, get_resolver

# Patterns under these prefixes are not in TABLE: Django's admin is Django's own
# code (staff only, its own forms and CSRF checks; the CSRF test covers its login),
# and the JSON API is fuzzed against its OpenAPI schema by tests/api/test_schemathesis.py.
SKIPPED_PREFIXES = {
    "admin/": "Django's admin: Django's own views and forms, staff only (CSRF: see tests/config/test_csrf.py)",
    "api/v1/": "the JSON API: fuzzed against its OpenAPI schema by tests/api/test_schemathesis.py",
}


@dataclass(frozen=True)
class Post:
    """A view that accepts POST.

    ``fields``: the form field names it reads (the fuzz adds data-dependent
    ones from the world and random extra keys). ``echo``: the text fields a
    form error must render back with what the user typed. ``always_echo``: the
    page re-renders the form on every POST (valid or not), so the typed text
    must always come back. ``get_query``: the view also binds GET parameters.
    """

    fields: tuple[str, ...] = ()
    echo: tuple[str, ...] = ()
    always_echo: bool = False
    get_query: tuple[str, ...] = ()


@dataclass(frozen=True)
class Get:
    """A safe-method view; ``query`` names the query-string fields its form binds (fuzzed)."""

    query: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skip:
    """Not fuzzed, for ``reason``."""

    reason: str


ANSWER = ("started",)  # plus the problem's step keys, from the world
OPEN = ("version", "started", "answer", "said_aloud")
ENDPOINT = ("base_url", "model", "api_key", "forget_key")

TABLE: dict[str, Post | Get | Skip] = {
    # site
    "home": Get(),
    "healthz": Get(),
    "favicon": Get(),
    "floor": Get(),
    "floor_write": Post(()),
    # accounts (Django's auth views, and our sign-up)
    "start": Post(("time_zone", "path")),
    "signup": Post(("username", "email", "password1", "password2"), echo=("username", "email")),
    "login": Post(("username", "password", "next"), echo=("username",)),
    "logout": Post(("next",)),
    "password_change": Post(("old_password", "new_password1", "new_password2")),
    "password_change_done": Get(),
    "password_reset": Post(("email",), echo=("email",)),
    "password_reset_done": Get(),
    "password_reset_confirm": Post(("new_password1", "new_password2")),
    "password_reset_complete": Get(),
    # a person's own data (home/urls_data.py)
    "account:overview": Get(),
    "account:export": Get(),
    "account:delete": Post(("password",)),
    "account:leave": Post(()),
    # calculators: the form binds the query string (htmx recomputes with GET), or the POST body when a
    # config.json is pasted (static/js/calculator.js): too long for an address
    "calculators:index": Get(),
    "calculators:calculator": Post(("embed", "config", "previous"), get_query=("embed", "config", "previous")),
    # the simulator: the form binds the query string; each request runs at most one rate
    "simulator:page": Get(("model", "gpu", "gpus", "weights_dtype", "kv_dtype", "prompt_tokens", "prompt_dist",
                           "output_tokens", "output_dist", "prefix_fraction", "arrival", "cv", "duration_s",
                           "ttft_slo_ms", "tpot_slo_ms", "replicas", "router", "max_batched_tokens",
                           "max_num_seqs", "bandwidth_efficiency", "mfu", "capacity_policy", "seed", "sweep",
                           "sweep_axis", "concurrency_sweep", "think_time_s", "pp", "microbatches", "show")),
    "simulator:fidelity": Get(),  # a fixed table from fixtures/calibration/validation.json
    # drills
    "drills:index": Get(),
    "drills:design": Get(),
    "drills:design_answer": Post(("answer",)),
    "drills:critique": Post(("flag", "started"), ),
    "drills:critique_attempt": Get(),
    "drills:critique_assess": Post(("from_grading",)),
    "drills:critique_grade": Post(()),
    "drills:new": Post(("seed",), get_query=("seed",)),
    "drills:problem": Post(ANSWER, echo=(), always_echo=True),
    "drills:followup": Post(("phase", "link", "carry", "marked"), get_query=("link",)),
    "drills:followup-drawn": Post(("phase", "link", "carry", "marked"), get_query=("seed", "link")),
    # question bank and reviews
    "reviews:bank": Get(("q", "kind", "chapter", "track", "topic", "difficulty", "role", "page")),
    "reviews:bank_apkg": Get(("q", "kind", "chapter", "track", "topic", "difficulty", "role")),
    "reviews:deck_add": Post(("item", "chapter", "track", "filtered", "via", "next", "q", "kind", "topic", "confirmed",
                              "difficulty", "role")),
    "reviews:deck_remove": Post(("item", "next")),
    "reviews:deck_undo": Post(("next",)),
    "reviews:bank_item": Get(),
    "reviews:review": Get(),
    "reviews:card": Get(),
    "reviews:reveal": Post(OPEN, echo=("answer",)),
    "reviews:suggest": Post(("ticked",)),
    "reviews:rate": Post(OPEN + ("ticked", "rating"), echo=("answer",)),
    "reviews:answer": Post(ANSWER + ("version",)),
    "reviews:result": Get(),
    "reviews:settings": Post(("interview_date", "time_zone", "digest", "desired_retention"),
                             echo=("interview_date", "desired_retention")),
    "reviews:export_deck": Get(),
    "reviews:export_history": Get(),
    "reviews:progress": Get(),
    # lab
    "lab:index": Post(("model", "gpu", "gpus", "weights_dtype", "kv_dtype", "engine_flags", "startup_gib",
                       "decode_tok_s", "knee_batch", "preempt_pct", "prefill_ms", "prompt_tokens", "startup_log"),
                      echo=("engine_flags", "startup_gib", "decode_tok_s", "knee_batch", "preempt_pct",
                            "prefill_ms", "prompt_tokens", "gpus")),
    "lab:run": Get(),
    "lab:calibrate": Post(("model", "gpu", "gpus", "weights_dtype", "kv_dtype", "engine", "output", "name", "save"),
                          echo=("output",)),
    "lab:calibration": Get(),
    "lab:calibration_apply": Post(()),
    "lab:calibration_stop": Post(()),
    # timed rounds
    "rounds:index": Get(),
    "rounds:start": Post(()),
    "rounds:round": Get(),
    "rounds:clock": Get(),
    "rounds:finish": Post(("confirm",)),
    "rounds:confirm_finish": Get(),
    "rounds:again": Post(()),
    "rounds:report": Get(),
    "rounds:deck": Post(("item",)),
    "rounds:item": Get(),
    "rounds:save": Post(("scratch", "answer", "said_aloud", "ticked", "flag")),
    "rounds:reveal": Post(("scratch", "answer", "said_aloud")),
    "rounds:submit": Post(("version", "scratch", "answer", "said_aloud", "ticked", "self_score", "flag")),
    # coaching
    "coaching:dashboard": Get(("export",)),
    "coaching:dashboard_tables": Get(),
    "coaching:cohort_new": Post(("name",)),
    "coaching:cohort": Get(("export",)),
    "coaching:cohort_invite": Post(()),
    "coaching:cohort_remove": Post(()),
    "coaching:cohort_endpoint": Post(ENDPOINT, echo=("base_url", "model")),
    "coaching:cohort_endpoint_remove": Post(()),
    "coaching:share_calibration": Post(("calibration",)),
    "coaching:shared_calibrations": Get(),
    "coaching:apply_shared_calibration": Post(()),
    "coaching:candidate": Get(("export",)),
    "coaching:attempt": Get(),
    "coaching:review": Get(),
    "coaching:assignment": Get(("export",)),
    "coaching:questions": Get(("q",)),
    "coaching:question_new": Post(("prompt", "model_answer", "rubric", "tags", "misconceptions", "difficulty"),
                                  echo=("prompt", "model_answer", "rubric", "tags", "misconceptions")),
    "coaching:question_preview": Post(("field", "prompt", "model_answer")),
    "coaching:question_copy": Post(("item",)),
    "coaching:question_edit": Post(("prompt", "model_answer", "rubric", "tags", "misconceptions", "difficulty"),
                                   echo=("prompt", "model_answer", "rubric", "tags", "misconceptions")),
    "coaching:item_search": Get(("item",)),
    "coaching:sets": Get(),
    "coaching:set_new": Post(("title", "instructions"), echo=("title", "instructions")),
    "coaching:set": Post(("title", "instructions"), echo=("title", "instructions")),
    "coaching:set_add": Post(("item", "round", "fixed_inputs"), echo=("fixed_inputs",)),
    "coaching:entry_remove": Post(()),
    "coaching:entry_move": Post(("direction",)),
    "coaching:set_assign": Post(("target", "due_at", "time_limit_min"), echo=("due_at", "time_limit_min")),
    "coaching:my_assignments": Get(),
    "coaching:my_assignment": Get(),
    "coaching:start_timed": Post(()),
    "coaching:start_entry": Post(()),
    "coaching:invitation": Post(()),
    # open answers graded by the user's own model (llm_grading)
    "llm_grading:settings": Post(ENDPOINT, echo=("base_url", "model")),
    "llm_grading:remove": Post(()),
    "llm_grading:grading": Get(("mode",)),
    "llm_grading:retry": Post(("mode",)),
    "llm_grading:accept": Post(("rating",)),
    # runbook
    "runbook:index": Get(),
    "runbook:chapter": Get(),
    "runbook:glossary": Get(("q",)),
    "runbook:errata": Get(),
    "runbook:reading": Get(),
    "runbook:search": Get(("q",)),
}


def _walk(patterns, prefix: str = "", namespace: str | None = None) -> Iterator[tuple[str, str | None, object]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = entry.namespace
            joined = f"{namespace}:{inner}" if namespace and inner else (inner or namespace)
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern), joined)
        elif isinstance(entry, URLPattern):
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
            yield prefix + str(entry.pattern), name, entry.callback


def url_patterns() -> list[tuple[str, str | None, object]]:
    """``(route, name, view)`` of every URLconf pattern, e.g. ``("review/card/<int:pk>/", "reviews:card", …)``."""
    return list(_walk(get_resolver().url_patterns))


def skipped_prefix(route: str) -> str | None:
    """The reason a route under a skipped prefix is not in :data:`TABLE`, else ``None``."""
    return next((reason for prefix, reason in SKIPPED_PREFIXES.items() if route.startswith(prefix)), None)


def site_patterns() -> dict[str, str]:
    """Name → route of every pattern that :data:`TABLE` must describe (all but the skipped prefixes)."""
    return {name or route: route for route, name, _ in url_patterns() if skipped_prefix(route) is None}


def post_endpoints() -> list[str]:
    """The names of every view that accepts POST."""
    return [name for name, entry in TABLE.items() if isinstance(entry, Post)]


def fill(route: str, kwargs: dict) -> str:
    """The path of ``route`` (``"review/card/<int:pk>/"``) with ``kwargs`` put in (already URL-safe text)."""
    import re

    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(kwargs[m.group(1)]), route)


@dataclass
class World:
    """Real objects for the URLs, and the data-dependent form fields.

    ``kwargs``: URL name → list of path-argument dicts that name real objects
    (the candidate's own, and others' where a stranger's id must be refused).
    ``fields``: URL name → extra field names. ``echo``: URL name → extra echoed
    fields. ``pool``: ids and slugs of real objects, fuzzed into every field.
    """

    kwargs: dict[str, list[dict]] = field(default_factory=dict)
    fields: dict[str, list[str]] = field(default_factory=dict)
    echo: dict[str, list[str]] = field(default_factory=dict)
    pool: list[str] = field(default_factory=list)
    objects: SimpleNamespace = field(default_factory=SimpleNamespace)


CRITIQUE_DETAILS = {
    "title": "A tiny design doc",
    "lines": ["**Design**", "Weights: 140 GB.", "KV per token: 2 × 80 × 64 × 128 × 2 bytes.",
              "So 20 GiB per conversation.", "Roll out by restarting everything at once."],
    "planted": [
        {"line": 3, "category": "gqa-ignored", "label": "Query heads for KV heads", "explanation": "Use 8 KV heads.",
         "corrected": "2 × 80 × 8 × 128 × 2", "carried": [4]},
        {"line": 5, "category": "no-rollout-plan", "label": "Big-bang rollout", "explanation": "Roll gradually.",
         "corrected": "A rolling restart."},
    ],
}


def build_world(candidate, coach) -> World:
    """Create a small site around ``candidate`` and ``coach`` (needs the database) and describe it.

    The coach has a cohort with the candidate in it, an invitation, a set of an
    open question and a ladder template, assigned to the cohort. The candidate
    has an open card and a problem-template card, a critique attempt, a lab-free
    history and two started rounds (a phone screen: worked and open items; a
    critique round). A stranger (``bob``) owns a card and a round of his own.
    """
    from datetime import timedelta

    from django.utils import timezone

    from calculators.families import FAMILIES
    from calculators.forms import CalculatorForm
    from coaching import services
    from coaching.models import QuestionSet
    from drills.bank.problem_templates import sync_problem_templates
    from drills.critique.services import grade_critique
    from drills.models import BankItem, Card, CritiqueAttempt
    from drills.problems.generation import create_problem
    from drills.reviews.scheduling import add_to_deck
    from drills.reviews.services import problem_for
    from drills.rounds.presets import sync_presets
    from drills.rounds.services import start_round
    from tests.factories import BankItemFactory, ChapterFactory, UserFactory

    now = timezone.now()
    chapter = ChapterFactory(number=6, slug="06-kv-cache", track="B", title="The KV cache")

    def item(slug, kind=BankItem.OPEN, **extra):
        return BankItemFactory(slug=slug, kind=kind, model_answer=f"The answer of {slug}.",
                               rubric=["Factor 2 for K and V", "KV heads not query heads"], chapter=chapter, **extra)

    opens = [item("kv-formula"), item("kv-paged"), item("cost-per-token", roles=["manager"])]
    critique = item("tiny-doc", BankItem.CRITIQUE, details=CRITIQUE_DETAILS)
    design = item("design-chat", BankItem.DESIGN, details={"title": "Chat", "levels": {"mid": ["Weights"]}})
    sync_problem_templates()
    ladder = BankItem.objects.get(kind=BankItem.PROBLEM, family="ladder")

    bob = UserFactory(username="bob")
    add_to_deck(candidate, [opens[0], ladder], now=now)
    add_to_deck(bob, [opens[1]], now=now)
    open_card = Card.objects.get(user=candidate, item=opens[0])
    problem_card = Card.objects.get(user=candidate, item=ladder)
    bob_card = Card.objects.get(user=bob, item=opens[1])
    card_problem = problem_for(problem_card)

    problem = create_problem("ladder", seed=7, user=candidate)
    grade = grade_critique(CRITIQUE_DETAILS, {3: "query heads used", 2: "fine"})
    attempt = CritiqueAttempt.record(critique, candidate, grade)

    sync_presets()
    phone = start_round(candidate, "phone", now)
    critique_round = start_round(candidate, "critique", now)
    bob_round = start_round(bob, "capacity", now)

    cohort = services.create_cohort(coach, "Spring")
    invitation = services.invite(cohort)
    services.accept_invitation(invitation, candidate)
    question_set = QuestionSet.objects.create(coach=coach, title="Week 1", instructions="Do it *carefully*.")
    services.add_entry(question_set, item=opens[2])
    services.add_entry(question_set, item=ladder, fixed_inputs={"model": "llama-3.1-70b"})
    entries = list(question_set.entries.all())
    assignment = services.assign(question_set, coach, cohort=cohort, due_at=now + timedelta(days=2), now=now)
    own_question = services.save_question(coach, {
        "prompt": "Why does GQA shrink the **KV cache**?", "model_answer": "Fewer KV heads.",
        "rubric": ["KV heads not query heads"], "tags": ["kv-cache"], "misconceptions": [], "difficulty": 2})

    from calculators.models import Calibration
    from coaching.models import SharedCalibration

    def calibration(owner, name):
        return Calibration.objects.create(
            owner=owner, name=name, model="llama-3.1-8b", gpu="h100-sxm5-80gb", gpus=1, weights_dtype="bf16",
            kv_dtype="bf16", engine="vllm", values={"step_overhead_ms": 1.5, "bandwidth_efficiency": 0.8,
                                                    "prefill_mfu": 0.6},
            fit={"ranges": {"prompt tokens": [512, 4096], "output tokens": [128, 128]}}, source_format="typed",
            source_text="input=512 output=128 concurrency=1 tpot=7.52\ninput=4096 output=128 concurrency=1 tpot=7.7")

    own_calibration = calibration(candidate, "Mine")
    coach_calibration = calibration(coach, "The coach's")
    SharedCalibration.objects.create(cohort=cohort, calibration=coach_calibration)

    world = World()
    k = world.kwargs
    k["password_reset_confirm"] = [{"uidb64": "MQ", "token": "set-password"}, {"uidb64": "zz", "token": "x-y"}]
    k["calculators:calculator"] = [{"family": slug} for slug in FAMILIES]
    k["drills:design"] = [{"slug": design.slug}]
    k["drills:critique"] = [{"slug": critique.slug}]
    k["drills:critique_attempt"] = k["drills:critique_assess"] = [{"slug": critique.slug, "pk": attempt.pk}]
    k["drills:critique_grade"] = [{"slug": critique.slug, "pk": attempt.pk}]
    k["drills:new"] = [{"family": "ladder"}, {"family": "roofline"}, {"family": "no-such-family"}]
    k["drills:problem"] = k["drills:followup"] = [{"family": "ladder", "pk": problem.pk}]
    k["drills:followup-drawn"] = [{"family": "ladder"}, {"family": "no-such-family"}]
    k["reviews:bank_item"] = [{"slug": opens[0].slug}, {"slug": ladder.slug}]
    for name in ("card", "reveal", "suggest", "rate", "answer"):
        k[f"reviews:{name}"] = [{"pk": open_card.pk}, {"pk": problem_card.pk}, {"pk": bob_card.pk}]
    k["reviews:result"] = [{"pk": 1}]
    k["lab:run"] = [{"pk": 1}]
    k["lab:calibration"] = k["lab:calibration_apply"] = [{"pk": own_calibration.pk}, {"pk": coach_calibration.pk}]
    k["coaching:share_calibration"] = [{"pk": cohort.pk}]
    k["coaching:apply_shared_calibration"] = [{"pk": coach_calibration.pk}, {"pk": own_calibration.pk}]
    k["rounds:start"] = [{"slug": slug} for slug in ("capacity", "phone", "critique", "weak", "manager")]
    for name in ("round", "clock", "finish", "confirm_finish", "report", "deck"):
        k[f"rounds:{name}"] = [{"pk": phone.pk}, {"pk": critique_round.pk}, {"pk": bob_round.pk}]
    for name in ("item", "save", "reveal", "submit", "again"):
        k[f"rounds:{name}"] = ([{"pk": phone.pk, "position": p} for p in (1, 2, 3, 4)] +
                               [{"pk": critique_round.pk, "position": 1}, {"pk": bob_round.pk, "position": 1}])
    for name in ("cohort", "cohort_invite"):
        k[f"coaching:{name}"] = [{"pk": cohort.pk}]
    k["coaching:cohort_remove"] = [{"pk": cohort.pk, "user_pk": candidate.pk}, {"pk": cohort.pk, "user_pk": bob.pk}]
    k["coaching:candidate"] = [{"pk": candidate.pk}, {"pk": bob.pk}]
    k["account:leave"] = [{"pk": cohort.pk}, {"pk": cohort.pk + 1000}]
    k["coaching:attempt"] = [{"pk": 1}]
    k["coaching:review"] = [{"pk": 1}]
    k["coaching:assignment"] = [{"pk": assignment.pk}]
    k["coaching:question_edit"] = [{"pk": own_question.pk}, {"pk": opens[0].pk}]
    for name in ("set", "set_add", "set_assign"):
        k[f"coaching:{name}"] = [{"pk": question_set.pk}]
    for name in ("entry_remove", "entry_move"):
        k[f"coaching:{name}"] = [{"pk": question_set.pk, "entry_pk": entry.pk} for entry in entries]
    for name in ("my_assignment", "start_timed"):
        k[f"coaching:{name}"] = [{"pk": assignment.pk}]
    k["coaching:start_entry"] = [{"pk": assignment.pk, "entry_pk": entry.pk} for entry in entries]
    k["coaching:invitation"] = [{"token": invitation.token}, {"token": "not-a-token"}]
    k["runbook:chapter"] = [{"slug": chapter.slug}]
    k["coaching:cohort_endpoint"] = k["coaching:cohort_endpoint_remove"] = [{"pk": cohort.pk}]
    k["drills:design_answer"] = [{"slug": design.slug}]
    for name in ("grading", "retry", "accept"):
        k[f"llm_grading:{name}"] = [{"pk": 1}]

    problem_keys = [spec.key for spec in problem.solve().specs]
    card_keys = [spec.key for spec in card_problem.solve().specs]
    round_keys = sorted({spec.key for ri in phone.items.all() if ri.problem for spec in ri.problem.solve().specs})
    world.fields["drills:problem"] = problem_keys
    world.echo["drills:problem"] = problem_keys
    world.fields["drills:followup"] = world.fields["drills:followup-drawn"] = [f"value-{key}" for key in problem_keys]
    world.fields["reviews:answer"] = card_keys
    world.echo["reviews:answer"] = card_keys
    for name in ("rounds:save", "rounds:submit", "rounds:reveal"):
        world.fields[name] = round_keys + ["1", "3", "5"]
    world.fields["drills:critique"] = ["why_1", "why_3", "why_5"]
    world.fields["drills:critique_assess"] = ["rating_2", "rating_3", "rating_5"]
    calc_fields = sorted({name for slug, family in FAMILIES.items() for name in CalculatorForm(family).fields})
    world.fields["calculators:calculator"] = calc_fields

    world.pool = [str(v) for v in (
        candidate.pk, coach.pk, bob.pk, open_card.pk, problem_card.pk, bob_card.pk, ladder.pk, opens[0].pk,
        critique.pk, phone.pk, bob_round.pk, question_set.pk, entries[0].pk, cohort.pk, assignment.pk,
        own_question.pk, own_calibration.pk, coach_calibration.pk, f"cohort:{cohort.pk}", f"candidate:{candidate.pk}",
        ladder.slug, opens[0].slug,
        opens[1].slug, critique.slug, chapter.slug, "B", "capacity", "llama-3.1-8b", "h100-sxm-80gb",
        "/review/", "https://evil.example/", "//evil.example", card_problem.pk)]
    world.objects = SimpleNamespace(
        candidate=candidate, coach=coach, bob=bob, open_card=open_card, problem_card=problem_card,
        problem=problem, attempt=attempt, phone=phone, critique_round=critique_round, cohort=cohort,
        invitation=invitation, question_set=question_set, entries=entries, assignment=assignment,
        own_question=own_question, ladder=ladder, critique=critique, own_calibration=own_calibration,
        coach_calibration=coach_calibration)
    return world
