"""WSGI entry point: ``gunicorn config.wsgi``.

Importing this module also imports the URLconf, and with it every view module,
so that the cost is paid when the application loads -- once in gunicorn's master
with ``preload_app`` (gunicorn.conf.py) -- and never by a visitor's first request.
"""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

application = get_wsgi_application()
get_resolver().url_patterns
