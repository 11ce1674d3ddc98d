"""Forms of the coach pages (they keep what was typed; errors sit beside their field)."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from calculators.engine.catalog import default_catalog
from calculators.engine.mistakes import MISCONCEPTIONS
from calculators.engine.procedures.inputs import CONTEXT
from calculators.families import FAMILIES
from calculators.forms import field_for
from core.forms import CheckedLengthField
from drills.bank.services import item_title
from drills.models import BankItem, RoundTemplate

from .models import QuestionSet
from .services import FOLLOWUP_CHOICES, CoachingError, check_fixed_inputs, parse_fixed_inputs, unknown_misconceptions


def _lines(text: str) -> list[str]:
    return [line.strip(" -*\t") for line in (text or "").splitlines() if line.strip(" -*\t")]


class QuestionForm(forms.Form):
    """An open question: prompt, model answer (Markdown, live numbers), rubric points, tags, misconception ids."""

    prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), max_length=10_000,
                             help_text="Markdown; shortcodes for live numbers allowed.")
    model_answer = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}), max_length=20_000,
                                   help_text="Markdown; shortcodes for live numbers allowed.")
    rubric = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), max_length=5_000,
                             help_text="One point a good answer makes per line.")
    tags = forms.CharField(required=False, max_length=300, help_text="Comma-separated, e.g. kv-cache, capacity.")
    misconceptions = forms.CharField(required=False, max_length=500,
                                     help_text="Comma-separated ids, e.g. " + ", ".join(list(MISCONCEPTIONS)[:3]))
    difficulty = forms.TypedChoiceField(choices=BankItem.DIFFICULTIES, coerce=int, initial=2)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.widget.attrs.setdefault("class", "form-select" if isinstance(field, forms.ChoiceField)
                                          else "form-control")
            # The template gives the help text and the errors these ids; a reference to an absent
            # element (no errors yet) is ignored by screen readers, so one static value serves both states.
            field.widget.attrs["aria-describedby"] = f"id_{name}_helptext id_{name}_errors"

    @staticmethod
    def _within_shortcode_budget(text: str) -> str:
        """``text`` when it holds at most ``MAX_AUTHORED_SHORTCODES`` shortcodes, else a ValidationError."""
        from runbook.content import check_shortcode_budget
        from runbook.shortcodes import ShortcodeError

        try:
            check_shortcode_budget(text)
        except ShortcodeError as error:
            raise forms.ValidationError(str(error)) from None
        return text

    def clean_prompt(self) -> str:
        return self._within_shortcode_budget(self.cleaned_data["prompt"])

    def clean_model_answer(self) -> str:
        return self._within_shortcode_budget(self.cleaned_data["model_answer"])

    def clean_rubric(self) -> list[str]:
        points = _lines(self._within_shortcode_budget(self.cleaned_data["rubric"]))
        if not points:
            raise forms.ValidationError("Write at least one rubric point.")
        return points

    def clean_tags(self) -> list[str]:
        return [t.strip()[:40] for t in self.cleaned_data["tags"].split(",") if t.strip()][:10]

    def clean_misconceptions(self) -> list[str]:
        ids = [t.strip() for t in self.cleaned_data["misconceptions"].split(",") if t.strip()]
        unknown = unknown_misconceptions(ids)
        if unknown:
            raise forms.ValidationError(f"Unknown misconception id: {', '.join(unknown)}.")
        return ids

    @classmethod
    def initial_for(cls, item: BankItem) -> dict:
        return {"prompt": item.prompt, "model_answer": item.model_answer, "rubric": "\n".join(map(str, item.rubric)),
                "tags": ", ".join((item.details or {}).get("tags", [])),
                "misconceptions": ", ".join(item.misconceptions or []), "difficulty": item.difficulty}


# A set's title is as long as its column allows (the model field declares it; the form and its hint read it).
SET_TITLE_MAX = QuestionSet._meta.get_field("title").max_length


class SetForm(forms.Form):
    """A question set's title and instructions (Markdown); over-long text is reported and kept."""

    title = CheckedLengthField(max_length=SET_TITLE_MAX, help_text=f"At most {SET_TITLE_MAX} characters.",
                               widget=forms.TextInput(attrs={"class": "form-control"}))
    instructions = CheckedLengthField(required=False, max_length=5_000,
                                      widget=forms.Textarea(attrs={"rows": 3, "class": "form-control"}))


