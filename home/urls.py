"""The home page's addresses: the page, and its first-run steps (``/accounts/start/``, an address kept as it was)."""

from django.urls import path

from home import views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/start/", views.start, name="start"),
]
