"""URLs of the simulator page and its fidelity page, mounted at ``/simulator/`` by ``config/urls.py``."""

from django.urls import path

from calculators import sim_views

app_name = "simulator"

urlpatterns = [
    path("", sim_views.simulator, name="page"),
    path("fidelity/", sim_views.fidelity, name="fidelity"),
]
