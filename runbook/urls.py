"""URLs of the ``runbook`` app."""

app_name = "runbook"

urlpatterns = []
