"""Forms of the home app: deleting one's account."""

from django import forms

from accounts.roles import is_coach
from home.deletion import HandOverError, successor_named


class DeleteAccountForm(forms.Form):
    """Deleting one's account: the password again, so that a borrowed session cannot do it; a coach may name
    another coach to take their cohorts over (``successor``; empty: the cohorts close)."""

    password = forms.CharField(label="Your password", strip=False,
                               widget=forms.PasswordInput(attrs={"autocomplete": "current-password",
                                                                 "class": "form-control"}))
    successor = forms.CharField(label="Hand my cohorts to (another coach's user name)", required=False,
                                max_length=150,
                                help_text="Leave empty to close your cohorts.",
                                widget=forms.TextInput(attrs={"autocomplete": "off", "class": "form-control"}))

    def __init__(self, user, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        self.successor_user = None
        if not is_coach(user):
            del self.fields["successor"]

    def clean_password(self) -> str:
        """Refuse a password that is not the account's."""
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password

    def clean_successor(self) -> str:
        """The coach named to take the cohorts over (kept on ``successor_user``), or ``""`` to close them."""
        name = self.cleaned_data.get("successor", "").strip()
        if name:
            try:
                self.successor_user = successor_named(self.user, name)
            except HandOverError as error:
                raise forms.ValidationError(str(error)) from None
        return name
