"""URLs of the randomized problems: ``/drills/``, ``/drills/<family>/new/`` and ``/drills/<family>/<id>/``, and
their follow-ups (``…/followup/``).

Listed in the ``drills`` namespace by :mod:`drills.urls`, after the critique
and design pages (whose slugs the families' patterns would otherwise claim).
"""

from django.urls import path

from drills.problems import followup_views, views

index = [path("", views.index, name="index")]

urlpatterns = [
    path("<slug:family>/new/", views.new_problem, name="new"),
    path("<slug:family>/new/followup/", followup_views.drawn, name="followup-drawn"),
    path("<slug:family>/<int:pk>/followup/", followup_views.stored, name="followup"),
    path("<slug:family>/<int:pk>/", views.problem, name="problem"),
]
