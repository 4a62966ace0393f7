"""Each ``runworker`` flag reaches the worker it starts (docs/worker.md): the
setting flags override ``WORKHORSE`` for that run, ``--id`` prefixes the
worker id, ``--queues`` and ``--concurrency`` size the slots, ``-v`` sets the
log level, and ``--database`` refuses a job of a served queue that is bound
to another alias, naming both.

The command is run in-process with the ``Worker`` it would start replaced by
one that only records its options; the real worker's behaviour under these
settings is what the acceptance tests show."""

from __future__ import annotations

import concurrent.futures
import logging
import socket
import sys
import threading

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

import django_workhorse as workhorse
from django_workhorse.core import registry
from django_workhorse.management.commands import runworker
from django_workhorse.worker.supervisor import child_argv


class RecordingWorker:
    """Stands in for ``Worker``: keeps the options it was given, runs nothing."""

    started: list = []

    def __init__(self, options) -> None:
        self.options = options
        RecordingWorker.started.append(options)

    def install_signal_handlers(self) -> None:
        pass

    def run(self) -> int:
        return 0


@pytest.fixture
def run_command(monkeypatch):
    """``run_command(*flags)``: the options of the worker ``runworker *flags`` starts."""
    monkeypatch.setattr(runworker, "Worker", RecordingWorker)
    monkeypatch.setattr(RecordingWorker, "started", [])
    # The schema checks before the start read the database, as the worker does.
    monkeypatch.setattr(runworker, "refuse_unusable_schema", lambda alias: None)
    logger = logging.getLogger("django_workhorse")
    level = logger.level

    def run(*flags: str):
        call_command("runworker", *flags)
        (options,) = RecordingWorker.started
        RecordingWorker.started.clear()
        return options

    yield run
    logger.setLevel(level)


def test_the_setting_flags_override_the_workhorse_settings_for_this_run(run_command):
    workhorse_settings = {
        "LOCK_DURATION": 60,
        "LOCK_RENEW_INTERVAL": 20,
        "STALLED_INTERVAL": 30,
        "POLL_INTERVAL": 5,
        "SHUTDOWN_GRACE": 30,
    }
    with override_settings(WORKHORSE=workhorse_settings):
        options = run_command(
            "--queues",
            "jobtests.record",
            "--lock-duration",
            "8",
            "--lock-renew-interval",
            "2.5",
            "--stalled-interval",
            "3",
            "--poll-interval",
            "0.5",
            "--shutdown-grace",
            "1.5",
        )
        unflagged = run_command("--queues", "jobtests.record")

    chosen = options.settings
    assert (
        chosen.lock_duration,
        chosen.lock_renew_interval,
        chosen.stalled_interval,
        chosen.poll_interval,
        chosen.shutdown_grace,
    ) == (8.0, 2.5, 3.0, 0.5, 1.5)
    kept = unflagged.settings
    assert (
        kept.lock_duration,
        kept.lock_renew_interval,
        kept.stalled_interval,
        kept.poll_interval,
        kept.shutdown_grace,
    ) == (60.0, 20.0, 30.0, 5.0, 30.0)


def test_a_lock_duration_flag_renews_at_half_of_it_unless_the_interval_is_given(run_command):
    options = run_command("--queues", "jobtests.record", "--lock-duration", "10")
    assert (options.settings.lock_duration, options.settings.lock_renew_interval) == (10.0, 5.0)


def test_a_lock_duration_flag_shorter_than_the_configured_renewal_is_refused(run_command):
    with (
        override_settings(WORKHORSE={"LOCK_RENEW_INTERVAL": 20}),
        pytest.raises(CommandError, match=r"WORKHORSE\['LOCK_RENEW_INTERVAL'\] must be shorter"),
    ):
        run_command("--queues", "jobtests.record", "--lock-duration", "10")


def test_a_renewal_flag_not_shorter_than_the_lease_is_refused_naming_the_flag(run_command):
    """The value came from the flag: the message names it, not a setting the
    project never wrote."""
    with pytest.raises(CommandError) as raised:
        run_command("--queues", "jobtests.record", "--lock-renew-interval", "40")
    assert str(raised.value).startswith(
        "--lock-renew-interval must be shorter than LOCK_DURATION, or leases expire between "
        "heartbeats; got 40.0 with LOCK_DURATION 30.0"
    )
    assert "WORKHORSE['LOCK_RENEW_INTERVAL']" not in str(raised.value)
    assert not RecordingWorker.started


