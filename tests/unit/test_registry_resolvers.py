"""A name nobody registered is looked up by the resolvers before it is unknown."""

import pytest

import django_workhorse as workhorse
from django_workhorse.core import registry


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch):
    """Jobs and resolvers added by a test disappear after it."""
    monkeypatch.setattr(registry, "_jobs", dict(registry._jobs))
    monkeypatch.setattr(registry, "_resolvers", list(registry._resolvers))


def test_a_resolver_registers_a_job_on_first_lookup():
    def handler() -> None: ...

    def resolver(name):
        if name != "tests.resolved.late":
            return None
        definition = workhorse.JobDefinition(handler, name=name)
        registry.register(definition)
        return definition

    table = registry.all_jobs()
    assert "tests.resolved.late" not in table
    registry.add_resolver(resolver)
    found = table.get("tests.resolved.late")
    assert found is not None and found.func is handler
    assert registry.get("tests.resolved.late") is found
    assert table.get("tests.resolved.nothing") is None


def test_a_name_no_resolver_knows_is_still_unknown():
    registry.add_resolver(lambda name: None)
    with pytest.raises(workhorse.UnknownJobError):
        registry.get("tests.resolved.nowhere")


def test_a_task_path_resolves_to_its_job_and_other_paths_do_not():
    from django_workhorse.tasks.backend import resolve_task_job

    assert resolve_task_job("jobtests.more_tasks.shout").name == "jobtests.more_tasks.shout"
    assert resolve_task_job("jobtests.jobs.record") is None  # a job, not a task
    assert resolve_task_job("no.such.module") is None
    assert resolve_task_job("plain") is None
