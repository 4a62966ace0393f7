"""Without the otel and prometheus extras nothing of theirs is imported, the
worker runs handlers as they are, and asking for metrics names the extra; with
the OpenTelemetry API but no tracer provider, the worker makes no spans."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from jobtests.jobs import record

from django_workhorse.models import JobOutcome
from tests.acceptance.conftest import TESTPROJECT, database_url

pytestmark = pytest.mark.django_db(
    transaction=True, available_apps=["django_workhorse", "jobtests"]
)

BLOCKED = textwrap.dedent(
    """
    import sys

    # As if opentelemetry and prometheus_client were not installed: importing
    # them raises ImportError and find_spec finds nothing.
    sys.modules["opentelemetry"] = None
    sys.modules["prometheus_client"] = None
    """
)

SCRIPT = BLOCKED + textwrap.dedent(
    """
    import django
    django.setup()
    from django.core.management import call_command
    from django_workhorse.core import trace_context
    from django_workhorse.worker import instruments

    assert trace_context.current_context() is None
    call_command("runworker", "--burst", "--queues", "jobtests.record")
    assert instruments.ACTIVE is None
    extras = ("opentelemetry", "prometheus_client")
    loaded = sorted(m for m, v in sys.modules.items() if v and m.split(".")[0] in extras)
    print("loaded:", loaded)
    """
)


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
    }
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=TESTPROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_worker_without_the_extras_imports_neither_and_runs_jobs():
    handle = record.enqueue(label="plain")

    done = run(SCRIPT)

    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout
    assert JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists()


def test_metrics_port_without_the_prometheus_extra_names_the_extra():
    script = BLOCKED + textwrap.dedent(
        """
        import django
        django.setup()
        from django.core.management import call_command
        from django.core.management.base import CommandError
        try:
            call_command("runworker", "--metrics-port", "9", "--queues", "jobtests.record")
        except CommandError as exc:
            print("refused:", exc)
        """
    )

    done = run(script)

    assert "refused: --metrics-port 9: metrics need prometheus-client" in done.stdout, done.stderr
    assert "django-workhorse[prometheus]" in done.stdout


def test_queue_metrics_interval_without_the_prometheus_extra_is_a_settings_error():
    script = BLOCKED + textwrap.dedent(
        """
        import django
        django.setup()
        from django_workhorse.core.conf import problems, raw_settings
        from django.test import override_settings
        with override_settings(WORKHORSE={"QUEUE_METRICS_INTERVAL": 5}):
            print(problems(raw_settings()))
        """
    )

    done = run(script)

    assert "[('QUEUE_METRICS_INTERVAL', \"needs prometheus-client" in done.stdout, done.stderr


def test_a_worker_with_opentelemetry_but_no_tracer_provider_makes_no_spans():
    # The API is installed and imported, but no SDK provider was set: the
    # API's spans would record nothing, so the worker makes none and switches
    # no instrument on.
    script = textwrap.dedent(
        """
        import django
        django.setup()
        from opentelemetry import trace
        from django.core.management import call_command
        from django_workhorse.worker import instruments

        call_command("runworker", "--burst", "--queues", "jobtests.record")
        print("active:", instruments.ACTIVE)
        print("provider:", type(trace.get_tracer_provider()).__name__)
        """
    )
    handle = record.enqueue(label="no provider")

    done = run(script)

    assert done.returncode == 0, done.stderr
    assert "active: None" in done.stdout
    assert "provider: ProxyTracerProvider" in done.stdout
    assert JobOutcome.objects.filter(job_id=handle.id, state="succeeded").exists()
