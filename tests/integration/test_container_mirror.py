"""QA: an image pinned by digest only, pulled through a vendor mirror: the rerun finds it.

Real podman as the test host's `docker`, the real loopback registry as the mirror (the fixtures
of test_container.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import test_container as tc
from conftest import Project, host_entry
from test_container import PASSWORD, REPO_TAG, USER, Podman, Registry, _digest, _inventory, _log, _ok, _step

from gpuonboard.testing import TestHostPool

# the fixtures of test_container.py: its registry (mirror), a host `ctr` whose `docker` is podman
registry = tc.registry
ctr = tc.ctr
_remove_runroots = tc._remove_runroots

REPO = REPO_TAG.split(":")[0]


def _mirror_inventory(
    project: Project, pool: TestHostPool, reg: Registry, tmp_path: Path, image: str
) -> None:
    vendors = tmp_path / "vendors"
    vendors.mkdir(exist_ok=True)
    (vendors / "demo-idc.yml").write_text(f"name: Mirror IDC\nregistry_mirror: http://{reg.address}/\n")
    entry = host_entry(pool.hosts["ctr"], pool)
    entry["vars"].update({"image_size_estimate": "1MB", "retry_backoff": 0.2, "container_image": image})
    project.write_inventory({"ctr": entry}, vendors_dir=str(vendors))


def _login(pm: Podman, reg: Registry) -> None:
    """The host's container CLI logged in to the test registry (the mirror)."""
    _ok(pm, ["login", "-u", USER, "--password-stdin", reg.address], PASSWORD.encode())


def _pulls(pm: Podman) -> int:
    f = pm.root / "pulls"
    return len(f.read_text().splitlines()) if f.exists() else 0


