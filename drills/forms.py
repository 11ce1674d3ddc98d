"""The answer form of a problem: one text box per step, plus when the page was shown."""

from __future__ import annotations

from datetime import datetime, timezone

from django import forms
from django.core import signing

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
            self.fields[spec.key] = forms.CharField(
                label=spec.label, required=False, max_length=10_000,
                widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false",
                                              "inputmode": "text", "class": "form-control answer-input"}),
            )

    def answers(self) -> dict[str, str]:
        """Step key → typed text (blank for an unanswered step)."""
        return {spec.key: self.cleaned_data.get(spec.key, "") for spec in self.specs}
