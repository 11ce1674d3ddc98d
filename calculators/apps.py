"""App configuration for ``calculators``."""

from django.apps import AppConfig


class CalculatorsConfig(AppConfig):
    """Calculator pages and the ``calc`` command; the engine itself is Django-free."""

    name = "calculators"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Give the engine's simulated drills their simulator (the engine may not import it)."""
        # Imported here: calculators.simulation reads Django's cache and settings, loaded by now.
        from calculators.engine.procedures.simulated import use_simulator
        from calculators.simulation import drill_sweep

        use_simulator(drill_sweep)
