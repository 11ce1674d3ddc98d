"""URLs of the ``calculators`` app."""

app_name = "calculators"

urlpatterns = []
