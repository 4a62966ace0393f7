from django.apps import AppConfig


class WorkhorseConfig(AppConfig):
    """Registers the system checks and imports every installed app's ``jobs.py``
    (and, when a ``TASKS`` backend is the workhorse one, every ``tasks.py``)."""

    name = "django_workhorse"
    label = "django_workhorse"
    verbose_name = "Workhorse jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_migrate
        from django.utils.module_loading import autodiscover_modules

        from .core import registry
        from .core.discovery import defined_job, import_problem, remember_apps
        from .operations import checks  # noqa: F401  (registers the checks)
        from .operations.servable import uses_tasks_backend

        remember_apps()
        pre_migrate.connect(refuse_other_databases, sender=self)
        # A job defined outside jobs.py is found by its import path, inside
        # the installed apps only (docs/worker.md, "Where jobs are found").
        registry.add_resolver(defined_job)
        registry.add_explainer(import_problem)
        autodiscover_modules("jobs")
        if uses_tasks_backend():
            from .tasks.backend import resolve_task_job

            # A job named by a task's path finds its task on first use; a
            # worker serves the queues of the tasks it knows at start-up.
            registry.add_resolver(resolve_task_job)
            autodiscover_modules("tasks")


def refuse_other_databases(using: str, **kwargs: object) -> None:
    """``migrate`` on a database that holds jobs and is not PostgreSQL stops
    before it applies anything, with one line that says what to change."""
    from django.core.management.base import CommandError

    from .db.preflight import not_postgresql
    from .operations.checks import store_aliases

    if using in store_aliases() and (problem := not_postgresql(using)):
        raise CommandError(problem)
