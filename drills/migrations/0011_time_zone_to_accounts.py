"""The time zone moves from the review settings to the accounts app (accounts.TimeZonePreference).

Every review settings row's zone is copied into a preference row, then the column goes. Backwards, the
preferences are moved back into the review settings (a row created where the user had only a zone).
"""

from django.db import migrations


def copy_to_accounts(apps, schema_editor):
    ReviewSettings = apps.get_model("drills", "ReviewSettings")
    TimeZonePreference = apps.get_model("accounts", "TimeZonePreference")
    rows = ReviewSettings.objects.values_list("user_id", "time_zone")
    TimeZonePreference.objects.bulk_create(
        [TimeZonePreference(user_id=user_id, time_zone=time_zone) for user_id, time_zone in rows.iterator()],
        batch_size=500)


def copy_back(apps, schema_editor):
    ReviewSettings = apps.get_model("drills", "ReviewSettings")
    TimeZonePreference = apps.get_model("accounts", "TimeZonePreference")
    for user_id, time_zone in TimeZonePreference.objects.values_list("user_id", "time_zone").iterator():
        ReviewSettings.objects.update_or_create(user_id=user_id, defaults={"time_zone": time_zone})
    TimeZonePreference.objects.all().delete()  # the zones live in the review settings again


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        ("drills", "0010_attempt_user_problem_index"),
    ]

    operations = [
        migrations.RunPython(copy_to_accounts, copy_back),
        migrations.RemoveField(model_name="reviewsettings", name="time_zone"),
    ]
