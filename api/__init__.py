"""The read-only JSON API at ``/api/v1/`` (docs/architecture.md §10).

Plain Django views (``api.views``) over the same engine as the pages and
``manage.py calc``: the catalog of models and GPUs, the calculator families with
their inputs and step keys, and ``/api/v1/calc/<family>/``, whose JSON is exactly
``calc <family> --json``'s. ``api.schema`` builds the OpenAPI 3.1 description
served at ``/api/v1/schema/`` from ``FAMILIES`` and the catalog. Not a Django
app: it has no models, templates or static files.
"""
