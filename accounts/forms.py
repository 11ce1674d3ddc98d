"""Forms of the accounts app."""

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm, UserCreationForm
from django.core.validators import MaxLengthValidator


class WeakPasswordUnderItsField:
    """Show the password validators' errors ("too short", "too common") under the password that was typed.

    Django's password forms attach them to the confirmation field (``password2``, ``new_password2``), where a
    user reads them as "the two do not match". A mismatch still goes under the confirmation.
    """

    def validate_password_for_user(self, user, password_field_name="password2", **kwargs):
        """Validate the password typed first (``password1``, ``new_password1``) and report on that field."""
        first = password_field_name.replace("password2", "password1")
        super().validate_password_for_user(user, password_field_name=first, **kwargs)  # type: ignore[misc]


class PasswordChangeWithErrorsInPlace(WeakPasswordUnderItsField, PasswordChangeForm):
    """Django's password change form, a weak new password reported under the new password."""


class SetPasswordWithErrorsInPlace(WeakPasswordUnderItsField, SetPasswordForm):
    """Django's set-password form (after a reset link), a weak new password reported under the new password."""


# The longest username sign-up takes: a name is shown in the menu and in coaches' tables, where one of 150
# characters (the column's limit) ran off a phone's screen.
USERNAME_MAX_CHARS = 40


class SignUpForm(WeakPasswordUnderItsField, UserCreationForm):
    """Django's user creation form plus a required, unique e-mail address, and a username of at most
    :data:`USERNAME_MAX_CHARS` characters.

    The address is what password reset writes to, so two accounts may not share it.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        username = self.fields["username"]
        username.help_text = (f"Up to {USERNAME_MAX_CHARS} characters: letters, digits and @ . + - _ "
                              "(no spaces).")
        username.widget.attrs.pop("maxlength", None)  # checked on the server, with the length read (no silent cut)
        username.max_length = USERNAME_MAX_CHARS
        username.validators = [validator for validator in username.validators
                               if not isinstance(validator, MaxLengthValidator)] + [
            MaxLengthValidator(USERNAME_MAX_CHARS)]
        username.error_messages["max_length"] = (
            "A username may have at most %(limit_value)d characters; this one has %(show_value)d. "
            "Choose a shorter one.")

    email = forms.EmailField(
        label="E-mail",
        help_text="Used only to reset your password.",
    )

    coaches = forms.BooleanField(
        required=False, label="I coach candidates",
        help_text="Coaches build question sets, invite candidates to their cohorts and follow their progress. "
                  "Leave it unticked to prepare for interviews yourself.")

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")

    def save(self, commit: bool = True):
        """Create the account; a coach joins the coach group (:data:`accounts.roles.COACH_GROUP`)."""
        from django.contrib.auth.models import Group

        from accounts.roles import COACH_GROUP

        user = super().save(commit=commit)
        if commit and self.cleaned_data.get("coaches"):
            user.groups.add(Group.objects.get_or_create(name=COACH_GROUP)[0])
        return user

    def clean_username(self) -> str:
        """Refuse a username that looks like an existing one (UTS #39-style skeleton: ``аlice`` for ``alice``)."""
        from accounts.confusables import look_alike

        username = self.cleaned_data["username"]
        # A plain list, not .iterator(): look_alike stops at the first match, and on PostgreSQL an abandoned
        # server-side cursor is closed later, after its transaction ended, which aborts the next one.
        names = list(get_user_model()._default_manager.values_list("username", flat=True))
        if look_alike(username, names) is not None:
            raise forms.ValidationError("This username looks like one already taken: choose another.")
        return username

    def clean_email(self) -> str:
        """Refuse an address another account already uses (ignoring case)."""
        email = self.cleaned_data["email"].strip()
        if get_user_model()._default_manager.filter(email__iexact=email).exists():
            raise forms.ValidationError("An account with this e-mail address already exists.")
        return email
