# The workhorse_jobs fixture; in a project's root conftest.py the usual line is
#     pytest_plugins = ["django_workhorse.testing"]
from django_workhorse.testing import workhorse_jobs  # noqa: F401
