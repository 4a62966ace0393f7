"""docs/observability.md lists the buckets the histograms are made with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from django_workhorse.operations import metrics

PAGE = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def documented_buckets(histogram: str) -> tuple[float, ...]:
    [line] = re.findall(rf"^- `{histogram}`: (.+)$", PAGE.read_text(), flags=re.MULTILINE)
    return tuple(float(bound) for bound in line.split(", "))


@pytest.mark.parametrize(
    ("histogram", "buckets"),
    [
        ("workhorse_job_run_seconds", metrics.RUN_BUCKETS),
        ("workhorse_job_pickup_seconds", metrics.PICKUP_BUCKETS),
    ],
)
def test_the_page_lists_each_histograms_buckets(histogram, buckets):
    assert documented_buckets(histogram) == tuple(float(b) for b in buckets)


def test_the_histograms_are_made_with_those_buckets():
    metrics.enable()
    made = metrics._enabled_metrics()

    assert made.run_seconds._upper_bounds[:-1] == [float(b) for b in metrics.RUN_BUCKETS]
    assert made.pickup_seconds._upper_bounds[:-1] == [float(b) for b in metrics.PICKUP_BUCKETS]
