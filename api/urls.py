"""URLs of the JSON API, mounted at ``/api/v1/`` by ``config/urls.py``.

Model and GPU ids contain dots (``llama-3.1-8b``), hence ``<str:…>``. The last
pattern answers any other path under ``/api/v1/`` with a JSON 404.
"""

from django.urls import path, re_path

from api import views

app_name = "api"

urlpatterns = [
    path("", views.index, name="index"),
    path("schema/", views.schema, name="schema"),
    path("models/", views.models, name="models"),
    path("models/<str:model_id>/", views.model, name="model"),
    path("gpus/", views.gpus, name="gpus"),
    path("gpus/<str:gpu_id>/", views.gpu, name="gpu"),
    path("families/", views.families, name="families"),
    path("families/<str:slug>/", views.family, name="family"),
    path("calc/<str:slug>/", views.calc, name="calc"),
    path("simulate/", views.simulate, name="simulate"),
    re_path(r"^simulate/results/(?P<token>[0-9a-f]{64})/$", views.simulate_result, name="simulate_result"),
    re_path(r"^(?P<rest>.*)$", views.not_found, name="not_found"),
]
