"""QA: a Docker Hub image (`tinyhub:1`, an official image's short name) pulled through a mirror.

A mirror of docker.io serves Docker Hub's official images under `library/` (docker's
registry-mirrors and podman's [[registry.mirror]] both ask it for `library/<name>`): the step must
pull `MIRROR/library/tinyhub:1`, ask the mirror for that manifest, and tag it back as `tinyhub:1`.

Real podman as the test host's `docker`, the real loopback registry as the mirror (the fixtures
of test_container.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import test_container as tc
from conftest import Project
from test_container import PASSWORD, REPO_TAG, USER, Podman, Registry, _inventory, _log, _ok, _step

from gpuonboard.testing import TestHostPool

# the fixtures of test_container.py: its registry (mirror), a host `ctr` whose `docker` is podman
registry = tc.registry
ctr = tc.ctr
_remove_runroots = tc._remove_runroots

IMAGE = "tinyhub:1"


def _seed_library_copy(reg: Registry, root: Path) -> str:
    """Push the registry's tiny image as Docker Hub's official `tinyhub:1` is on a mirror."""
    pm = tc._podman_env(root, reg)
    _ok(pm, ["login", "-u", USER, "--password-stdin", reg.address], PASSWORD.encode())
    _ok(pm, ["pull", "-q", f"{reg.address}/{REPO_TAG}"])
    copy = f"{reg.address}/library/{IMAGE}"
    _ok(pm, ["tag", f"{reg.address}/{REPO_TAG}", copy])
    _ok(pm, ["push", copy])
    return copy


def _curl_manifest_gets(reg: Registry, repo: str) -> int:
    """Successful manifest requests the step's curl made for `repo` (the registry's access log)."""
    lines = reg.log_path.read_text(errors="replace").splitlines()
    return sum(f'"GET /v2/{repo}/manifests/' in x and '" 200 ' in x and '"curl/' in x for x in lines)


def test_a_docker_hub_image_is_pulled_from_the_mirrors_library_copy(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, tmp_path: Path
) -> None:
    copy = _seed_library_copy(registry, tmp_path / "seed")
    creds = tmp_path / "registry-creds.yml"
    creds.write_text(f"{registry.address}:\n  username: {USER}\n  password: {PASSWORD}\n")
    creds.chmod(0o600)
    _inventory(
        project,
        pool,
        "ctr",
        container_image=IMAGE,
        registry_mirror=registry.address,
        registry_credentials_file=str(creds),
    )
    before = _curl_manifest_gets(registry, "library/tinyhub")
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "changed", step
    assert step["msg"].startswith(f"pulled {IMAGE} via mirror {registry.address}"), step["msg"]
    assert step["diff"]["after"]["pulled_from"] == copy
    assert f"docker pull {copy}" in _log(project)
    # the manifest (size, free space) was asked from the mirror's library/ copy too
    assert _curl_manifest_gets(registry, "library/tinyhub") > before
    # tagged back under the name the user wrote: the runtime finds it there
    inspect = subprocess.run([*ctr.argv, "image", "inspect", IMAGE], env=ctr.env, capture_output=True)
    assert inspect.returncode == 0, inspect.stderr
    # in its full name (podman filed a short tag target as localhost/tinyhub:1, which a run of
    # docker.io/library/tinyhub:1 or a FROM line does not find: they pulled from Docker Hub)
    names = subprocess.run(
        [*ctr.argv, "image", "inspect", "--format", "{{json .RepoTags}}", IMAGE],
        env=ctr.env,
        capture_output=True,
        text=True,
    ).stdout
    assert f"docker.io/library/{IMAGE}" in names and f"localhost/{IMAGE}" not in names, names
    # the rerun: present, nothing pulled; still said to be whatever the mirror serves
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "ok", step
    assert "docker pull" not in _log(project)
    [check] = [c for c in step["checks"] if c["name"] == "image digest from mirror"]
    assert check["verdict"] == "warn" and f"as mirror {registry.address} serves it" in check["actual"]
