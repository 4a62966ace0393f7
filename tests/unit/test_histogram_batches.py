"""Run and pickup times are observed a batch at a time: one increment of a
histogram's sum and of each bucket hit, which reads back exactly as the same
values observed one by one (docs/observability.md)."""

from __future__ import annotations

import pytest

prometheus_client = pytest.importorskip("prometheus_client")

from django_workhorse.worker.instruments import observe_many  # noqa: E402

BOUNDS = (0.005, 0.01, 0.1, 1.0, 10.0)
VALUES = [0.0, 0.001, 0.005, 0.0050001, 0.02, 0.02, 0.5, 1.0, 3.0, 10.0, 11.0, 1e9]


def samples(observe) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = prometheus_client.CollectorRegistry()
    histogram = prometheus_client.Histogram(
        "t_seconds", "test", ["queue"], buckets=BOUNDS, registry=registry
    )
    observe(histogram.labels("q"))
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for metric in registry.collect()
        for s in metric.samples
        if not s.name.endswith("_created")
    }


def test_a_batch_reads_back_as_the_same_values_observed_one_by_one():
    def one_by_one(child) -> None:
        for value in VALUES:
            child.observe(value)

    assert samples(lambda child: observe_many(child, VALUES)) == samples(one_by_one)


def test_a_histogram_without_the_buckets_it_relies_on_is_observed_value_by_value():
    seen: list[float] = []

    class Plain:
        def observe(self, value: float) -> None:
            seen.append(value)

    observe_many(Plain(), [0.1, 0.2])

    assert seen == [0.1, 0.2]