def test_id_prefixes_the_worker_id_and_wins_over_the_worker_id_setting(run_command):
    with override_settings(WORKHORSE={"WORKER_ID": "from-settings"}):
        flagged = run_command("--queues", "jobtests.record", "--id", "web-7")
        configured = run_command("--queues", "jobtests.record")
    by_host = run_command("--queues", "jobtests.record")

    assert flagged.worker_id.startswith("web-7:")
    assert configured.worker_id.startswith("from-settings:")
    host, pid, suffix = by_host.worker_id.rsplit(":", 2)
    assert host and pid.isdigit() and suffix
    again = run_command("--queues", "jobtests.record", "--id", "web-7")
    assert again.worker_id != flagged.worker_id  # unique per process run


def test_queues_and_concurrency_size_the_slots_of_each_served_queue(run_command):
    with override_settings(
        WORKHORSE={"CONCURRENCY": 3, "QUEUES": {"jobtests.sleep": {"concurrency": 2}}}
    ):
        flagged = run_command("--queues", "jobtests.record,jobtests.sleep", "--concurrency", "6")
        unflagged = run_command("--queues", "jobtests.record")

    assert flagged.queues == ["jobtests.record", "jobtests.sleep"]
    # QUEUES wins over --concurrency, which wins over CONCURRENCY.
    assert flagged.concurrency == {"jobtests.record": 6, "jobtests.sleep": 2}
    assert unflagged.concurrency == {"jobtests.record": 3}


def test_without_queues_the_worker_serves_every_queue_of_a_registered_job_and_of_queues(
    run_command,
):
    with override_settings(WORKHORSE={"QUEUES": {"audit.only-in-settings": {}}}):
        options = run_command()
    registered = {d.queue for d in registry.all_jobs().values() if d.using == "default"}
    tasks_queues = set(settings.TASKS["default"]["QUEUES"])
    expected = registered | {"audit.only-in-settings", "default"} | tasks_queues
    assert set(options.queues) == expected
    assert options.alias == "default"


def test_without_queues_the_worker_serves_the_queues_of_the_tasks_in_each_apps_tasks_py(
    run_command,
):
    """Django's start-up imports every installed app's tasks.py (jobtests'
    here) when a TASKS backend is workhorse's: its tasks' queues are served."""
    options = run_command()
    assert {"jobtests.tasks", "jobtests.tasks-order"} <= set(options.queues)


@pytest.mark.parametrize(
    ("flag", "level"), [("0", "ERROR"), ("1", "WARNING"), ("2", "INFO"), ("3", "DEBUG")]
)
def test_verbosity_sets_the_level_of_the_workhorse_loggers(run_command, flag, level):
    run_command("--queues", "jobtests.record", "-v", flag)
    assert logging.getLevelName(logging.getLogger("django_workhorse").level) == level


@pytest.fixture
def split_queue(monkeypatch, side_alias):
    """Queue ``audit.split`` with one job on each alias."""
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(name="audit.split.here", queue="audit.split")
    def here() -> None: ...

    @workhorse.job(name="audit.split.there", queue="audit.split", using=side_alias)
    def there() -> None: ...

    return "audit.split"


def test_a_job_of_a_served_queue_bound_to_another_database_is_refused_naming_both(
    run_command, split_queue
):
    with pytest.raises(CommandError) as raised:
        run_command("--queues", split_queue, "--database", "default")

    message = str(raised.value)
    assert "'audit.split.there' is bound to database 'side'" in message
    assert "on database 'default'" in message
    assert "--database side" in message
    assert not RecordingWorker.started


def test_database_serves_the_queues_of_the_jobs_bound_to_that_alias(
    run_command, side_alias, monkeypatch
):
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))

    @workhorse.job(name="audit.side.only", queue="audit.side-only", using=side_alias)
    def side_only() -> None: ...

    options = run_command("--database", side_alias)
    assert options.alias == side_alias
    assert "audit.side-only" in options.queues
    on_side = {d.queue for d in registry.all_jobs().values() if d.using == side_alias}
    assert set(options.queues) == on_side  # none of the default alias's queues
    assert "jobtests.record" not in options.queues


def test_an_unknown_database_alias_is_refused_naming_the_aliases(run_command):
    with pytest.raises(
        CommandError, match=r"database 'nowhere' is not an alias of settings.DATABASES \(default\)"
    ):
        run_command("--database", "nowhere")


