"""URLs of the ``drills`` app."""

app_name = "drills"

urlpatterns = []
