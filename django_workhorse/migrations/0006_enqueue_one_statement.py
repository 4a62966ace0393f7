"""A plain one-job enqueue (one payload, no idempotency key, delay or run_at)
written by one statement of workhorse_enqueue_batch_v1 (docs/decisions.md,
"The single enqueue's own cost")."""

from django.db import migrations

from django_workhorse.sql_files import RunSQLFile


class Migration(migrations.Migration):
    dependencies = [("django_workhorse", "0005_runtime_active")]

    operations = [
        RunSQLFile(
            "workhorse_enqueue_batch_v1_0006.sql",
            reverse_file="workhorse_enqueue_batch_v1.sql",
        ),
    ]
