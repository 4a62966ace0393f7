"""The active jobs indexed by queue, then lease expiry, in place of the lease
index: a limited queue's count of active jobs reads its own (runtime_active_v1.sql)."""

from django.db import migrations

from django_workhorse.sql_files import schema_file


class Migration(migrations.Migration):
    dependencies = [("django_workhorse", "0004_bulk_actions")]

    operations = [schema_file("runtime_active_v1.sql")]
