"""POLL_INTERVAL left at None is 5 s for a worker that polls and 60 s for one
whose LISTEN works; a number applies to both (docs/settings.md)."""

from __future__ import annotations

from django.test import override_settings

from django_workhorse.core.conf import get_settings


def test_left_at_none_a_polling_worker_claims_every_5_s_and_a_listening_one_every_60():
    with override_settings(WORKHORSE={}):
        settings = get_settings()
    assert (settings.poll_interval, settings.listening_poll_interval) == (5.0, 60.0)


def test_a_number_applies_to_polling_and_listening_workers_alike():
    with override_settings(WORKHORSE={"POLL_INTERVAL": 2}):
        settings = get_settings()
    assert (settings.poll_interval, settings.listening_poll_interval) == (2.0, 2.0)
