"""Account URLs: sign-up here, everything else from ``django.contrib.auth.urls``.

No ``app_name``: Django's auth views reverse their own un-namespaced names
(``login``, ``password_reset_done`` ...).
"""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts.forms import PasswordChangeWithErrorsInPlace, SetPasswordWithErrorsInPlace
from accounts.views import LoginView, SignUpView

urlpatterns = [
    path("signup/", SignUpView.as_view(), name="signup"),
    path("login/", LoginView.as_view(), name="login"),  # a coach lands on the dashboard (accounts.views)
    # Django's own views, with forms that say a weak password under the password field (accounts/forms.py).
    path("password_change/", auth_views.PasswordChangeView.as_view(form_class=PasswordChangeWithErrorsInPlace),
         name="password_change"),
    path("reset/<uidb64>/<token>/",
         auth_views.PasswordResetConfirmView.as_view(form_class=SetPasswordWithErrorsInPlace),
         name="password_reset_confirm"),
    path("", include("django.contrib.auth.urls")),
]
