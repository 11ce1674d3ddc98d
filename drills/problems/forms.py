"""The answer form of a problem (one text box per step, plus when the page was shown) and its follow-up form
(which steps move, then their new values: issue 33 item 1)."""

from __future__ import annotations

from datetime import datetime, timezone

from django import forms
from django.core import signing
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from calculators.engine.followup import FollowUp

STARTED_SALT = "drills.problem.started"
# A page older than this is still graded, but its time is not trusted.
MAX_AGE_S = 7 * 24 * 3600


def sign_start(moment: datetime) -> str:
    """A tamper-proof token recording when the problem page was rendered."""
    return signing.dumps(moment.timestamp(), salt=STARTED_SALT)


def read_start(token: str) -> datetime | None:
    """The moment signed by :func:`sign_start`, or ``None`` if missing, forged or too old."""
    try:
        stamp = signing.loads(token, salt=STARTED_SALT, max_age=MAX_AGE_S)
    except (signing.BadSignature, TypeError, ValueError):
        return None
    return datetime.fromtimestamp(float(stamp), tz=timezone.utc)


class DirectInputMixin:
    """Render an ``<input>`` widget by formatting a string instead of through the template engine.

    The output is byte for byte what Django's ``django/forms/widgets/input.html`` and ``attrs.html``
    give (attributes in order, ``True`` bare, ``False`` left out, values escaped), and the context is
    still Django's own ``get_context`` (``maxlength``, ``aria-invalid`` …). Why: a graded submission
    renders a box per step, and the template engine's include of ``attrs.html`` per box was a third of
    the fragment's rendering time. Only for widgets using those two templates (text and hidden inputs).
    """

    def _render(self, template_name, context, renderer=None):
        widget = context["widget"]
        # conditional_escape is what {{ }} applies (already-safe values pass as they are).
        parts = [f'<input type="{conditional_escape(widget["type"])}" name="{conditional_escape(widget["name"])}"']
        if widget["value"] is not None:
            parts.append(f' value="{conditional_escape(widget["value"])}"')
        parts.append(_attributes(widget["attrs"]))
        parts.append(">")
        return mark_safe("".join(parts))


def _attributes(attrs: dict) -> str:
    """``attrs`` as Django's ``attrs.html`` writes them: in order, ``True`` bare, ``False`` left out, escaped."""
    parts = []
    for name, value in attrs.items():
        if value is True:
            parts.append(f" {conditional_escape(name)}")
        elif value is not False:
            parts.append(f' {conditional_escape(name)}="{conditional_escape(value)}"')
    return "".join(parts)


class DirectTextInput(DirectInputMixin, forms.TextInput):
    """A text box rendered without the template engine (:class:`DirectInputMixin`)."""


class DirectHiddenInput(DirectInputMixin, forms.HiddenInput):
    """A hidden input rendered without the template engine (:class:`DirectInputMixin`)."""


class DirectTextarea(forms.Textarea):
    """A text area rendered by formatting a string, byte for byte Django's ``textarea.html`` (a newline after
    the opening tag, the value escaped), for the same reason as :class:`DirectInputMixin`: the review page
    renders one on every open card."""

    def _render(self, template_name, context, renderer=None):
        widget = context["widget"]
        value = conditional_escape(widget["value"]) if widget["value"] else ""
        return mark_safe(f'<textarea name="{conditional_escape(widget["name"])}"{_attributes(widget["attrs"])}>\n'
                         f'{value}</textarea>')


class AnswerForm(forms.Form):
    """Answers keyed by step; every box is optional (a blank step is graded as unanswered)."""

    started = forms.CharField(widget=DirectHiddenInput, required=False)

    def __init__(self, specs, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.specs = specs
        for spec in specs:
            # The box's maxlength only stops a browser: the form does not refuse a longer text, so the answer
            # parser reads it and says what it expects (an answer is at most answers.MAX_LENGTH characters);
            # a form error would leave the step blank and the page would call it blank.
            self.fields[spec.key] = forms.CharField(
                label=spec.label, required=False,
                widget=DirectTextInput(attrs={"autocomplete": "off", "spellcheck": "false", "inputmode": "text",
                                              "class": "form-control answer-input", "maxlength": "10000"}),
            )

    def answers(self) -> dict[str, str]:
        """Step key → typed text (blank for an unanswered step)."""
        return {spec.key: self.cleaned_data.get(spec.key, "") for spec in self.specs}


CARRY_SALT = "drills.followup.carry"
PHASES = ("start", "marks", "values")


def sign_carry(own: dict[str, float]) -> str:
    """A tamper-proof token of a visitor's values so far (nothing of theirs is stored)."""
    return signing.dumps({key: float(value) for key, value in own.items()}, salt=CARRY_SALT, compress=True)


def read_carry(token: str | None) -> dict[str, float]:
    """The values signed by :func:`sign_carry`, or none (no token, or a forged one: nothing is carried)."""
    if not token:
        return {}
    try:
        carried = signing.loads(token, salt=CARRY_SALT)
    except (signing.BadSignature, TypeError, ValueError):
        return {}
    if not isinstance(carried, dict):
        return {}
    return {str(key): float(value) for key, value in carried.items() if isinstance(value, (int, float))}


class FollowUpForm(forms.Form):
    """``phase`` (``start``: show the marks; ``marks``: the marks are in, ask the values; ``values``: grade),
    ``link`` (the chain's position), ``marked`` (the step keys said to move), one ``value-<key>`` box per step,
    and ``carry`` (a visitor's signed values so far). Every box is optional: a marked step left blank is graded
    unanswered."""

    phase = forms.ChoiceField(choices=[(p, p) for p in PHASES], required=False, widget=DirectHiddenInput)
    link = forms.IntegerField(min_value=0, max_value=16, required=False, widget=DirectHiddenInput)
    carry = forms.CharField(required=False, widget=DirectHiddenInput)

    def __init__(self, link: FollowUp, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.link = link
        keys = [(spec.key, spec.label) for spec in link.result.specs]
        self.fields["marked"] = forms.MultipleChoiceField(choices=keys, required=False,
                                                          widget=forms.CheckboxSelectMultiple)
        for spec in link.result.specs:
            self.fields[f"value-{spec.key}"] = forms.CharField(
                label=spec.label, required=False,
                widget=DirectTextInput(attrs={"autocomplete": "off", "spellcheck": "false",
                                              "class": "form-control answer-input", "maxlength": "10000"}))

    def marked(self) -> list[str]:
        """The marked step keys, in step order."""
        chosen = set(self.cleaned_data.get("marked") or ())
        return [spec.key for spec in self.link.result.specs if spec.key in chosen]

    def answers(self) -> dict[str, str]:
        """Step key → the typed new value, for the marked steps."""
        return {key: self.cleaned_data.get(f"value-{key}", "") or "" for key in self.marked()}