def test_digest_only_pin_through_a_mirror_is_ok_on_the_rerun(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, tmp_path: Path
) -> None:
    digest = _digest(registry)
    image = f"nvcr.io/{REPO}@{digest}"
    _login(ctr, registry)
    _mirror_inventory(project, pool, registry, tmp_path, image)
    # check mode: says what it would pull, sends nothing
    r = project.cli("container", "--host", "ctr", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _step(project)["status"] == "changed" and _pulls(ctr) == 0
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "changed", step
    assert step["msg"].startswith(f"pulled {image} via mirror {registry.address} ({digest})"), step["msg"]
    assert _pulls(ctr) == 1
    # the rerun: present with that digest, its smoke run recorded: ok, nothing pulled or run
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "ok", step
    assert step["diff"]["digest"] == digest
    log = _log(project)
    assert "docker pull" not in log and "docker run" not in log, log
    assert _pulls(ctr) == 1
    # check mode on the rerun: ok too, nothing sent
    r = project.cli("container", "--host", "ctr", "--check")
    assert r.returncode == 0 and _step(project)["status"] == "ok", r.stdout
    assert _pulls(ctr) == 1


def test_digest_only_pin_not_present_is_still_pulled(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, tmp_path: Path
) -> None:
    """Another image of the same repository is present: a digest it does not have is pulled."""
    digest = _digest(registry)
    _login(ctr, registry)
    other = "sha256:" + "0" * 64
    _mirror_inventory(project, pool, registry, tmp_path, f"nvcr.io/{REPO}@{digest}")
    assert project.cli("container", "--host", "ctr").returncode == 0
    _mirror_inventory(project, pool, registry, tmp_path, f"nvcr.io/{REPO}@{other}")
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 1, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "failed", step
    assert f"docker pull {registry.address}/{REPO}@{other}" in _log(project)
    assert step["msg"].startswith(
        f"pulling {registry.address}/{REPO}@{other} failed: the mirror has no image with the pinned digest"
        f" {other} (its copy may be another version, or none; have the mirror synced, or set"
        " pull_fallback_origin: true to pull from nvcr.io) ("
    ), step["msg"]
    assert _pulls(ctr) == 2


def test_tag_and_digest_pin_through_a_mirror_is_tagged_back_and_ok_on_the_rerun(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, tmp_path: Path
) -> None:
    digest = _digest(registry)
    image = f"nvcr.io/{REPO_TAG}@{digest}"
    _login(ctr, registry)
    _mirror_inventory(project, pool, registry, tmp_path, image)
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _step(project)["status"] == "changed" and _pulls(ctr) == 1
    assert f"docker pull {registry.address}/{REPO}@{digest}" in _log(project)
    inspect = subprocess.run(
        [*ctr.argv, "image", "inspect", f"nvcr.io/{REPO_TAG}"], env=ctr.env, capture_output=True
    )
    assert inspect.returncode == 0, inspect.stderr
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0 and _step(project)["status"] == "ok", r.stdout + r.stderr
    assert _pulls(ctr) == 1 and "docker run" not in _log(project)


def test_check_mode_with_the_smoke_record_gone_sends_nothing(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, tmp_path: Path
) -> None:
    """Present but without a passed smoke run recorded: --check says it would run it, runs nothing."""
    digest = _digest(registry)
    image = f"nvcr.io/{REPO}@{digest}"
    _login(ctr, registry)
    _mirror_inventory(project, pool, registry, tmp_path, image)
    assert project.cli("container", "--host", "ctr").returncode == 0
    records = pool.hosts["ctr"].home / ".cache" / "gpuonboard" / "container-smoke"
    for f in records.iterdir():
        f.unlink()
    r = project.cli("container", "--host", "ctr", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "changed" and "no smoke run has passed" in step["msg"], step
    log = _log(project)
    assert "docker run" not in log and "docker pull" not in log, log
    assert not any(records.iterdir())
    # the real run: the smoke run alone, recorded again; then ok
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0 and _step(project)["status"] == "changed", r.stdout + r.stderr
    assert "docker pull" not in _log(project) and _pulls(ctr) == 1
    assert f"docker run --rm nvcr.io/{REPO}@{digest} true" in _log(project)
    assert project.cli("container", "--host", "ctr").returncode == 0 and _step(project)["status"] == "ok"


def test_tag_through_a_mirror_keeps_its_digest_warning_on_the_ok_rerun(
    project: Project, pool: TestHostPool, registry: Registry, ctr: Podman, tmp_path: Path
) -> None:
    """A tag pulled through a mirror is whatever the mirror served: the rerun (ok, nothing pulled)
    still says so, until the digest is pinned; an image pulled from its own registry never does."""
    image = f"nvcr.io/{REPO_TAG}"
    _login(ctr, registry)
    _mirror_inventory(project, pool, registry, tmp_path, image)
    assert project.cli("container", "--host", "ctr").returncode == 0
    first = _step(project)
    [warned] = [c for c in first["checks"] if c["name"] == "image digest from mirror"]
    r = project.cli("container", "--host", "ctr")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _step(project)
    assert step["status"] == "ok" and _pulls(ctr) == 1, step
    assert [c for c in step["checks"] if c["name"] == "image digest from mirror"] == [warned]
    # pinned by the digest it has: the runtime verified it, no warning
    _mirror_inventory(project, pool, registry, tmp_path, f"{image}@{_digest(registry)}")
    assert project.cli("container", "--host", "ctr").returncode == 0
    step = _step(project)
    assert step["status"] == "ok" and not step["checks"], step


# QA: a Docker Hub image (`tinyhub:1`, an official image's short name) pulled through a mirror.
#
# A mirror of docker.io serves Docker Hub's official images under `library/` (docker's
# registry-mirrors and podman's [[registry.mirror]] both ask it for `library/<name>`): the step must
# pull `MIRROR/library/tinyhub:1`, ask the mirror for that manifest, and tag it back as `tinyhub:1`.
#
# Real podman as the test host's `docker`, the real loopback registry as the mirror (the fixtures
# of test_container.py).

# the fixtures of test_container.py: its registry (mirror), a host `ctr` whose `docker` is podman

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
