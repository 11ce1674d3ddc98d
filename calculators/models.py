"""A user's own calibrations of the serving model (issue 32), fitted in the lab and applied to these pages.

A :class:`Calibration` is what the lab fitted on a user's benchmark (``drills/lab/fit.py``): the stack it was
measured on, the constants (keys of :data:`calculators.engine.calibration.KEYS`), the fit's residuals, range
and bands, and the output it was read from, as pasted. :class:`AppliedCalibration` is the one a user has chosen
to use: the calculator and simulator pages then take its constants as their defaults wherever the page's card
and precision family are the calibration's (DESIGN §12: it replaces the table's row for that stack), and say
so. Graded problems never read it (their inputs are drawn and stored; nothing here reaches them). A coach shares
one with a cohort through :class:`coaching.models.SharedCalibration`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

from calculators.engine.calibration import outside_fitted_range, precision_of


class CalibrationQuerySet(models.QuerySet):
    """Calibrations, by owner."""

    def owned_by(self, user) -> "CalibrationQuerySet":
        """A user's own calibrations (none for an anonymous visitor)."""
        return self.filter(owner=user) if user.is_authenticated else self.none()


class CalibratedStack:
    """What a page asks of a calibration, whether the record or the session's snapshot of it
    (:class:`calculators.calibration_in_use.InUse`): which stack it applies to and where it was fitted.
    Needs ``gpu``, ``gpus``, ``weights_dtype`` and ``ranges``."""

    gpu: str
    gpus: int
    weights_dtype: str
    ranges: dict

    @property
    def precision(self) -> str:
        """The precision family it applies to (``16-bit``, ``fp8``, ``fp4``, …)."""
        return precision_of(self.weights_dtype)

    def applies_to(self, gpu: str | None, weights_dtype: str | None) -> bool:
        """Whether a page's card and weight format are this calibration's stack (card × precision family)."""
        return gpu == self.gpu and precision_of(weights_dtype or "bf16") == self.precision

    def outside(self, *, prompt_tokens: float, output_tokens: float, tp: int | None = None) -> list[str]:
        """One sentence per way a workload lies outside the range the fit covered
        (:func:`calculators.engine.calibration.outside_fitted_range`)."""
        return outside_fitted_range(self.ranges, self.gpus, prompt_tokens=prompt_tokens,
                                    output_tokens=output_tokens, tp=tp)


class Calibration(CalibratedStack, models.Model):
    """A named fit of the step overhead, bandwidth efficiency and prefill MFU for one stack."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calibrations")
    name = models.CharField(max_length=80)
    model = models.CharField(max_length=64, help_text="Catalog model id the points were measured on.")
    gpu = models.CharField(max_length=64, help_text="Catalog GPU id.")
    gpus = models.PositiveSmallIntegerField(default=1, help_text="Tensor-parallel degree.")
    weights_dtype = models.CharField(max_length=8)
    kv_dtype = models.CharField(max_length=8)
    engine = models.CharField(max_length=32, blank=True)
    values = models.JSONField(help_text="The constants by quantity key (step_overhead_ms, bandwidth_efficiency, "
                                        "prefill_mfu).")
    fit = models.JSONField(help_text="What the fit found: fitted keys, bands, residuals, ranges, RMS error, notes.")
    source_format = models.CharField(max_length=32, help_text="The format the output was read as.")
    source_text = models.TextField(help_text="The benchmark output, as pasted.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = CalibrationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="one_calibration_name_per_owner")]

    def __str__(self) -> str:
        return f"{self.name} ({self.owner})"

    def get_absolute_url(self) -> str:
        return reverse("lab:calibration", args=[self.pk])

    @property
    def ranges(self) -> dict:
        """The workload ranges the fit covered (``fit["ranges"]``: name → [low, high])."""
        return (self.fit or {}).get("ranges", {})


class AppliedCalibrationQuerySet(models.QuerySet):
    """The calibration each user applies."""

    def for_user(self, user) -> Calibration | None:
        """The calibration ``user`` applies (``None`` for none, or an anonymous visitor)."""
        if not user.is_authenticated:
            return None
        found = self.filter(user=user).select_related("calibration").first()
        return found.calibration if found else None


class AppliedCalibration(models.Model):
    """The calibration a user has chosen to apply to the calculators and the simulator (at most one)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="applied_calibration")
    calibration = models.ForeignKey(Calibration, on_delete=models.CASCADE, related_name="applications")
    applied_at = models.DateTimeField(auto_now=True)

    objects = AppliedCalibrationQuerySet.as_manager()

    def __str__(self) -> str:
        return f"{self.user} applies {self.calibration.name}"
