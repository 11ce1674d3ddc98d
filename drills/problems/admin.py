"""Admin for problem instances and graded attempts."""

from django.contrib import admin

from drills.problems.models import Attempt, ProblemInstance, StepAnswer


@admin.register(ProblemInstance)
class ProblemInstanceAdmin(admin.ModelAdmin):
    list_display = ("id", "family", "seed", "generator_version", "created_by", "created_at")
    list_filter = ("family",)
    raw_id_fields = ("created_by",)


class StepAnswerInline(admin.TabularInline):
    model = StepAnswer
    extra = 0
    readonly_fields = ("position", "key", "unit", "raw_input", "parsed_value", "verdict", "credit", "misconception",
                       "expected", "carried_expected", "message")
    can_delete = False


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "problem", "score", "submitted_at")
    list_select_related = ("user", "problem")
    raw_id_fields = ("user", "problem")
    inlines = [StepAnswerInline]
