"""Account URLs: sign-up here, everything else from ``django.contrib.auth.urls``.

No ``app_name``: Django's auth views reverse their own un-namespaced names
(``login``, ``password_reset_done`` ...).
"""

from django.urls import include, path

from accounts.views import SignUpView

urlpatterns = [
    path("signup/", SignUpView.as_view(), name="signup"),
    path("", include("django.contrib.auth.urls")),
]
