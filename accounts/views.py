"""Views of the accounts app: sign-up; log in, log out and passwords use Django's auth views."""

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.http import HttpResponse
from django.shortcuts import redirect, resolve_url
from django.urls import Resolver404, resolve, reverse, reverse_lazy
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.debug import sensitive_post_parameters
from django.views.generic import CreateView

from accounts import backends
from accounts.forms import SignUpForm


def landing_for(user) -> str:
    """Where ``user`` lands after logging in or signing up with no ``next``: a coach on the coach dashboard,
    anyone else on the home page (``LOGIN_REDIRECT_URL``: their day)."""
    from accounts.roles import is_coach

    return reverse("coaching:dashboard") if is_coach(user) else resolve_url(settings.LOGIN_REDIRECT_URL)


def next_note(path: str) -> str:
    """What the page at ``path`` (a ``next`` address) says about itself to someone asked to log in first: the
    ``login_note(*args, **kwargs)`` attribute of the view it resolves to (an app sets it on its view, e.g. an
    invitation names its cohort and coach), or ``""`` (no such view, no note, or the note declines: an invalid
    invitation says nothing)."""
    try:
        match = resolve(urlsplit(path).path)
    except Resolver404:
        return ""
    note = getattr(match.func, "login_note", None)
    return note(*match.args, **match.kwargs) or "" if note is not None else ""


class LoginView(auth_views.LoginView):
    """Django's log-in view; with no ``next``, a coach lands on the coach dashboard (:func:`landing_for`). When
    ``next`` is a page with a note (:func:`next_note`: an invitation), the page says it above the form."""

    def get_default_redirect_url(self) -> str:
        return landing_for(self.request.user)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        return {**context, "next_note": next_note(context.get("next") or "")}


# As Django's own password views do: error reports (the e-mail to ADMINS when DEBUG is off) star them out.
@method_decorator(sensitive_post_parameters("password1", "password2"), name="dispatch")
class SignUpView(CreateView):
    """Create an account, log its owner in and send them to the home page."""

    form_class = SignUpForm
    template_name = "registration/signup.html"
    success_url = reverse_lazy("home")

    def dispatch(self, request, *args, **kwargs):
        """Send someone already logged in to the home page instead."""
        if request.user.is_authenticated:
            return redirect(self.success_url)
        return super().dispatch(request, *args, **kwargs)

    def next_url(self) -> str:
        """Where to go after signing up: the ``next`` address the login page passed on (an invitation link,
        most often), when it is a path on this site; else ``""``."""
        wanted = self.request.POST.get("next") or self.request.GET.get("next") or ""
        safe = url_has_allowed_host_and_scheme(wanted, allowed_hosts={self.request.get_host()},
                                               require_https=self.request.is_secure())
        return wanted if safe else ""

    def get_success_url(self) -> str:
        """The ``next`` address; else a new coach's dashboard (:func:`landing_for`), a candidate's home page."""
        return self.next_url() or landing_for(self.object)

    def get_context_data(self, **kwargs):
        next_url = self.next_url()
        return {**super().get_context_data(**kwargs), "next": next_url, "next_note": next_note(next_url)}

    def form_valid(self, form: SignUpForm) -> HttpResponse:
        """Save the user, log them in and say so."""
        response = super().form_valid(form)
        login(self.request, self.object, backend=backends.PATH)
        messages.success(self.request, f"Welcome, {self.object.username}. Your account is ready.")
        return response
