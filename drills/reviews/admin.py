"""Admin for spaced repetition: cards, the (read-only) review log, review settings."""

from django.contrib import admin

from drills.reviews.models import Card, ReviewLog, ReviewSettings


@admin.register(Card)
class CardAdmin(admin.ModelAdmin):
    list_display = ("user", "item", "state", "due", "reps", "lapses", "suspended", "added_via")
    list_filter = ("state", "suspended", "added_via")
    search_fields = ("user__username", "item__slug")
    list_select_related = ("user", "item")
    raw_id_fields = ("user", "item", "pending_problem")
    readonly_fields = ("version",)


@admin.register(ReviewLog)
class ReviewLogAdmin(admin.ModelAdmin):
    """Review logs are append-only: shown, never changed here."""

    list_display = ("user", "item_slug", "rating", "grade", "reviewed_at", "duration_ms")
    list_filter = ("rating",)
    search_fields = ("user__username", "item_slug")
    list_select_related = ("user",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ReviewSettings)
class ReviewSettingsAdmin(admin.ModelAdmin):
    list_display = ("user", "interview_date", "digest", "desired_retention", "fitted_at")
    search_fields = ("user__username",)
    raw_id_fields = ("user",)