def test_an_empty_database_alias_is_refused_not_read_as_the_default(run_command):
    with pytest.raises(CommandError, match=r"database '' is not an alias of settings.DATABASES"):
        run_command("--database=")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--processes", "1001"], "argument --processes: must be at most 1000, got 1001"),
        (["--processes", "0"], "argument --processes: must be at least 1, got 0"),
        (["--concurrency", "many"], "argument --concurrency: expected a whole number, got 'many'"),
        (["--metrics-port", "70000"], "argument --metrics-port: a TCP port is at most 65535"),
        (["--shutdown-grace", "0"], "argument --shutdown-grace: must be more than 0 seconds"),
        (
            ["--poll-interval", "1e-9"],
            "argument --poll-interval: must be at least 0.01 seconds (shorter, a worker would "
            "query the database without pause), got 1e-9",
        ),
        (["--lock-duration", "0.01"], "argument --lock-duration: must be at least 0.02 seconds"),
        (
            ["--stalled-interval", "soon"],
            "argument --stalled-interval: expected seconds, got 'soon'",
        ),
        (["--queues", ","], "argument --queues: name at least one queue"),
        (
            ["--exclude-queues", ","],
            "argument --exclude-queues: name at least one queue, e.g. email,default",
        ),
        (
            ["--queues", "jobtests.record:4"],
            "argument --queues: 'jobtests.record:4': --queues takes queue names only; give "
            "queue 'jobtests.record' 4 slot(s) with "
            "WORKHORSE['QUEUES']['jobtests.record']['concurrency'], or every served queue "
            "with --concurrency",
        ),
        (["--id", ""], "argument --id: must not be empty"),
        (
            ["--id", "w" * 201],
            "argument --id: must be at most 200 characters (a worker id travels in "
            "notifications, which PostgreSQL limits to 8,000 bytes), got 201",
        ),
        (["--burst", "--processes", "2"], "--burst runs one process; drop --processes"),
    ],
)
def test_a_bad_flag_is_refused_naming_it(run_command, flags, message):
    with pytest.raises(CommandError) as raised:
        run_command("--queues", "jobtests.record", *flags)
    assert message in str(raised.value)
    assert not RecordingWorker.started


def test_burst_with_processes_is_refused_before_the_metrics_port_is_opened(run_command):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        with pytest.raises(CommandError) as raised:
            run_command(
                "--queues", "jobtests.record", "--burst", "--processes", "2", "--metrics-port", port
            )
    assert str(raised.value) == "--burst runs one process; drop --processes"


def test_a_hook_module_that_raises_on_import_stops_the_worker_with_a_message(
    run_command, tmp_path, monkeypatch
):
    (tmp_path / "audit_raising_hooks.py").write_text("raise RuntimeError('no config here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with (
        override_settings(WORKHORSE={"ON_JOB_CANCELED": "audit_raising_hooks.on_cancel"}),
        pytest.raises(CommandError) as raised,
    ):
        run_command("--queues", "jobtests.record")
    assert str(raised.value) == (
        "cannot import 'audit_raising_hooks.on_cancel': RuntimeError: no config here"
    )


@pytest.mark.parametrize(
    "spelling",
    [["--processes", "2"], ["--processes=2"], ["--proc", "2"], ["--processe=2"]],
)
def test_a_child_of_a_supervisor_runs_one_process_however_processes_was_spelled(spelling):
    """argparse takes abbreviations: a child must not become a supervisor too."""
    argv = child_argv(["manage.py", "runworker", *spelling, "--queues", "jobtests.record"])

    assert argv[:3] == [sys.executable, "manage.py", "runworker"]
    parser = runworker.Command().create_parser("manage.py", "runworker")
    options = parser.parse_args(argv[3:])
    assert (options.processes, options.queues) == (1, ["jobtests.record"])


def test_a_thread_of_the_calling_process_does_not_end_it_after_an_in_process_run(run_command):
    release = threading.Event()
    caller_thread = threading.Thread(target=release.wait, name="caller-thread")
    caller_thread.start()  # non-daemon, started before the command ran
    try:
        run_command("--queues", "jobtests.record")  # returns: the process was not ended
    finally:
        release.set()
        caller_thread.join()


def test_an_idle_executor_thread_started_during_the_run_does_not_end_the_process():
    before = set(threading.enumerate())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: None).result()  # its worker thread now idles, non-daemon
        runworker.exit_past_handler_threads(0, before)  # returns: the process was not ended
