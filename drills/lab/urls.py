"""URLs of the lab, mounted at ``/lab/``: the form and a candidate's saved runs."""

from django.urls import path

from drills.lab import views

app_name = "lab"

urlpatterns = [
    path("", views.lab, name="index"),
    path("<int:pk>/", views.run, name="run"),
]
