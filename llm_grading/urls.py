"""URLs of grading by the user's model, under ``/grading/`` (namespace ``llm_grading``)."""

from django.urls import path

from . import views

app_name = "llm_grading"

urlpatterns = [
    path("settings/", views.endpoint_settings, name="settings"),
    path("settings/remove/", views.remove_endpoint, name="remove"),
    path("<int:pk>/", views.grading, name="grading"),
    path("<int:pk>/retry/", views.retry, name="retry"),
    path("<int:pk>/accept/", views.accept, name="accept"),
]
