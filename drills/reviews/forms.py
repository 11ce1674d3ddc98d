"""Forms of the review pages: an open question's answer and rating, and the candidate's review settings."""

from __future__ import annotations

import zoneinfo
from datetime import timedelta

from django import forms

from accounts.models import validate_time_zone
from accounts.timezones import set_time_zone, time_zone_choices, zone_name_of, zone_names
from drills.models import ReviewLog, ReviewSettings
from drills.reviews.scheduling import calendar_today

# The furthest interview date the settings take, in days after the candidate's today: two years is past any
# interview a candidate prepares for now, and it keeps every forecast's date arithmetic far inside Python's calendar
# (year 9999 overflowed the home, review and progress pages).
INTERVIEW_MAX_DAYS_AHEAD = 730

RATING_CHOICES = [(str(value), label) for value, label in ReviewLog.RATINGS] + [("auto", "From my ticks")]


class OpenAnswerForm(forms.Form):
    """What the candidate answered before revealing the model answer."""

    version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)
    started = forms.CharField(widget=forms.HiddenInput, required=False)
    answer = forms.CharField(required=False, max_length=20_000, label="Your answer",
                             widget=forms.Textarea(attrs={"rows": 7, "class": "form-control",
                                                          "placeholder": "Write it as you would say it: the numbers, "
                                                                         "the trade-off, the failure mode."}))
    said_aloud = forms.BooleanField(required=False, label="I said it out loud instead")

    def clean(self):
        data = super().clean()
        if not (data.get("answer") or "").strip() and not data.get("said_aloud"):
            raise forms.ValidationError("Write your answer, or tick “I said it out loud”, before revealing the "
                                        "model answer.")
        return data


class RateForm(OpenAnswerForm):
    """The answer carried over, the rubric points ticked and the rating chosen."""

    ticked = forms.TypedMultipleChoiceField(required=False, coerce=int, widget=forms.CheckboxSelectMultiple)
    rating = forms.ChoiceField(choices=RATING_CHOICES)

    def __init__(self, rubric_size: int, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["ticked"].choices = [(index, str(index + 1)) for index in range(rubric_size)]

    def chosen_rating(self) -> int | None:
        """1–4, or ``None`` for "from my ticks"."""
        value = self.cleaned_data["rating"]
        return None if value == "auto" else int(value)


class ReviewSettingsForm(forms.ModelForm):
    """A candidate's review settings: interview date, time zone, digest e-mail, desired retention.

    The time zone is the user's (:class:`accounts.models.TimeZonePreference`, every page reads it), offered here
    because "due today" turns in it: :meth:`save` keeps it with :func:`accounts.timezones.set_time_zone`.
    """

    time_zone = forms.CharField(max_length=64, label="Time zone", validators=[validate_time_zone],
                                help_text="“Due today” means today where you are.")

    class Meta:
        model = ReviewSettings
        fields = ["interview_date", "time_zone", "digest", "desired_retention"]
        labels = {"interview_date": "Interview date",
                  "digest": "E-mail me each morning what is due that day", "desired_retention": "Desired retention"}
        widgets = {
            "interview_date": forms.DateInput(attrs={"type": "date", "class": "form-control"}, format="%Y-%m-%d"),
            "digest": forms.CheckboxInput(attrs={"class": "form-check-input"}),
            "desired_retention": forms.NumberInput(attrs={"min": "0.70", "max": "0.97", "step": "0.01",
                                                          "class": "form-control"}),
        }
        help_texts = {
            "interview_date": "Optional. The queue then puts first what you would otherwise forget by that day, "
                              "and the forecasts stop there.",
            "desired_retention": "The chance of recall FSRS schedules for: 0.90 is the usual choice; higher means "
                                 "more reviews.",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["time_zone"].widget = forms.Select(choices=time_zone_choices(), attrs={"class": "form-select"})
        self.fields["time_zone"].initial = zone_name_of(self.instance.user)

    def clean_desired_retention(self):
        value = self.cleaned_data["desired_retention"]
        if not 0.7 <= value <= 0.97:
            raise forms.ValidationError("Choose a retention between 0.70 and 0.97.")
        return value

    def clean(self):
        """Refuse an interview date before the candidate's today or more than INTERVIEW_MAX_DAYS_AHEAD after it.

        "Today" is in the time zone chosen on this same form (the saved one when the choice is invalid): an
        interview already past would stop every forecast at once and show as a date with no year on /progress/.
        """
        data = super().clean()
        interview = data.get("interview_date")
        if interview is not None:
            # Only a name from the list reaches ZoneInfo: the field's validator has let anything ZoneInfo reads
            # through, and ZoneInfo fails in several ways (and reads files) on arbitrary text.
            chosen = data.get("time_zone")
            zone = zoneinfo.ZoneInfo(chosen) if chosen in zone_names() else self.instance.tz
            today = calendar_today(zone)
            if interview < today:
                self.add_error("interview_date", forms.ValidationError(
                    "That day has passed: choose today (%(today)s) or a later day, or leave it empty if the "
                    "interview is over.", code="past", params={"today": f"{today:%a} {today.day} {today:%b %Y}"}))
            elif (interview - today).days > INTERVIEW_MAX_DAYS_AHEAD:
                latest = today + timedelta(days=INTERVIEW_MAX_DAYS_AHEAD)
                self.add_error("interview_date", forms.ValidationError(
                    "That day is more than two years away: choose a day up to %(latest)s, or leave it empty until "
                    "the interview is booked.", code="too_far",
                    params={"latest": f"{latest:%a} {latest.day} {latest:%b %Y}"}))
        return data

    def save(self, commit: bool = True) -> ReviewSettings:
        """Save the review settings and the user's time zone (``commit=False`` saves neither)."""
        row = super().save(commit=commit)
        if commit:
            set_time_zone(row.user, self.cleaned_data["time_zone"])
        return row
