"""Root URL configuration.

The runbook is mounted at the root (its pages live beside ``/``), so its
``urls.py`` must not claim the empty path. Every app is included by name: ``config``
imports no app (docs/architecture.md).
"""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("home.urls")),  # / (the landing page, or the signed-in candidate's day)
    path("", include("core.urls")),  # /healthz, /favicon.ico, the benchmark floor
    path("accounts/", include("accounts.urls")),
    path("account/", include("home.urls_data")),  # a person's own data: export, leave a cohort, delete
    path("admin/", admin.site.urls),
    path("calculators/", include("calculators.urls")),
    path("simulator/", include("calculators.sim_urls")),
    path("", include("drills.urls")),  # /drills/, /bank/, /review/, /progress/, /lab/, /rounds/
    path("", include("coaching.urls")),
    path("api/v1/", include("api.urls")),
    path("grading/", include("llm_grading.urls")),  # open answers graded by the user's own model
    path("", include("runbook.urls")),
]
