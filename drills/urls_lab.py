"""URLs of the lab, mounted at ``/lab/``: the form and a candidate's saved runs."""

from django.urls import path

from . import views_lab

app_name = "lab"

urlpatterns = [
    path("", views_lab.lab, name="index"),
    path("<int:pk>/", views_lab.run, name="run"),
]
