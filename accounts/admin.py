"""Admin for accounts: the time zone each user chose."""

from django.contrib import admin

from accounts.models import TimeZonePreference


@admin.register(TimeZonePreference)
class TimeZonePreferenceAdmin(admin.ModelAdmin):
    list_display = ("user", "time_zone")
    search_fields = ("user__username", "time_zone")
    raw_id_fields = ("user",)
