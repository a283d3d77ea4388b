"""Test hosts: simulated rented GPU servers (real sshd daemons on loopback) for tests."""

from gpuonboard.testing.hosts import (
    LOG_PATTERNS,
    TestHost,
    TestHostError,
    TestHostPool,
    fingerprint,
    process_alive,
    render_sshd_config,
)
from gpuonboard.testing.toolbox import (
    DEFAULT_FIXTURES_ROOT,
    PROFILES_DIR,
    Profile,
    ProfileError,
    ReplayRule,
    add_executable,
    load_profile,
    render_script,
    render_toolbox,
)

__all__ = [
    "DEFAULT_FIXTURES_ROOT",
    "LOG_PATTERNS",
    "PROFILES_DIR",
    "Profile",
    "ProfileError",
    "ReplayRule",
    "TestHost",
    "TestHostError",
    "TestHostPool",
    "add_executable",
    "fingerprint",
    "load_profile",
    "process_alive",
    "render_script",
    "render_sshd_config",
    "render_toolbox",
]
