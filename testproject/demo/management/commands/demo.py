"""``manage.py demo``: migrate, enqueue sample jobs, run workers, serve the admin."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

import django_workhorse as workhorse
from demo.jobs import add, send_welcome_email, sleep_for

MANAGE = str(Path(__file__).resolve().parents[3] / "manage.py")


class Command(BaseCommand):
    help = "Run the django-workhorse demo: sample jobs, two workers and the admin."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", default="8000", help="port of the admin (default 8000)")
        parser.add_argument(
            "--no-serve", action="store_true", help="stop after the sample jobs finished"
        )

    def handle(self, *args, **options) -> None:
        call_command("migrate", verbosity=0)
        self.stdout.write("migrated")
        user_model = get_user_model()
        if not user_model.objects.filter(username="admin").exists():
            user_model.objects.create_superuser("admin", "admin@example.com", "admin")

        with transaction.atomic():  # jobs commit with the business data, or not at all
            handles = [add.enqueue(a=i, b=i * 10) for i in range(3)]
            handles.append(send_welcome_email.enqueue(user_id=1))
            handles.append(send_welcome_email.enqueue(user_id=2, flaky=1))
            handles.append(send_welcome_email.enqueue(user_id=3, flaky=5))
            handles.append(add.options(delay=2, priority=10).enqueue(a=40, b=2))
            handles.append(sleep_for.enqueue(seconds=1.0))
        self.stdout.write(f"enqueued {len(handles)} sample jobs")

        # SIGTERM (make's own on a stop, a container's) ends the demo as
        # Ctrl-C does: the workers and the server stop with it.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        worker = subprocess.Popen(
            [sys.executable, MANAGE, "runworker", "--processes", "2", "--concurrency", "4"]
        )
        server = None
        try:
            admin = workhorse.Admin()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                snapshots = [admin.get_job(h.id) for h in handles]
                if all(s.is_terminal for s in snapshots):
                    break
                time.sleep(0.2)
            self.stdout.write(f"\n{'job':>5}  {'name':<32} {'state':<10} {'attempts':>8}  result")
            for snap in snapshots:
                outcome = (
                    snap.result if snap.state == "succeeded" else (snap.error or {}).get("message")
                )
                self.stdout.write(
                    f"{snap.id:>5}  {snap.name:<32} {snap.state:<10} "
                    f"{snap.current_attempt:>4}/{snap.max_attempts:<3}  {outcome}"
                )
            if options["no_serve"]:
                return
            server = subprocess.Popen(
                [sys.executable, MANAGE, "runserver", f"127.0.0.1:{options['port']}", "--noreload"]
            )
            self.stdout.write(
                f"\nadmin: http://127.0.0.1:{options['port']}/admin/ (user admin, password admin)"
                "\nworkers are running; Ctrl-C stops everything"
            )
            server.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for proc in (server, worker):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
            for proc in (server, worker):
                if proc is not None:
                    try:
                        proc.wait(40)
                    except subprocess.TimeoutExpired:
                        proc.kill()
