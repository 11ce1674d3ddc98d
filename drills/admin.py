"""Admin for the drills: the question bank, problem instances and graded attempts."""

from django.contrib import admin

from drills.models import Attempt, BankItem, ProblemInstance, StepAnswer


@admin.register(BankItem)
class BankItemAdmin(admin.ModelAdmin):
    list_display = ("slug", "kind", "chapter", "topic", "difficulty", "author", "published")
    list_filter = ("kind", "published", "difficulty", "track", "chapter")
    search_fields = ("slug", "prompt", "model_answer", "topic")
    list_select_related = ("chapter", "author")
    readonly_fields = ("search_text", "source_path", "created_at", "updated_at")
    raw_id_fields = ("author",)


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


from drills import admin_reviews  # noqa: E402,F401 - cards, review log, review settings
