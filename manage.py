#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    """Run the management command named on the command line."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise ImportError(
            "Couldn't import Django. Run ./bin/serve or ./bin/test once to create .venv, "
            "or activate it with `. .venv/bin/activate`."
        ) from exc
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
