from django.apps import AppConfig


class ShopConfig(AppConfig):
    """A small app written the way a user writes one: jobs, a task, and tests
    that run them with ``django_workhorse.testing``."""

    name = "shop"
