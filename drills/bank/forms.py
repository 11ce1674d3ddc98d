"""The question bank's filters, as candidates browse it."""

from __future__ import annotations

from django import forms
from django.db.models import Q

from drills.models import BankItem
from runbook.models import Chapter

MAX_QUERY = 200


class BankFilterForm(forms.Form):
    """The bank's filters (all optional); choices come from the published items."""

    q = forms.CharField(required=False, max_length=MAX_QUERY, label="Search",
                        widget=forms.TextInput(attrs={"type": "search", "placeholder": "Words in the question"}))
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *BankItem.KINDS])
    chapter = forms.ChoiceField(required=False)
    track = forms.ChoiceField(required=False)
    topic = forms.ChoiceField(required=False)
    difficulty = forms.TypedChoiceField(required=False, coerce=int, empty_value=None,
                                        choices=[("", "Any difficulty"), *BankItem.DIFFICULTIES])
    role = forms.ChoiceField(required=False, choices=[("", "Any role"), *[(r, r.title()) for r in BankItem.ROLES]])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

        published = BankItem.objects.published()
        chapter_ids = set(published.exclude(chapter=None).values_list("chapter_id", flat=True))
        self.fields["chapter"].choices = [("", "Any chapter")] + [
            (c.slug, f"{c.label} · {c.title}") for c in Chapter.objects.filter(pk__in=chapter_ids).order_by("number")]
        tracks = sorted(set(published.exclude(track="").values_list("track", flat=True)))
        self.fields["track"].choices = [("", "Any track")] + [(t, f"Track {t}") for t in tracks]
        topics = sorted(set(published.exclude(topic="").values_list("topic", flat=True)), key=str.lower)
        self.fields["topic"].choices = [("", "Any topic")] + [(t, t) for t in topics]
        for name, field in self.fields.items():
            small = "form-select" if isinstance(field, forms.ChoiceField) else "form-control"
            css = f"{small} {small}-sm"
            field.widget.attrs.setdefault("class", css)

    def filtered(self, user=None) -> list[BankItem]:
        """The items ``user`` may see (published ones, plus their coaches' own) matching the valid filters."""
        self.is_valid()
        data = self.cleaned_data  # the fields that are valid
        items = BankItem.objects.visible_to(user).select_related("chapter")
        if data.get("kind"):
            items = items.filter(kind=data["kind"])
        if data.get("chapter"):
            items = items.filter(chapter__slug=data["chapter"])
        if data.get("track"):
            items = items.filter(track=data["track"])
        if data.get("topic"):
            items = items.filter(topic=data["topic"])
        if data.get("difficulty"):
            items = items.filter(difficulty=data["difficulty"])
        query = (data.get("q") or "").strip()
        if query:
            condition = Q()
            for word in query.split()[:8]:
                condition &= Q(search_text__icontains=word) | Q(slug__icontains=word) | Q(topic__icontains=word)
            items = items.filter(condition)
        items = list(items.order_by("chapter__number", "position", "slug"))
        if data.get("role"):
            items = [item for item in items if data["role"] in (item.roles or ())]
        return items

    def refusals(self) -> list[str]:
        """One sentence per filter value that was not understood: what was read and what was expected (the valid
        values, e.g. the chapter slugs). Empty when every filter is valid or blank."""
        self.is_valid()
        sentences = []
        for name in self.errors:
            field = self.fields[name]
            read = self.data.get(name, "")
            if isinstance(field, forms.ChoiceField):
                valid = [str(value) for value, _ in field.choices if value != ""]
                expected = f"one of {', '.join(valid)}" if valid else "nothing: none is published"
            else:
                expected = f"at most {MAX_QUERY} characters"
                read = f"{read[:40]}…" if len(read) > 40 else read
            sentences.append(f"The {(field.label or name).lower()} filter read “{read}”; expected {expected}.")
        return sentences

    def active(self) -> dict:
        """The filters in use, by name (for links and the "add these" form)."""
        self.is_valid()
        return {name: value for name, value in self.cleaned_data.items() if value not in ("", None)}
