"""URL of the simulator page, mounted at ``/simulator/`` by ``config/urls.py``."""

from django.urls import path

from calculators import sim_views

app_name = "simulator"

urlpatterns = [
    path("", sim_views.simulator, name="page"),
]
