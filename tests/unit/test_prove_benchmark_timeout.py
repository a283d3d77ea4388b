"""gpu_benchmark's default timeout follows vars.benchmark_duration: a long sustained window was
stopped part-way by the fixed 20-minute default (now that the host enforces the timeout)."""

from __future__ import annotations


def test_a_long_sustained_window_gets_the_time_it_asks_for() -> None:
    from gpuonboard.steps.prove import host_bound
    from gpuonboard.steps.prove.gpu_benchmark import default_timeout

    assert default_timeout(-1) == default_timeout(120) == 1200
    # benchmark_duration: 3600 used to be stopped after 20 min by the default timeout
    assert host_bound(default_timeout(3600)) > 3600 + 300
