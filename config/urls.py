"""Root URL configuration.

The runbook is mounted at the root (its pages live beside ``/``), so its
``urls.py`` must not claim the empty path.
"""

from django.contrib import admin
from django.urls import include, path

from config import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("_floor/", views.floor, name="floor"),  # the benchmark floor; 404 unless BENCH_FLOOR=true
    path("_floor/write/", views.floor_write, name="floor_write"),  # its write floor (POST); the same
    path("accounts/", include("accounts.urls")),
    path("account/", include("accounts.urls_data")),  # a person's own data: export, leave a cohort, delete
    path("admin/", admin.site.urls),
    path("calculators/", include("calculators.urls")),
    path("simulator/", include("calculators.sim_urls")),
    path("", include("drills.urls")),  # /drills/, /bank/, /review/, /progress/, /lab/, /rounds/
    path("", include("coaching.urls")),
    path("api/v1/", include("api.urls")),
    path("", include("runbook.urls")),
]
