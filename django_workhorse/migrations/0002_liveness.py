"""Liveness: leases timed when granted, claims that skip a held queue row, and
the worker's liveness proof that stall recovery respects (docs/worker.md#liveness)."""

from django.db import migrations

from django_workhorse.sql_files import RunSQLFile, function_file


def replaces(function: str) -> RunSQLFile:
    """``<function>_0002.sql`` re-creates ``<function>`` with a new body;
    reversed by running the file that made it before."""
    return RunSQLFile(f"{function}_0002.sql", reverse_file=f"{function}.sql")


class Migration(migrations.Migration):
    dependencies = [("django_workhorse", "0001_initial")]

    operations = [
        function_file("workhorse_worker_key_v1.sql"),
        function_file("workhorse_live_workers_v1.sql"),
        function_file("workhorse_pulse_v1.sql"),
        replaces("workhorse_claim_many_v1"),
        replaces("workhorse_heartbeat_many_v1"),
        replaces("workhorse_recover_stalled_v1"),
    ]
