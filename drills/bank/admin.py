"""Admin for the question bank."""

from django.contrib import admin

from drills.bank.models import BankItem


@admin.register(BankItem)
class BankItemAdmin(admin.ModelAdmin):
    list_display = ("slug", "kind", "chapter", "topic", "difficulty", "author", "published")
    list_filter = ("kind", "published", "difficulty", "track", "chapter")
    search_fields = ("slug", "prompt", "model_answer", "topic")
    list_select_related = ("chapter", "author")
    readonly_fields = ("search_text", "source_path", "created_at", "updated_at")
    raw_id_fields = ("author",)
