"""Staff manage every coaching object in the admin."""

from django.contrib import admin

from .models import Assignment, Cohort, Invitation, Membership, Notice, QuestionSet, SetEntry, Work


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ("candidate", "invitation")


@admin.register(Cohort)
class CohortAdmin(admin.ModelAdmin):
    list_display = ("name", "coach", "created_at")
    search_fields = ("name", "coach__username")
    inlines = [MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("cohort", "token", "created_at", "expires_at", "revoked")
    list_filter = ("revoked",)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("candidate", "cohort", "joined_at")
    raw_id_fields = ("candidate", "invitation")


class SetEntryInline(admin.TabularInline):
    model = SetEntry
    extra = 0
    raw_id_fields = ("item",)


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ("title", "coach", "updated_at")
    search_fields = ("title",)
    inlines = [SetEntryInline]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("question_set", "coach", "candidate", "cohort", "due_at", "time_limit_s")
    raw_id_fields = ("candidate",)


@admin.register(Work)
class WorkAdmin(admin.ModelAdmin):
    list_display = ("assignment", "candidate", "entry", "problem", "round", "started_at")
    raw_id_fields = ("candidate", "problem", "round", "entry")


@admin.register(Notice)
class NoticeAdmin(admin.ModelAdmin):
    list_display = ("assignment", "candidate", "kind", "sent_at")
    list_filter = ("kind",)
