"""The answer form of a problem (one text box per step, plus when the page was shown) and its follow-up form
(which steps move, then their new values: issue 33 item 1)."""

from __future__ import annotations

from datetime import datetime, timezone

from django import forms
from django.core import signing

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


class AnswerForm(forms.Form):
    """Answers keyed by step; every box is optional (a blank step is graded as unanswered)."""

    started = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, specs, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.specs = specs
        for spec in specs:
            # The box is drawn by one template partial (drills/_answer_step.html#box). Its maxlength only stops a
            # browser: the form does not refuse a longer text, so the answer parser reads it and says what it
            # expects (an answer is at most answers.MAX_LENGTH characters); a form error would leave the step
            # blank and the page would call it blank.
            self.fields[spec.key] = forms.CharField(label=spec.label, required=False)

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

    phase = forms.ChoiceField(choices=[(p, p) for p in PHASES], required=False, widget=forms.HiddenInput)
    link = forms.IntegerField(min_value=0, max_value=16, required=False, widget=forms.HiddenInput)
    carry = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, link: FollowUp, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.link = link
        keys = [(spec.key, spec.label) for spec in link.result.specs]
        self.fields["marked"] = forms.MultipleChoiceField(choices=keys, required=False,
                                                          widget=forms.CheckboxSelectMultiple)
        for spec in link.result.specs:
            self.fields[f"value-{spec.key}"] = forms.CharField(label=spec.label, required=False)  # the box partial

    def marked(self) -> list[str]:
        """The marked step keys, in step order."""
        chosen = set(self.cleaned_data.get("marked") or ())
        return [spec.key for spec in self.link.result.specs if spec.key in chosen]

    def answers(self) -> dict[str, str]:
        """Step key → the typed new value, for the marked steps (blank when none was typed) and for any other
        step whose box was typed in: the engine grades the marked steps' values only, but a typed value is an
        answer (:func:`calculators.engine.followup.answered`; a form left as shown is unanswered)."""
        marked = set(self.marked())
        return {spec.key: text for spec in self.link.result.specs
                if (text := self.cleaned_data.get(f"value-{spec.key}", "") or "") or spec.key in marked}
