"""Benchmarks of django-workhorse (``make bench``); not tests, never run in CI."""
