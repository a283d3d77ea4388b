"""Step `container`: a working container runtime with the training image pulled and smoke-tested.

Modules, bottom up: `refs` (image references), `settings` (the step's settings and registry
mirrors), `credentials` (registry logins read on this machine), `state` (the runtime probe and
its parser), `smoke` (the smoke run of the image, the GPU flags), `pull` (pure: the pull's
progress and the registry manifest), `pullrun` (one pull: manifest, login, progress, time limit,
retries), `planning` (the pure plan), `step` (ContainerStep). This module re-exports the names
callers import from `gpuonboard.steps.container`.
"""

from __future__ import annotations

from gpuonboard.steps.checks.driver_compat import DEFAULT_IMAGE, driver_failure
from gpuonboard.steps.checks.ngc import mirror_host
from gpuonboard.steps.container.credentials import _credentials, read_credentials_file
from gpuonboard.steps.container.planning import (
    image_ready,
    install_hint,
    mirror_copy,
    mirror_digest_check,
    os_family,
    plan_from,
    state_access,
)
from gpuonboard.steps.container.pull import Manifest
from gpuonboard.steps.container.pullrun import (
    _LOGIN_FAILED,
    _PULL_TIMED_OUT,
    PROGRESS_EVERY,
    fetch_manifest,
    pull_command,
    pull_from,
    pull_timed_out,
)
from gpuonboard.steps.container.refs import DOCKER_HUB_NAMES, ImageRef, parse_ref
from gpuonboard.steps.container.settings import (
    DEFAULT_BACKOFF,
    DEFAULT_MANIFEST_UNPACK_FACTOR,
    DEFAULT_PULL_TIMEOUT,
    DEFAULT_RETRIES,
    DEFAULT_SIZE_ESTIMATE,
    DEFAULT_UNPACK_FACTOR,
    MAX_PULL_TIMEOUT,
    Settings,
    parse_mirror,
    parse_mirrors,
    resolve_settings,
)
from gpuonboard.steps.container.smoke import _GPU_CHECK_OK, gpu_check_command, gpu_flags, gpu_python_check
from gpuonboard.steps.container.state import (
    _MARK,
    SMOKE_DIR,
    Applied,
    ContainerState,
    host_gpu_count,
    parse_state,
    probe_command,
    smoke_file,
    smoke_key,
)
from gpuonboard.steps.container.step import ContainerStep

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_IMAGE",
    "DEFAULT_MANIFEST_UNPACK_FACTOR",
    "DEFAULT_PULL_TIMEOUT",
    "DEFAULT_RETRIES",
    "DEFAULT_SIZE_ESTIMATE",
    "DEFAULT_UNPACK_FACTOR",
    "DOCKER_HUB_NAMES",
    "MAX_PULL_TIMEOUT",
    "PROGRESS_EVERY",
    "SMOKE_DIR",
    "_GPU_CHECK_OK",
    "_LOGIN_FAILED",
    "_MARK",
    "_PULL_TIMED_OUT",
    "Applied",
    "ContainerState",
    "ContainerStep",
    "ImageRef",
    "Manifest",
    "Settings",
    "_credentials",
    "driver_failure",
    "fetch_manifest",
    "gpu_check_command",
    "gpu_flags",
    "gpu_python_check",
    "host_gpu_count",
    "image_ready",
    "install_hint",
    "mirror_copy",
    "mirror_digest_check",
    "mirror_host",
    "os_family",
    "parse_mirror",
    "parse_mirrors",
    "parse_ref",
    "parse_state",
    "plan_from",
    "probe_command",
    "pull_command",
    "pull_from",
    "pull_timed_out",
    "read_credentials_file",
    "resolve_settings",
    "smoke_file",
    "smoke_key",
    "state_access",
]
