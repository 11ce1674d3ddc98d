"""Admin for the reading room. Rows come from ``fixtures/`` via ``load_content``: edit the files, not these."""

from django.contrib import admin

from runbook.models import BarTopic, Chapter, Document, ErratumEntry, GlossaryTerm, ReadingPath, Resource, Stage, Track


@admin.register(Track)
class TrackAdmin(admin.ModelAdmin):
    list_display = ("letter", "title")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ("number", "slug", "title", "track", "chapter")
    list_filter = ("track",)
    search_fields = ("slug", "title")
    list_select_related = ("track", "chapter")


@admin.register(ReadingPath)
class ReadingPathAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "document_numbers", "position")


@admin.register(Chapter)
class ChapterAdmin(admin.ModelAdmin):
    list_display = ("number", "slug", "track", "title", "reading_minutes", "source_path", "updated_at")
    list_filter = ("track",)
    search_fields = ("slug", "title", "summary", "body")
    readonly_fields = ("content_hash", "search_text", "updated_at")


@admin.register(GlossaryTerm)
class GlossaryTermAdmin(admin.ModelAdmin):
    list_display = ("term", "slug", "chapter_slug", "section")
    search_fields = ("term", "slug", "answer")
    readonly_fields = ("search_text",)


@admin.register(ErratumEntry)
class ErratumEntryAdmin(admin.ModelAdmin):
    list_display = ("position", "slug", "kind", "title")
    list_filter = ("kind",)
    search_fields = ("slug", "title", "claimed", "truth", "why")
    readonly_fields = ("search_text",)


@admin.register(Stage)
class StageAdmin(admin.ModelAdmin):
    list_display = ("number", "slug", "title")


@admin.register(BarTopic)
class BarTopicAdmin(admin.ModelAdmin):
    list_display = ("position", "slug", "title")


@admin.register(Resource)
class ResourceAdmin(admin.ModelAdmin):
    list_display = ("title", "stage", "kind", "level", "year", "authors")
    list_filter = ("stage", "kind", "level")
    search_fields = ("title", "authors", "summary", "gives")
    filter_horizontal = ("topics",)
    readonly_fields = ("search_text",)
    list_select_related = ("stage",)
