"""The admin of the ``drills`` app: each concept registers its own models in its ``admin.py``."""

from importlib import import_module

# Django's admin autodiscovery imports ``drills.admin`` only; the concepts' modules register on import.
for _concept in ("bank", "problems", "reviews"):
    import_module(f"drills.{_concept}.admin")
