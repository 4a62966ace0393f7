from django.apps import AppConfig


class JobtestsConfig(AppConfig):
    """Jobs and tables the acceptance tests drive real workers with."""

    name = "jobtests"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # As wagtail.search does for modelsearch: a package outside
        # INSTALLED_APPS, with an apps.py of its own, comes in through an
        # installed app (tests/integration/test_enqueue_from_any_thread.py).
        import searchlib.jobs
        import searchlib.tasks  # noqa: F401

        from .spans import install_from_environment

        install_from_environment()
