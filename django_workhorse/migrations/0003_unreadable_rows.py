from django.db import migrations

from django_workhorse.sql_files import function_file


class Migration(migrations.Migration):
    dependencies = [("django_workhorse", "0002_liveness")]

    operations = [
        function_file("workhorse_list_workers_v2.sql"),
        function_file("workhorse_failures_v2.sql"),
    ]
