import django.db.models.deletion
from django.db import migrations, models

from django_workhorse.sql_files import function_file, schema_file


def choices(*values):
    """A field's choices as TextChoices makes them: each value, and its words capitalised."""
    return [(value, value.replace("_", " ").title()) for value in values]


JOB_STATES = choices("blocked", "scheduled", "ready", "active", "succeeded", "failed", "canceled")
ATTEMPT_OUTCOMES = choices("succeeded", "failed", "timed_out", "stalled", "canceled", "slept")
EVENT_KINDS = choices(
    "enqueued",
    "promoted",
    "claimed",
    "succeeded",
    "retry_scheduled",
    "failed",
    "released",
    "stalled",
    "made_due",
    "retried",
    "canceled",
    "unblocked",
    "cancel_requested",
    "slept",
)


def job_key(related_name):
    """The primary key of a job's runtime, outcome or query row: its job."""
    return (
        "job",
        models.OneToOneField(
            on_delete=django.db.models.deletion.DO_NOTHING,
            primary_key=True,
            related_name=related_name,
            serialize=False,
            to="django_workhorse.job",
        ),
    )


def unmanaged(db_table):
    """The options of a model over a table the SQL files create."""
    return {"db_table": db_table, "managed": False}


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        function_file("workhorse_job_defaults_v1.sql"),
        schema_file("tables_v1.sql"),
        schema_file("queue_counts_v1.sql"),
        schema_file("worker_registry_v1.sql"),
        function_file("workhorse_backoff_delay_v1.sql"),
        function_file("workhorse_ensure_partitions_v1.sql"),
        function_file("workhorse_settle_dependents_v1.sql"),
        function_file("workhorse_refuse_named_twice_v1.sql"),
        function_file("workhorse_end_runs_v1.sql"),
        function_file("workhorse_requeue_runs_v1.sql"),
        function_file("workhorse_enqueue_many_v1.sql"),
        function_file("workhorse_enqueue_batch_v1.sql"),
        function_file("workhorse_lock_prerequisites_v1.sql"),
        function_file("workhorse_enqueue_v1.sql"),
        function_file("workhorse_claim_many_v1.sql"),
        function_file("workhorse_heartbeat_many_v1.sql"),
        function_file("workhorse_succeed_many_v1.sql"),
        function_file("workhorse_fail_many_v1.sql"),
        function_file("workhorse_lock_runs_v1.sql"),
        function_file("workhorse_succeed_and_claim_v1.sql"),
        function_file("workhorse_release_many_v1.sql"),
        function_file("workhorse_recover_stalled_v1.sql"),
        function_file("workhorse_next_run_at_v1.sql"),
        function_file("workhorse_get_job_v1.sql"),
        schema_file("schedules_v1.sql"),
        function_file("workhorse_schedule_sync_v1.sql"),
        function_file("workhorse_schedule_due_v1.sql"),
        function_file("workhorse_schedule_fire_v1.sql"),
        function_file("workhorse_schedule_set_paused_v1.sql"),
        function_file("workhorse_list_schedules_v1.sql"),
        function_file("workhorse_queue_depth_v1.sql"),
        function_file("workhorse_get_attempts_v1.sql"),
        function_file("workhorse_make_due_v1.sql"),
        function_file("workhorse_live_queues_v1.sql"),
        function_file("workhorse_set_queue_limits_v1.sql"),
        # The operator's view: reads, actions and retention.
        schema_file("admin_indexes_v1.sql"),
        function_file("workhorse_job_timeline_v1.sql"),
        function_file("workhorse_list_jobs_v1.sql"),
        function_file("workhorse_queue_stats_v1.sql"),
        function_file("workhorse_queue_names_v1.sql"),
        function_file("workhorse_retry_v1.sql"),
        function_file("workhorse_promote_v1.sql"),
        function_file("workhorse_cancel_v1.sql"),
        function_file("workhorse_set_queue_paused_v1.sql"),
        function_file("workhorse_prune_v1.sql"),
        # Durable execution: checkpoints and sleep.
        function_file("workhorse_checkpoint_v1.sql"),
        function_file("workhorse_get_checkpoints_v1.sql"),
        function_file("workhorse_sleep_many_v1.sql"),
        # The worker's vacuum turn: which tables with churn need a VACUUM.
        function_file("workhorse_vacuum_due_v1.sql"),
        # The live workers, from their heartbeats.
        function_file("workhorse_list_workers_v1.sql"),
        function_file("workhorse_worker_gone_v1.sql"),
        # Counts for the job list and the filter-wide actions.
        function_file("workhorse_count_jobs_v1.sql"),
        function_file("workhorse_failures_v1.sql"),
        migrations.RunSQL(
            "SELECT workhorse_ensure_partitions_v1()", reverse_sql=migrations.RunSQL.noop
        ),
        migrations.CreateModel(
            name="AttemptHistory",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("job_id", models.BigIntegerField()),
                ("attempt", models.IntegerField()),
                ("outcome", models.TextField(choices=ATTEMPT_OUTCOMES)),
                ("worker_id", models.TextField()),
                ("started_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField()),
                ("error", models.JSONField(null=True)),
            ],
            options=unmanaged("workhorse_attempt_history"),
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
                **unmanaged("workhorse_job"),
                "permissions": [("view_job_payload", "Can see job payloads, results and errors")],
            },
        ),
        migrations.CreateModel(
            name="JobEvent",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("job_id", models.BigIntegerField()),
                ("at", models.DateTimeField()),
                ("kind", models.TextField(choices=EVENT_KINDS)),
                ("attempt", models.IntegerField(null=True)),
                ("worker_id", models.TextField(null=True)),
                ("data", models.JSONField(null=True)),
            ],
            options=unmanaged("workhorse_job_event"),
        ),
        migrations.CreateModel(
            name="Queue",
            fields=[
                ("name", models.TextField(primary_key=True, serialize=False)),
                ("paused", models.BooleanField()),
                ("updated_at", models.DateTimeField()),
            ],
            options=unmanaged("workhorse_queue"),
        ),
        migrations.CreateModel(
            name="JobOutcome",
            fields=[
                job_key("outcome"),
                ("state", models.TextField(choices=JOB_STATES)),
                ("result", models.JSONField(null=True)),
                ("error", models.JSONField(null=True)),
                ("attempts", models.IntegerField()),
                ("stall_count", models.IntegerField()),
                ("finished_at", models.DateTimeField()),
            ],
            options=unmanaged("workhorse_job_outcome"),
        ),
        migrations.CreateModel(
            name="JobQuery",
            fields=[
                job_key("query_row"),
                ("queue", models.TextField()),
                ("name", models.TextField()),
                ("created_at", models.DateTimeField()),
            ],
            options=unmanaged("workhorse_job_query"),
        ),
        migrations.CreateModel(
            name="JobRuntime",
            fields=[
                job_key("runtime"),
                ("queue", models.TextField()),
                ("priority", models.SmallIntegerField()),
                ("state", models.TextField(choices=JOB_STATES)),
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
            options=unmanaged("workhorse_job_runtime"),
        ),
    ]
