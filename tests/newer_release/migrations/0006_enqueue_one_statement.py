"""The package's own migration, unchanged."""

import importlib

Migration = importlib.import_module("django_workhorse.migrations.0006_enqueue_one_statement").Migration
