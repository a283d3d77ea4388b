"""Unit tests share this machine with the integration tests of another xdist worker: each
holds the machine's turn shared, so that an integration test marked `alone` (one that reads
every process's name, where a unit test's fake `cron` would show) runs while none does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpuonboard.testing.turns import machine_turn


@pytest.fixture(autouse=True)
def _machine_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    with machine_turn(alone=request.node.get_closest_marker("alone") is not None):
        yield
