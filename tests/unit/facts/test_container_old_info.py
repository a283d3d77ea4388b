"""`docker info` before docker 19.03 (18.06 here, kata-containers/tests#766) prints no `Client:`
/ `Server:` lines and its fields at the margin: its version and runtimes were not read, and the
note said "docker (version not read); no runtime listed" (measure31b 25)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpuonboard.facts.container import parse_docker_info

REAL = Path(__file__).parents[2] / "fixtures" / "real"
OLD = "docker-info__docker-18.06.1-ce__no-client-server-headers__kata-runtime-default__kata-tests-766.txt"
NEW = "docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt"


def test_the_old_layout_is_read() -> None:
    info = parse_docker_info((REAL / OLD).read_text())
    assert info.server_version == "18.06.1-ce"
    assert info.runtimes == ("kata-runtime", "runc") and info.default_runtime == "kata-runtime"
    assert info.storage_driver == "overlay2" and info.storage_root == "/var/lib/docker"
    assert info.containers_running == 0 and not info.nvidia_runtime and not info.warnings


def test_the_new_layout_is_read_as_before() -> None:
    info = parse_docker_info((REAL / NEW).read_text())
    assert info.server_version and info.nvidia_runtime


def test_a_client_section_alone_still_has_no_server() -> None:
    """A test input: 19.03+'s Client section of a box whose daemon is down (no Server fields)."""
    text = "Client:\n Version:    24.0.5\n Context:    default\n\nServer:\nERROR: Cannot connect\n"
    assert parse_docker_info(text).warnings == ("docker info has no Server section (is the daemon running?)",)


def test_the_note_names_its_version_and_runtimes() -> None:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(REAL / OLD)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    said = " ".join(r.stderr.split())
    assert (
        "docker info: docker 18.06.1-ce; runtimes kata-runtime, runc (default kata-runtime);"
        " no NVIDIA runtime" in said
    )
