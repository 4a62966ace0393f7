"""A stand-in for a newer django-workhorse release: the package's migrations
plus one that re-creates a function with another body, as a release that
fixes a function without changing its meaning ships it. The worker
subprocesses of tests/acceptance/test_installed_functions.py load it through
``WORKHORSE_TEST_MIGRATIONS`` (testproject/testproject/settings.py)."""
