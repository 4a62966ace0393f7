"""What a newer release adds: workhorse_queue_names_v1 with another body."""

from django.db import migrations

from django_workhorse.db.sql_files import read_sql

NEWER = read_sql("workhorse_queue_names_v1.sql").replace(
    "AS $$", "AS $$\n-- as a newer release ships it", 1
)


class Migration(migrations.Migration):
    dependencies = [("django_workhorse", "0006_enqueue_one_statement")]

    operations = [migrations.RunSQL(NEWER, reverse_sql=migrations.RunSQL.noop)]
