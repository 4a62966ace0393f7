from django.apps import AppConfig


class WorkhorseConfig(AppConfig):
    """Registers the system checks and imports every installed app's ``jobs.py``."""

    name = "django_workhorse"
    label = "django_workhorse"
    verbose_name = "Workhorse jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.utils.module_loading import autodiscover_modules

        from . import checks  # noqa: F401  (registers the checks)

        autodiscover_modules("jobs")
