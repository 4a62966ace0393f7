from django.db import migrations

from django_workhorse.sql_files import function_file, schema_file


class Migration(migrations.Migration):
    """Filter-wide operator actions run as jobs, with a record each (docs/admin.md)."""

    dependencies = [("django_workhorse", "0003_unreadable_rows")]

    operations = [
        schema_file("bulk_actions_v1.sql"),
        function_file("workhorse_bulk_request_v1.sql"),
        function_file("workhorse_bulk_step_v1.sql"),
        function_file("workhorse_bulk_cancel_v1.sql"),
    ]
