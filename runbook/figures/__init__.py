"""Step-through figures for the runbook: ``{{figure NAME key=value …}}`` in a chapter.

:data:`FIGURES` maps a figure's name to a function ``(options: dict[str, str]) ->
str`` that returns the figure's trusted HTML: every frame rendered on the server
(SVG), a small script that steps through them (next, previous, play), and a
print view with the full final picture plus a numbered list of the steps. A
function raises ``ValueError`` with one sentence for an option it cannot use.
Each figure lives in its own module of this package and registers itself here.
"""

from __future__ import annotations

from typing import Callable

FIGURES: dict[str, Callable[[dict[str, str]], str]] = {}


def register(name: str):
    """Decorator: register a figure function under ``name``."""
    def decorator(function):
        FIGURES[name] = function
        return function
    return decorator


def _load_all() -> None:
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_load_all()
