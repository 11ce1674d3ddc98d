"""A person's own data, mounted at ``/account/`` by ``config/urls.py``."""

from django.urls import path

from home import views_data

app_name = "account"

urlpatterns = [
    path("", views_data.overview, name="overview"),
    path("export/", views_data.export, name="export"),
    path("delete/", views_data.delete, name="delete"),
    path("cohorts/<int:pk>/leave/", views_data.leave, name="leave"),
]
