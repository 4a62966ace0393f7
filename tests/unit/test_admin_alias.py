"""``workhorse.Admin(using=...)`` takes an alias of ``settings.DATABASES``
and defaults to ``WORKHORSE["DATABASE"]``; anything else is refused when the
Admin is made, with ``InvalidQueryError`` naming the aliases there are."""

from __future__ import annotations

import pytest
from django.test import override_settings

import django_workhorse as workhorse


@pytest.mark.parametrize("using", ["nowhere", 1, b"default"])
def test_an_alias_that_is_not_in_databases_is_refused_naming_the_aliases(using):
    with pytest.raises(workhorse.InvalidQueryError) as raised:
        workhorse.Admin(using=using)
    assert str(raised.value) == (
        f"using must be an alias of settings.DATABASES (default), got {using!r}"
    )


def test_the_alias_defaults_to_the_database_setting():
    assert workhorse.Admin().using == "default"
    with (
        override_settings(WORKHORSE={"DATABASE": "nowhere"}),
        pytest.raises(Exception, match=r"WORKHORSE\['DATABASE'\] 'nowhere' is not an alias"),
    ):
        workhorse.Admin()
