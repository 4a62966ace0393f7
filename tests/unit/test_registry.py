"""Job names are global: one handler per name, and a clear error otherwise."""

import pytest

import django_workhorse as workhorse
from django_workhorse.core import registry


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch):
    """Jobs registered by a test disappear after it."""
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))


def test_registering_two_handlers_under_one_name_raises_job_already_registered():
    @workhorse.job(name="tests.registry.taken")
    def first() -> None: ...

    def second() -> None: ...

    with pytest.raises(workhorse.JobAlreadyRegistered, match=r"'tests\.registry\.taken'") as exc:
        workhorse.job(name="tests.registry.taken")(second)
    assert "first" in str(exc.value)
    assert "second" in str(exc.value)
    assert registry.get("tests.registry.taken") is first


def test_registering_the_same_function_again_is_allowed():
    def handler() -> None: ...

    workhorse.job(name="tests.registry.again")(handler)
    workhorse.job(name="tests.registry.again")(handler)
    assert registry.get("tests.registry.again").func is handler


def cleanup() -> None:
    """A module-level handler: nested functions need an explicit name."""


def test_the_default_name_is_module_and_qualname():
    definition = workhorse.job(cleanup)
    assert definition.name == f"{__name__}.cleanup"
    assert registry.get(definition.name) is definition


def test_the_demo_jobs_are_discovered_from_the_apps_jobs_module():
    assert {"demo.jobs.add", "demo.jobs.send_welcome_email", "demo.jobs.sleep_for"} <= set(
        registry.all_jobs()
    )


def test_an_unknown_name_raises_unknown_job_error_naming_it():
    with pytest.raises(workhorse.UnknownJobError, match=r"'tests\.registry\.nope'"):
        registry.get("tests.registry.nope")


@pytest.mark.parametrize("name", ["...", ".demo.jobs.add", "demo..jobs"])
def test_a_name_that_reads_as_a_relative_import_is_unknown(name):
    """Bug: the Tasks backend's resolver imported it, which raised TypeError."""
    with pytest.raises(workhorse.UnknownJobError, match="is registered"):
        registry.get(name)


@pytest.mark.parametrize("name", ["", "1starts-with-digit", "has space", "x" * 201])
def test_an_invalid_job_name_is_refused(name):
    with pytest.raises(workhorse.InvalidJobOptionError, match="job name"):
        workhorse.job(name=name)(lambda: None)


def test_calling_a_job_runs_the_handler_in_process():
    from demo.jobs import add

    assert add(2, 3) == 5
