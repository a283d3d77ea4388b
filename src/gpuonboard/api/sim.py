"""The simulated servers' commands (`sim.up`, `sim.down`, `sim.cron`) and the hardware profiles
they take, for the CLI: gpuonboard.testing (test sshd, replay toolboxes, podman) is imported only
when one of them runs, so that `gpuonboard --help` and every other command start without it."""

from __future__ import annotations

from pathlib import Path


def up(base: Path, name: str, profile: str, hint: bool = True, container: bool = True) -> int:
    """Start a simulated rented server under `base` and write its inventory (testing.sim.up)."""
    from gpuonboard.testing import sim

    return sim.up(base, name, profile, hint, container)


def down(base: Path, name: str | None = None) -> int:
    """Stop every simulated server under `base` (by PID), or only `name` (testing.sim.down)."""
    from gpuonboard.testing import sim

    return sim.down(base, name)


def cron(base: Path, name: str) -> int:
    """Run a simulated server's cron entries once, now (testing.sim.cron)."""
    from gpuonboard.testing import sim

    return sim.cron(base, name)


def profiles() -> list[str]:
    """The names of the shipped hardware profiles (`a100-8x-nvlink`, `rtx4090-1x`, ...), sorted."""
    from gpuonboard.testing.toolbox import PROFILES_DIR

    return sorted(p.stem for p in PROFILES_DIR.glob("*.yml"))


def is_profile_file(profile: str) -> bool:
    """Pure: whether `profile` names a profile file (a path, or FILE.yml), not a profile name."""
    from gpuonboard.testing.toolbox import is_profile_file as named_file

    return named_file(profile)
