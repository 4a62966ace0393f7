from django.apps import AppConfig


class JobtestsConfig(AppConfig):
    """Jobs and tables the acceptance tests drive real workers with."""

    name = "jobtests"
    default_auto_field = "django.db.models.BigAutoField"
