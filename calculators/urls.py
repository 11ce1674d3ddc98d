"""URLs of the ``calculators`` app."""

from django.urls import path

from calculators import views

app_name = "calculators"

urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:family>/", views.calculator, name="calculator"),
]
