"""``ON_JOB_FAILURE`` and ``ON_JOB_CANCELED`` name callables by dotted path;
``manage.py check`` reports a path that does not lead to one as
workhorse.E001 naming the key, as ``runworker`` would refuse it at start."""

from __future__ import annotations

import pytest
from django.core.checks import run_checks
from django.test import override_settings


def settings_errors(**workhorse) -> list[str]:
    with override_settings(WORKHORSE=workhorse):
        return [
            e.msg for e in run_checks(tags=["workhorse"], databases=[]) if e.id == "workhorse.E001"
        ]


@pytest.mark.parametrize("key", ["ON_JOB_FAILURE", "ON_JOB_CANCELED"])
@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("no_such_module.hook", "cannot import 'no_such_module.hook': No module named"),
        ("jobtests.hooks.no_such_hook", "cannot import 'jobtests.hooks.no_such_hook'"),
        ("jobtests.jobs.FAILURES", "'jobtests.jobs.FAILURES' is not callable"),
    ],
)
def test_a_hook_path_that_leads_to_no_callable_is_E001(key, path, problem):
    (message,) = settings_errors(**{key: path})
    assert message.startswith(f"WORKHORSE[{key!r}] ")
    assert problem in message


def test_hooks_that_import_pass_the_check():
    assert (
        settings_errors(
            ON_JOB_FAILURE="jobtests.hooks.record_failure",
            ON_JOB_CANCELED="jobtests.hooks.record_canceled",
        )
        == []
    )


def test_a_hook_module_that_raises_on_import_is_E001_not_a_crash(tmp_path, monkeypatch):
    (tmp_path / "audit_broken_hooks.py").write_text("raise RuntimeError('no config here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    (message,) = settings_errors(ON_JOB_FAILURE="audit_broken_hooks.on_failure")
    assert message == (
        "WORKHORSE['ON_JOB_FAILURE'] cannot import 'audit_broken_hooks.on_failure': "
        "RuntimeError: no config here"
    )


def test_a_bad_hook_path_is_reported_beside_the_other_bad_values():
    messages = settings_errors(
        ON_JOB_FAILURE="jobtests.hooks.no_such_hook", ON_JOB_CANCELED=5, CONCURRENCY=0
    )
    assert sorted(m.split(" ", 1)[0] for m in messages) == [
        "WORKHORSE['CONCURRENCY']",
        "WORKHORSE['ON_JOB_CANCELED']",
        "WORKHORSE['ON_JOB_FAILURE']",
    ]
