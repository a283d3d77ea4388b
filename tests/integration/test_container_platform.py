"""An image with no build for the host's CPU is refused before any pull: the real loopback
registry's manifest and config (curl on the test host), an aarch64 host (`lscpu` replaying a
real GH200 capture), real podman as its `docker` (the fixtures of test_container.py)."""

from __future__ import annotations

from pathlib import Path

import test_container as tc
from conftest import Project
from test_container import REAL, REPO_TAG, Podman, Registry, _inventory, _step

from gpuonboard.testing import TestHostPool, add_executable

registry = tc.registry
ctr = tc.ctr
creds = tc.creds
_remove_runroots = tc._remove_runroots


def test_an_amd64_only_image_is_refused_on_an_aarch64_host_before_the_pull(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, creds: dict[str, str]
) -> None:
    host = pool.hosts["ctr"]
    lscpu = REAL / "lscpu__gh200-grace-neoverse-v2__aarch64.txt"
    add_executable(host.bin_dir, "lscpu", f"#!/bin/sh\ncat {lscpu}\n")
    try:
        image = f"{registry.address}/{REPO_TAG}"  # (podman import made it linux/amd64, one platform)
        _inventory(project, pool, "ctr", container_image=image, **creds)
        assert project.cli("container", "--host", "ctr").returncode == 1
        msg = _step(project)["msg"]
        assert msg == (
            f"{image} has no linux/arm64 build (it has linux/amd64); this host is aarch64: use an image"
            " or tag with a linux/arm64 build"
        ), msg
        assert not (Path(ctr.root) / "pulls").exists()  # nothing pulled
    finally:
        (host.bin_dir / "lscpu").unlink()
