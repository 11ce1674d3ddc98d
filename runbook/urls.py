"""URLs of the ``runbook`` app, mounted at the site's root (it must not claim the empty path)."""

from django.urls import path

from runbook import views

app_name = "runbook"

urlpatterns = [
    path("runbook/", views.index, name="index"),
    path("runbook/<slug:slug>/", views.chapter, name="chapter"),
    path("glossary/", views.glossary, name="glossary"),
    path("errata/", views.errata, name="errata"),
    path("reading/", views.reading, name="reading"),
    path("search/", views.search, name="search"),
]
