"""Settings of the project that runs the demo and the tests.

Everything that differs between machines comes from the environment through
django-environ; ``DATABASE_URL`` defaults to the local PostgreSQL server.
``DATABASE_URL_SECOND``, when set, adds the alias ``second``: a second store.
"""

from pathlib import Path

import django
import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, True),
    DATABASE_URL=(str, "postgres://postgres@127.0.0.1:5432/workhorse"),
)

SECRET_KEY = env("SECRET_KEY", default="django-workhorse-testproject-not-secret")
DEBUG = env("DEBUG")
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_workhorse",
    "demo",
    "jobtests",
    "shop",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "testproject.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL")}
if env("DATABASE_URL_SECOND", default=""):
    # A second primary, a store of its own: the jobs of jobtests/second_store.py
    # are bound to it, and `runworker --database second` serves them.
    DATABASES["second"] = env.db("DATABASE_URL_SECOND")
if env.bool("DATABASE_POOLED", default=False):
    # Behind a transaction-mode pooler (PgBouncer): no server-side cursors,
    # which live in a session (Django's docs, "Transaction pooling").
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
if env.str("DIRECT_DATABASE_URL", default=""):
    # The server itself, when "default" is a pooler: WORKHORSE["LISTEN_DATABASE"].
    DATABASES["direct"] = env.db("DIRECT_DATABASE_URL")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "job": {
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "job"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="WARNING")},
}

# Django's Tasks API (the django-tasks backport on Django 5.2) stored and run
# by workhorse; the tasks live in jobtests/tasks.py.
if django.VERSION < (6, 0):
    INSTALLED_APPS.append("django_tasks")
TASKS = {
    "default": {
        "BACKEND": "django_workhorse.tasks.WorkhorseBackend",
        # jobtests.tasks-listed: named here only (tests/acceptance/test_served_queues.py).
        "QUEUES": [
            "default",
            "jobtests.tasks",
            "jobtests.tasks-order",
            "jobtests.tasks-listed",
            "shop",
        ],
        "OPTIONS": {"MAX_ATTEMPTS": 3, "BACKOFF": {"kind": "fixed", "delay": 0.2}},
    }
}

# Tests and benchmarks pass worker settings to subprocesses as JSON.
WORKHORSE = env.json("WORKHORSE_JSON", default={})

# The tests of mixed releases run a worker with the migrations of a newer
# release in place of the package's (tests/newer_release).
if env("WORKHORSE_TEST_MIGRATIONS", default=""):
    MIGRATION_MODULES = {"django_workhorse": env("WORKHORSE_TEST_MIGRATIONS")}

if env.bool("WORKHORSE_OTEL_SDK", default=False):
    # The observed-drain benchmark: an OpenTelemetry SDK provider records the
    # worker's spans (no exporter), as in a project that traces. Every span,
    # unless WORKHORSE_OTEL_SAMPLE gives the ratio of root spans to record.
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    ratio = env.float("WORKHORSE_OTEL_SAMPLE", default=None)
    if ratio is None:
        trace.set_tracer_provider(TracerProvider())
    else:
        trace.set_tracer_provider(TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio))))
