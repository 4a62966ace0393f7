from django.apps import AppConfig


class WorkhorseConfig(AppConfig):
    """Registers the system checks and imports every installed app's ``jobs.py``
    (and, when a ``TASKS`` backend is the workhorse one, every ``tasks.py``)."""

    name = "django_workhorse"
    label = "django_workhorse"
    verbose_name = "Workhorse jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from . import checks  # noqa: F401  (registers the checks)

        autodiscover_modules("jobs")
        if uses_tasks_backend():
            from . import registry
            from .tasks.backend import resolve_task_job

            # A job named by a task's path finds its task on first use; a
            # worker serves the queues of the tasks it knows at start-up.
            registry.add_resolver(resolve_task_job)
            autodiscover_modules("tasks")


def uses_tasks_backend() -> bool:
    """Whether ``settings.TASKS`` names the workhorse backend."""
    from django.conf import settings

    configured = getattr(settings, "TASKS", None) or {}
    return any(
        isinstance(params, dict)
        and params.get("BACKEND") == "django_workhorse.tasks.WorkhorseBackend"
        for params in configured.values()
    )
