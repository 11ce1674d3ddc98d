"""URLs of the lab, mounted at ``/lab/``: the form and a candidate's saved runs, the calibration from a benchmark
and the calibrations a user keeps."""

from django.urls import path

from drills.lab import views

app_name = "lab"

urlpatterns = [
    path("", views.lab, name="index"),
    path("<int:pk>/", views.run, name="run"),
    path("calibrate/", views.calibrate, name="calibrate"),
    path("calibrations/<int:pk>/", views.calibration, name="calibration"),
    path("calibrations/<int:pk>/apply/", views.calibration_apply, name="calibration_apply"),
    path("calibrations/stop/", views.calibration_stop, name="calibration_stop"),
]
