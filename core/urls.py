"""Site-wide addresses that belong to no app: the health check, the favicon and the benchmark floor."""

from django.urls import path

from core import views

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("_floor/", views.floor, name="floor"),  # the benchmark floor; 404 unless BENCH_FLOOR=true
    path("_floor/write/", views.floor_write, name="floor_write"),  # its write floor (POST); the same
]