class AssignForm(forms.Form):
    """Assign to a cohort or to one candidate; due time; optional time limit in minutes."""

    target = forms.ChoiceField(widget=forms.Select(attrs={"class": "form-select"}))
    due_at = forms.DateTimeField(widget=forms.DateTimeInput(attrs={"type": "datetime-local", "class": "form-control"}))
    time_limit_min = forms.IntegerField(required=False, min_value=1, max_value=600, label="Time limit (minutes)",
                                        help_text="Optional: makes it one timed round.",
                                        widget=forms.NumberInput(attrs={"class": "form-control"}))

    def __init__(self, cohorts, candidates, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = ([("", "Choose…")] + [(f"cohort:{c.pk}", f"Cohort: {c.name}") for c in cohorts]
                                         + [(f"candidate:{u.pk}", f"Candidate: {u.get_username()}")
                                            for u in candidates])
        if not self.is_bound:
            self.initial.setdefault("due_at", (timezone.localtime() + timedelta(days=7)).strftime("%Y-%m-%dT%H:%M"))
        # The typed time is read in the coach's zone (accounts.timezones activates it): say which one it is.
        self.fields["due_at"].label = "Due at"
        self.fields["due_at"].help_text = format_html(
            'In your time zone, {}: <a href="{}">change it</a>.', timezone.get_current_timezone_name(),
            reverse("reviews:settings"))


# --- the three "add to the set" forms of the set page ---------------------------------------------


class _LabelledChoiceField(forms.ModelChoiceField):
    """A model choice whose option text comes from a function (the bank's one-line titles)."""

    def __init__(self, *args, label_of, **kwargs):
        self.label_of = label_of
        super().__init__(*args, **kwargs)

    def label_from_instance(self, obj) -> str:
        return self.label_of(obj)


#: How many suggestions the bank item box offers at once (the htmx search narrows them as one types).
SUGGESTIONS = 20


# The ranks of :func:`search_items`, best first: what the typed text matches in an item.
EXACT, TITLE_PREFIX, TITLE_CONTAINS, SLUG_CONTAINS, TEXT_CONTAINS = range(5)


def match_rank(item: BankItem, text: str) -> int | None:
    """How well ``text`` names ``item`` (:data:`EXACT` … :data:`TEXT_CONTAINS`, lower is better), ``None`` when it
    does not: its title (:func:`~drills.bank.services.item_title`, what the suggestions show) or slug equal to it,
    the title starting with it, the title containing it, the slug containing it, or anywhere in the item's text
    (prompt, model answer, rubric). Case and accents' case are ignored (``casefold``)."""
    wanted = text.casefold()
    title = item_title(item, 500).casefold()
    if title == wanted or item.slug.casefold() == wanted:
        return EXACT
    if title.startswith(wanted):
        return TITLE_PREFIX
    if wanted in title:
        return TITLE_CONTAINS
    if wanted in item.slug.casefold():
        return SLUG_CONTAINS
    if wanted in (item.prompt or "").casefold() or wanted in (item.search_text or "").casefold():
        return TEXT_CONTAINS
    return None


def search_items(queryset, text: str) -> list[tuple[int, BankItem]]:
    """(rank, item) for the items of ``queryset`` that ``text`` names, best first: ranked by :func:`match_rank`
    (title matches before the other fields), ties kept in the queryset's order; at most :data:`SUGGESTIONS` + 1
    (so a caller can tell "more"). Empty ``text``: the queryset's first :data:`SUGGESTIONS`, ranked
    :data:`TEXT_CONTAINS`.

    The database finds every item the text could name (slug, prompt, text, a critique's title, a problem
    template's family title); the ranks are computed here, since a title is made from those fields
    (:func:`~drills.bank.services.item_title`). Text is cut to 100 characters.
    """
    text = (text or "").strip()[:100]
    if not text:
        return [(TEXT_CONTAINS, item) for item in queryset[:SUGGESTIONS]]
    wanted = text.casefold()
    families = [name for name, family in FAMILIES.items() if wanted in family.title.casefold()]
    found = queryset.filter(Q(slug__icontains=text) | Q(prompt__icontains=text) | Q(search_text__icontains=text)
                            | Q(details__title__icontains=text) | Q(kind=BankItem.PROBLEM, family__in=families))
    ranked = [(rank, item) for item in found if (rank := match_rank(item, text)) is not None]
    ranked.sort(key=lambda pair: pair[0])  # stable: the queryset's order within a rank
    return ranked[:SUGGESTIONS + 1]


class _SearchedItemField(_LabelledChoiceField):
    """A bank item typed into a search box: its slug or title (what the suggestions fill in), or its id.

    What was typed resolves to one item by :func:`search_items`: an exact slug, an exact title, or the one item
    a search finds. Several matches or none are a form error naming what was typed.
    """

    def to_python(self, value):
        text = str(value or "").strip()
        if not text:
            return None
        if text.isdecimal() and len(text) < 19:
            found = self.queryset.filter(pk=int(text)).first()
            if found is not None:
                return found
        ranked = search_items(self.queryset, text)
        matches = [item for _, item in ranked]
        exact = [item for rank, item in ranked if rank == EXACT]
        if len(exact) == 1 or len(matches) == 1:  # one exact title or slug, or the one item found
            return (exact or matches)[0]
        if not matches:
            raise forms.ValidationError(self.error_messages["invalid_choice"], code="invalid_choice")
        shown = "; ".join(item.slug for item in matches[:3]) + ("…" if len(matches) > 3 else "")
        count = f"{SUGGESTIONS}+" if len(matches) > SUGGESTIONS else str(len(matches))
        raise forms.ValidationError(f"“{text[:60]}” matches {count} bank items ({shown}): pick one of the suggestions "
                                    "or type its full slug.", code="ambiguous")


class AddItemForm(forms.Form):
    """Add one bank item (a question, a critique drill, a design prompt, a problem template drawn afresh for each
    candidate; the coach's own included).

    The item is typed into a search box: htmx asks :func:`coaching.views.item_search` for suggestions as one
    types (a ``<datalist>``, so the page works without our JavaScript too), and what was typed is resolved by
    title or slug when the form is sent (:class:`_SearchedItemField`).
    """

    item = _SearchedItemField(
        queryset=BankItem.objects.none(), label="Bank item (yours included): type to search", empty_label=None,
        label_of=lambda item: f"[{item.kind}] {item_title(item, 80)}",
        error_messages={"required": "Choose a bank item to add.",
                        "invalid_choice": "No bank item you can see has that title or slug: type a word of it and "
                                          "pick one of the suggestions."},
        widget=forms.TextInput(attrs={"class": "form-control form-control-sm", "list": "bank-item-options",
                                      "autocomplete": "off", "placeholder": "KV cache, roofline, critique…"}))

    def __init__(self, user, *args, **kwargs):
        kwargs.setdefault("auto_id", "add-%s")  # three forms on one page: ids must not clash
        super().__init__(*args, **kwargs)
        self.fields["item"].queryset = BankItem.objects.visible_to(user).order_by("kind", "slug")
        self.fields["item"].widget.attrs.update({
            "hx-get": reverse("coaching:item_search"), "hx-trigger": "input changed delay:250ms",
            "hx-target": "#bank-item-options", "hx-swap": "innerHTML", "hx-sync": "this:replace"})

    def options(self, text: str = "") -> list[tuple[str, str]]:
        """The box's suggestions for ``text`` (the first :data:`SUGGESTIONS` items when empty): (slug, label)."""
        field = self.fields["item"]
        return [(item.slug, field.label_from_instance(item))
                for _, item in search_items(field.queryset, text)[:SUGGESTIONS]]


def _context_field() -> forms.Field:
    """The context limit a template may fix: the calculators' own field for it (``field_for(CONTEXT)``), so it
    reads what they read ("8k" is 8,000 tokens, "2^13" and "8,192 tok" are 8,192) within their bounds (1 to
    10,000,000 tokens); optional here (blank: drawn for each candidate)."""
    field = field_for(CONTEXT)
    field.required = False
    field.label = "Context limit (tokens)"
    field.help_text = "Blank: drawn. As in the calculators: 8192, 8,192 tok, 2^13 or 8k (8,000)."
    field.widget.attrs["class"] = "form-control form-control-sm"
    return field


class AddTemplateForm(forms.Form):
    """Add a problem template, optionally with its model, GPU and context limit fixed (checked by drawing once).

    Other inputs can still be fixed as a JSON object; the fields win over the same keys in it.
    """

    item = _LabelledChoiceField(
        queryset=BankItem.objects.none(), label="Problem template", empty_label=None,
        label_of=lambda item: f"{item.family} — {item_title(item, 80)}",
        error_messages={"required": "Choose a problem template to add.",
                        "invalid_choice": "That problem template does not exist or is not visible to you."},
        widget=forms.Select(attrs={"class": "form-select form-select-sm"}))
    fixed_model = forms.ChoiceField(required=False, label="Model", help_text="Blank: drawn for each candidate.",
                                    widget=forms.Select(attrs={"class": "form-select form-select-sm"}))
    fixed_gpu = forms.ChoiceField(required=False, label="GPU", help_text="Blank: drawn for each candidate.",
                                  widget=forms.Select(attrs={"class": "form-select form-select-sm"}))
    fixed_context = _context_field()
    followups = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=0, label="Follow-ups",
        choices=[("", "None: the problem alone"),
                 *((str(n), f"A chain of {n}: the interviewer changes one input {n} times") for n in FOLLOWUP_CHOICES)],
        help_text="After the problem, which steps move and their new values; done when the chain is answered.",
        widget=forms.Select(attrs={"class": "form-select form-select-sm"}))
    fixed_inputs = forms.CharField(
        required=False, max_length=2_000, label="Other fixed inputs (JSON, optional)",
        widget=forms.TextInput(attrs={"class": "form-control form-control-sm",
                                      "placeholder": '{"model": "llama-3.1-70b", "gpu": "h200-sxm-141gb"}'}))

    def __init__(self, user, *args, **kwargs):
        kwargs.setdefault("auto_id", "add-template-%s")  # three forms on one page: ids must not clash
        super().__init__(*args, **kwargs)
        self.fields["item"].queryset = (BankItem.objects.visible_to(user).filter(kind=BankItem.PROBLEM)
                                        .order_by("kind", "slug"))
        catalog = default_catalog()
        self.fields["fixed_model"].choices = [("", "Drawn each time"), *catalog.model_choices]
        self.fields["fixed_gpu"].choices = [("", "Drawn each time"), *catalog.gpu_choices]

    def clean(self) -> dict:
        """Check the fixed inputs against the chosen template's family (only once a template is chosen)."""
        cleaned = super().clean()
        item = cleaned.get("item")
        if item is not None and "fixed_inputs" in cleaned:
            chosen = {name: cleaned.get(f"fixed_{name}") for name in ("model", "gpu", "context")}
            try:
                fixed = {**parse_fixed_inputs(cleaned["fixed_inputs"], item.family),
                         **{name: value for name, value in chosen.items() if value not in (None, "")}}
                cleaned["fixed_inputs"] = check_fixed_inputs(fixed, item.family)
            except CoachingError as error:
                self.add_error("fixed_inputs" if not any(chosen.values()) else None, str(error))
        return cleaned


class AddRoundForm(forms.Form):
    """Add a round preset (built in, or one of the coach's own copies)."""

    round = forms.ModelChoiceField(
        queryset=RoundTemplate.objects.none(), label="Round preset", empty_label=None,
        error_messages={"required": "Choose a round preset to add.",
                        "invalid_choice": "That round preset does not exist or is not yours."},
        widget=forms.Select(attrs={"class": "form-select form-select-sm"}))

    def __init__(self, user, *args, **kwargs):
        kwargs.setdefault("auto_id", "add-%s")  # three forms on one page: ids must not clash
        super().__init__(*args, **kwargs)
        self.fields["round"].queryset = (RoundTemplate.objects.filter(owner__isnull=True)
                                         | RoundTemplate.objects.filter(owner=user))


def add_form_for(data, user):
    """The add form a POST came from, bound: each of the page's three forms posts its own field names.

    The template form is the only one with ``fixed_inputs`` (even when left empty), the round form the
    only one with ``round``; anything else is the bank item form.
    """
    if "fixed_inputs" in data:
        return AddTemplateForm(user, data)
    if "round" in data:
        return AddRoundForm(user, data)
    return AddItemForm(user, data)
