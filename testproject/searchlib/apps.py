from django.apps import AppConfig


class SearchlibConfig(AppConfig):
    """Never installed: ``jobtests`` imports the package from its ``ready()``."""

    name = "searchlib"
