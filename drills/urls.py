"""URLs of the ``drills`` app (DESIGN.md §10: ``/drills/<family>/new/`` and ``/drills/<family>/<id>/``)."""

from django.urls import path

from . import views, views_design

app_name = "drills"

urlpatterns = [
    path("", views.index, name="index"),
    # Design prompts and critique drills (before the families' patterns, which would claim the slugs).
    path("design/<slug:slug>/", views_design.design, name="design"),
    path("critique/<slug:slug>/", views_design.critique, name="critique"),
    path("critique/<slug:slug>/attempts/<int:pk>/", views_design.critique_attempt, name="critique_attempt"),
    path("critique/<slug:slug>/attempts/<int:pk>/assess/", views_design.critique_assess, name="critique_assess"),
    path("<slug:family>/new/", views.new_problem, name="new"),
    path("<slug:family>/<int:pk>/", views.problem, name="problem"),
]
