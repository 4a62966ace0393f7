"""The package's own first migration, unchanged."""

import importlib

Migration = importlib.import_module("django_workhorse.migrations.0001_initial").Migration
