"""A candidate's lab runs (registered with the app through :mod:`drills.models`).

A run is what one candidate measured serving a model on a real card, with the
setup that produced it. The predictions are recomputed from the setup when the
run is shown (the engine is the source of truth); ``summary`` keeps the derived
efficiencies as they were when the run was saved, for the list of runs. A pasted
start-up log is kept as text and read again when the run is reopened, so the
reader's fixes apply to old runs too.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse


class LabRunQuerySet(models.QuerySet):
    """Lab runs, by candidate."""

    def of(self, user) -> "LabRunQuerySet":
        """One candidate's runs (never anyone else's)."""
        return self.filter(user=user) if user.is_authenticated else self.none()


class LabRun(models.Model):
    """One measured run: setup, measurements and the efficiencies derived when it was saved."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lab_runs")
    model = models.CharField(max_length=64, help_text="Catalog model id.")
    gpu = models.CharField(max_length=64, help_text="Catalog GPU id.")
    gpus = models.PositiveSmallIntegerField(default=1)
    weights_dtype = models.CharField(max_length=8)
    kv_dtype = models.CharField(max_length=8)
    engine_flags = models.TextField(blank=True)
    startup_gib = models.FloatField(null=True, blank=True)
    decode_tok_s = models.FloatField(null=True, blank=True)
    knee_batch = models.PositiveIntegerField(null=True, blank=True)
    preempt_pct = models.FloatField(null=True, blank=True)
    prefill_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    startup_log = models.TextField(blank=True, help_text="The vLLM start-up log pasted with the run, as pasted; "
                                                         "read again into the ladder's steps when it is reopened.")
    summary = models.JSONField(default=dict, blank=True,
                               help_text="memory gap (GiB), MBU, knee ÷ ridge batch, pool share, MFU when saved.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = LabRunQuerySet.as_manager()

    SETUP = ("model", "gpu", "gpus", "weights_dtype", "kv_dtype", "engine_flags")
    MEASURED = ("startup_gib", "decode_tok_s", "knee_batch", "preempt_pct", "prefill_ms", "prompt_tokens",
                "startup_log")

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.model} on {self.gpus} × {self.gpu} ({self.user})"

    def get_absolute_url(self) -> str:
        return reverse("lab:run", args=[self.pk])

    def form_data(self) -> dict:
        """The run as the lab form's data."""
        data = {name: getattr(self, name) for name in (*self.SETUP, *self.MEASURED)}
        # Show 150, not 150.0, for a whole number typed into a decimal field.
        return {name: int(value) if isinstance(value, float) and value.is_integer() else value
                for name, value in data.items()}
