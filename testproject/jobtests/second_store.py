"""Jobs bound to the second store, the alias ``second`` (set when
``DATABASE_URL_SECOND`` is): their enqueue writes to that database and
``runworker --database second`` runs them."""

from __future__ import annotations

import os

import django_workhorse as workhorse


@workhorse.job(queue="jobtests.second", using="second")
def on_second(n: int) -> dict:
    """Says which process ran it; its outcome row is in the second store."""
    return {"n": n, "pid": os.getpid()}
