import django.db.models.deletion
from django.db import migrations, models

from django_workhorse.sql_files import RunSQLFile


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        RunSQLFile("workhorse_job_defaults_v1.sql", drops_function="workhorse_job_defaults_v1"),
        RunSQLFile("tables_v1.sql", reverse_file="tables_v1.down.sql"),
        RunSQLFile("queue_counts_v1.sql", reverse_file="queue_counts_v1.down.sql"),
        RunSQLFile("worker_registry_v1.sql", reverse_file="worker_registry_v1.down.sql"),
        RunSQLFile("workhorse_backoff_delay_v1.sql", drops_function="workhorse_backoff_delay_v1"),
        RunSQLFile(
            "workhorse_ensure_partitions_v1.sql", drops_function="workhorse_ensure_partitions_v1"
        ),
        RunSQLFile(
            "workhorse_settle_dependents_v1.sql", drops_function="workhorse_settle_dependents_v1"
        ),
        RunSQLFile(
            "workhorse_refuse_named_twice_v1.sql", drops_function="workhorse_refuse_named_twice_v1"
        ),
        RunSQLFile("workhorse_end_runs_v1.sql", drops_function="workhorse_end_runs_v1"),
        RunSQLFile("workhorse_requeue_runs_v1.sql", drops_function="workhorse_requeue_runs_v1"),
        RunSQLFile("workhorse_enqueue_many_v1.sql", drops_function="workhorse_enqueue_many_v1"),
        RunSQLFile("workhorse_enqueue_batch_v1.sql", drops_function="workhorse_enqueue_batch_v1"),
        RunSQLFile(
            "workhorse_lock_prerequisites_v1.sql",
            drops_function="workhorse_lock_prerequisites_v1",
        ),
        RunSQLFile("workhorse_enqueue_v1.sql", drops_function="workhorse_enqueue_v1"),
        RunSQLFile("workhorse_claim_many_v1.sql", drops_function="workhorse_claim_many_v1"),
        RunSQLFile("workhorse_heartbeat_many_v1.sql", drops_function="workhorse_heartbeat_many_v1"),
        RunSQLFile("workhorse_succeed_many_v1.sql", drops_function="workhorse_succeed_many_v1"),
        RunSQLFile("workhorse_fail_many_v1.sql", drops_function="workhorse_fail_many_v1"),
        RunSQLFile("workhorse_lock_runs_v1.sql", drops_function="workhorse_lock_runs_v1"),
        RunSQLFile(
            "workhorse_succeed_and_claim_v1.sql", drops_function="workhorse_succeed_and_claim_v1"
        ),
        RunSQLFile("workhorse_release_many_v1.sql", drops_function="workhorse_release_many_v1"),
        RunSQLFile(
            "workhorse_recover_stalled_v1.sql", drops_function="workhorse_recover_stalled_v1"
        ),
        RunSQLFile("workhorse_next_run_at_v1.sql", drops_function="workhorse_next_run_at_v1"),
        RunSQLFile("workhorse_get_job_v1.sql", drops_function="workhorse_get_job_v1"),
        RunSQLFile("schedules_v1.sql", reverse_file="schedules_v1.down.sql"),
        RunSQLFile("workhorse_schedule_sync_v1.sql", drops_function="workhorse_schedule_sync_v1"),
        RunSQLFile("workhorse_schedule_due_v1.sql", drops_function="workhorse_schedule_due_v1"),
        RunSQLFile("workhorse_schedule_fire_v1.sql", drops_function="workhorse_schedule_fire_v1"),
        RunSQLFile(
            "workhorse_schedule_set_paused_v1.sql",
            drops_function="workhorse_schedule_set_paused_v1",
        ),
        RunSQLFile("workhorse_list_schedules_v1.sql", drops_function="workhorse_list_schedules_v1"),
        RunSQLFile("workhorse_queue_depth_v1.sql", drops_function="workhorse_queue_depth_v1"),
        RunSQLFile(
            "workhorse_claim_many_observed_v1.sql",
            drops_function="workhorse_claim_many_observed_v1",
        ),
        RunSQLFile(
            "workhorse_claim_observations_v1.sql",
            drops_function="workhorse_claim_observations_v1",
        ),
        RunSQLFile("workhorse_get_attempts_v1.sql", drops_function="workhorse_get_attempts_v1"),
        RunSQLFile("workhorse_make_due_v1.sql", drops_function="workhorse_make_due_v1"),
        RunSQLFile("workhorse_live_queues_v1.sql", drops_function="workhorse_live_queues_v1"),
        RunSQLFile(
            "workhorse_set_queue_limits_v1.sql", drops_function="workhorse_set_queue_limits_v1"
        ),
        # The operator's view: reads, actions and retention.
        RunSQLFile("admin_indexes_v1.sql", reverse_file="admin_indexes_v1.down.sql"),
        RunSQLFile("workhorse_job_timeline_v1.sql", drops_function="workhorse_job_timeline_v1"),
        RunSQLFile("workhorse_list_jobs_v1.sql", drops_function="workhorse_list_jobs_v1"),
        RunSQLFile("workhorse_queue_stats_v1.sql", drops_function="workhorse_queue_stats_v1"),
        RunSQLFile("workhorse_queue_names_v1.sql", drops_function="workhorse_queue_names_v1"),
        RunSQLFile("workhorse_retry_v1.sql", drops_function="workhorse_retry_v1"),
        RunSQLFile("workhorse_promote_v1.sql", drops_function="workhorse_promote_v1"),
        RunSQLFile("workhorse_cancel_v1.sql", drops_function="workhorse_cancel_v1"),
        RunSQLFile(
            "workhorse_set_queue_paused_v1.sql", drops_function="workhorse_set_queue_paused_v1"
        ),
        RunSQLFile("workhorse_prune_v1.sql", drops_function="workhorse_prune_v1"),
        # Durable execution: checkpoints and sleep.
        RunSQLFile("workhorse_checkpoint_v1.sql", drops_function="workhorse_checkpoint_v1"),
        RunSQLFile(
            "workhorse_get_checkpoints_v1.sql", drops_function="workhorse_get_checkpoints_v1"
        ),
        RunSQLFile("workhorse_sleep_many_v1.sql", drops_function="workhorse_sleep_many_v1"),
        # The worker's vacuum turn: which tables with churn need a VACUUM.
        RunSQLFile("workhorse_vacuum_due_v1.sql", drops_function="workhorse_vacuum_due_v1"),
        # The live workers, from their heartbeats.
        RunSQLFile("workhorse_list_workers_v1.sql", drops_function="workhorse_list_workers_v1"),
        RunSQLFile("workhorse_worker_gone_v1.sql", drops_function="workhorse_worker_gone_v1"),
        # Counts for the job list and the filter-wide actions.
        RunSQLFile("workhorse_count_jobs_v1.sql", drops_function="workhorse_count_jobs_v1"),
        RunSQLFile("workhorse_failures_v1.sql", drops_function="workhorse_failures_v1"),
        migrations.RunSQL(
            "SELECT workhorse_ensure_partitions_v1()", reverse_sql=migrations.RunSQL.noop
        ),
        migrations.CreateModel(
            name="AttemptHistory",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("job_id", models.BigIntegerField()),
                ("attempt", models.IntegerField()),
                (
                    "outcome",
                    models.TextField(
                        choices=[
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("timed_out", "Timed Out"),
                            ("stalled", "Stalled"),
                            ("canceled", "Canceled"),
                            ("slept", "Slept"),
                        ]
                    ),
                ),
                ("worker_id", models.TextField()),
                ("started_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField()),
                ("error", models.JSONField(null=True)),
            ],
            options={
                "db_table": "workhorse_attempt_history",
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("name", models.TextField()),
                ("queue", models.TextField()),
                ("payload", models.JSONField()),
                ("max_attempts", models.IntegerField()),
                ("priority", models.SmallIntegerField()),
                ("timeout", models.DurationField(null=True)),
                ("backoff", models.JSONField(null=True)),
                ("max_stalled", models.IntegerField()),
                ("idempotency_key", models.TextField(null=True)),
                ("trace_context", models.JSONField(null=True)),
                ("created_at", models.DateTimeField()),
                ("dependency_policy", models.TextField(null=True)),
                ("first_due_at", models.DateTimeField(null=True)),
            ],
            options={
                "db_table": "workhorse_job",
                "managed": False,
                "permissions": [
                    ("view_job_payload", "Can see job payloads, results and errors")
                ],
            },
        ),
        migrations.CreateModel(
            name="JobEvent",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("job_id", models.BigIntegerField()),
                ("at", models.DateTimeField()),
                (
                    "kind",
                    models.TextField(
                        choices=[
                            ("enqueued", "Enqueued"),
                            ("promoted", "Promoted"),
                            ("claimed", "Claimed"),
                            ("succeeded", "Succeeded"),
                            ("retry_scheduled", "Retry Scheduled"),
                            ("failed", "Failed"),
                            ("released", "Released"),
                            ("stalled", "Stalled"),
                            ("made_due", "Made Due"),
                            ("retried", "Retried"),
                            ("canceled", "Canceled"),
                            ("unblocked", "Unblocked"),
                            ("cancel_requested", "Cancel Requested"),
                            ("slept", "Slept"),
                        ]
                    ),
                ),
                ("attempt", models.IntegerField(null=True)),
                ("worker_id", models.TextField(null=True)),
                ("data", models.JSONField(null=True)),
            ],
            options={
                "db_table": "workhorse_job_event",
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="Queue",
            fields=[
                ("name", models.TextField(primary_key=True, serialize=False)),
                ("paused", models.BooleanField()),
                ("updated_at", models.DateTimeField()),
            ],
            options={
                "db_table": "workhorse_queue",
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="JobOutcome",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="outcome",
                        serialize=False,
                        to="django_workhorse.job",
                    ),
                ),
                (
                    "state",
                    models.TextField(
                        choices=[
                            ("blocked", "Blocked"),
                            ("scheduled", "Scheduled"),
                            ("ready", "Ready"),
                            ("active", "Active"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("canceled", "Canceled"),
                        ]
                    ),
                ),
                ("result", models.JSONField(null=True)),
                ("error", models.JSONField(null=True)),
                ("attempts", models.IntegerField()),
                ("stall_count", models.IntegerField()),
                ("finished_at", models.DateTimeField()),
            ],
            options={
                "db_table": "workhorse_job_outcome",
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="JobQuery",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="query_row",
                        serialize=False,
                        to="django_workhorse.job",
                    ),
                ),
                ("queue", models.TextField()),
                ("name", models.TextField()),
                ("created_at", models.DateTimeField()),
            ],
            options={
                "db_table": "workhorse_job_query",
                "managed": False,
            },
        ),
        migrations.CreateModel(
            name="JobRuntime",
            fields=[
                (
                    "job",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="runtime",
                        serialize=False,
                        to="django_workhorse.job",
                    ),
                ),
                ("queue", models.TextField()),
                ("priority", models.SmallIntegerField()),
                (
                    "state",
                    models.TextField(
                        choices=[
                            ("blocked", "Blocked"),
                            ("scheduled", "Scheduled"),
                            ("ready", "Ready"),
                            ("active", "Active"),
                            ("succeeded", "Succeeded"),
                            ("failed", "Failed"),
                            ("canceled", "Canceled"),
                        ]
                    ),
                ),
                ("run_at", models.DateTimeField()),
                ("attempt", models.IntegerField()),
                ("stall_count", models.IntegerField()),
                ("worker_id", models.TextField(null=True)),
                ("fence", models.BigIntegerField()),
                ("lease_expires_at", models.DateTimeField(null=True)),
                ("attempt_started_at", models.DateTimeField(null=True)),
                ("cancel_requested", models.BooleanField()),
                ("pending_dependencies", models.IntegerField()),
            ],
            options={
                "db_table": "workhorse_job_runtime",
                "managed": False,
            },
        ),
    ]
