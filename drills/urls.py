"""URLs of the ``drills`` app (DESIGN.md §10: ``/drills/<family>/new/`` and ``/drills/<family>/<id>/``)."""

from django.urls import path

from . import views

app_name = "drills"

urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:family>/new/", views.new_problem, name="new"),
    path("<slug:family>/<int:pk>/", views.problem, name="problem"),
]
