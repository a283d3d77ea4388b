"""`invoke teardown` against a real sshd test host: real rsync over the host's SSH settings,
sha256 verification, refusal to wipe on a missing/corrupt copy, --force, --check, a clean host.

The test host shares this machine's filesystem, so every "remote" path lives under tmp_path;
the container runtime is a test double (`docker` first on the host's PATH) that records calls.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry

from gpuonboard.testhosts import TestHostPool

IMAGE = "registry.test/proj/train:1"
# what a teardown leaves of the host side set up below: the (empty) cron.d dir, the data dir,
# and the decoy beside the results dir that a wildcard in its name matched
LEFT_ON_HOST = ["cron.d", "data", "results 1", "results 1/decoy.txt"]
FILES = {"a.txt": b"alpha\n", "ckpt/model.pt": b"weights" * 1000, "logs/run 1.log": b"it's; $(fine)\n"}


@pytest.fixture
def remote(tmp_path: Path, pool: TestHostPool) -> dict[str, Path]:
    """The host's side: results, dataset, decrypted data, markers, autostop, a fake docker."""
    base = tmp_path / "host"
    p = {
        "base": base,
        "results": base / "results [1]",  # a wildcard the host's rsync expanded: "results 1" below
        "dataset": base / "data" / "dataset",
        "decrypted": base / "data" / "plain",
        "state": base / "state",
        "autostop": base / "autostop",
        "cron": base / "cron.d",
        "docker_log": tmp_path / "docker.log",
        "images": tmp_path / "images",
        "containers": tmp_path / "containers",
    }
    (base / "results 1").mkdir(parents=True)  # a decoy the pattern "results [1]" matches
    (base / "results 1" / "decoy.txt").write_text("not the results\n")
    for rel, content in FILES.items():
        f = p["results"] / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(content)
    for d, name in (("dataset", "train.bin"), ("decrypted", "train.txt"), ("state", "acceptance.env")):
        p[d].mkdir(parents=True)
        (p[d] / name).write_text("x\n")
    p["autostop"].mkdir()
    for name in ("autostop.sh", "autostop.conf", "state", "autostop.log"):
        (p["autostop"] / name).write_text("x\n")
    p["cron"].mkdir()
    (p["cron"] / "gpuonboard-autostop").write_text("* * * * * root true\n")
    p["images"].write_text(IMAGE + "\n")
    p["containers"].write_text("train-1\n")
    fake = pool.hosts["teardown"].bin_dir / "docker"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {p["docker_log"]}\n'
        'case "$1" in\n'
        "  info) exit 0 ;;\n"
        f"  ps) cat {p['containers']} ;;\n"
        f'  container) grep -qxF "$3" {p["containers"]} ;;\n'
        f'  image) grep -qxF "$3" {p["images"]} ;;\n'
        f'  rm) shift 2; for c in "$@"; do sed -i "/^$c\\$/d" {p["containers"]}; done ;;\n'
        f'  rmi) shift; for i in "$@"; do grep -vxF "$i" {p["images"]} > {p["images"]}.n;'
        f" mv {p['images']}.n {p['images']}; done ;;\n"
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    yield p
    fake.unlink()


def inventory(project: Project, pool: TestHostPool, p: dict[str, Path], **more: Any) -> None:
    entry = host_entry(pool.hosts["teardown"], pool, vendor="wuhan-idc")
    entry["vars"].update(
        {
            "results_dir": str(p["results"]),
            "dataset_dir": str(p["dataset"]),
            "decrypted_dir": str(p["decrypted"]),
            "state_dir": str(p["state"]),
            "autostop_dir": str(p["autostop"]),
            "cron_dir": str(p["cron"]),
            "container_image": IMAGE,
            "containers": ["train-1"],
            "rented_since": int(time.time() - 2.5 * 3600),
            **more,
        }
    )
    project.write_inventory({"teardown": entry})


def listing(root: Path) -> list[str]:
    return sorted(str(x.relative_to(root)) for x in root.rglob("*"))


def steps(project: Project) -> dict[str, dict[str, Any]]:
    return {s["step"]: s for s in project.summary()["hosts"][0]["steps"]}


def docker_calls(p: dict[str, Path]) -> list[str]:
    log = p["docker_log"]
    return [c for c in log.read_text().splitlines() if c.split()[0] in ("rm", "rmi")] if log.exists() else []


def test_check_then_teardown_pulls_verifies_and_leaves_the_host_clean(
    project: Project, pool: TestHostPool, remote: dict[str, Path]
) -> None:
    inventory(project, pool, remote)
    before = listing(remote["base"])
    dest = project.root / "results" / "teardown"

    r = project.cli("teardown", "--host", "teardown", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    s = steps(project)
    assert s["pull"]["msg"].startswith(
        f"would pull 3 files (7.0 KB) from teardown:{remote['results']} to {dest}"
    )
    assert s["containers"]["msg"].startswith("would stop and remove containers train-1 and remove image")
    assert s["files"]["msg"] == (
        f"would remove {remote['dataset']}, {remote['decrypted']}, {remote['state']}, {remote['results']}"
        " (check mode: nothing changed)"
    )
    assert s["autostop"]["status"] == "changed"
    assert listing(remote["base"]) == before and not dest.exists() and docker_calls(remote) == []

    r = project.cli("teardown", "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr
    s = steps(project)
    assert s["pull"]["msg"] == f"pulled teardown:{remote['results']} to {dest}: 3 files verified (sha256)"
    for rel, content in FILES.items():
        assert (dest / rel).read_bytes() == content
    assert docker_calls(remote) == ["rm -f train-1", f"rmi {IMAGE}"]  # the mirror copy is absent
    # the host is clean: only LEFT_ON_HOST is left of what we set up
    assert listing(remote["base"]) == LEFT_ON_HOST
    assert "billed per hour: 3 hours x 58 CNY/hour = 174.00 CNY" in s["cost"]["msg"]
    assert s["cost"]["diff"]["cost"]["amount"] == 174.0
    assert "teardown: cost: ok: rented 2h30m" in r.stdout

    # a second run: nothing left to do, and it says so
    r = project.cli("teardown", "--host", "teardown")
    assert r.returncode == 0, r.stdout + r.stderr
    s = steps(project)
    assert [s[n]["status"] for n in ("pull", "containers", "autostop", "files", "cost")] == ["ok"] * 5
    assert (
        s["pull"]["msg"] == f"teardown:{remote['results']} is gone; its verified copy (3 files) is in {dest}"
    )


def test_refuses_to_wipe_on_a_corrupt_or_missing_copy_unless_forced(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "local copy"
    # an earlier pull, then local corruption that keeps size and mtime: rsync's quick check
    # skips the file, only the sha256 manifest notices
    shutil.copytree(remote["results"], dest, copy_function=shutil.copy2)
    bad = dest / "a.txt"
    st = bad.stat()
    bad.write_bytes(b"ALPHA\n")
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns))
    before = listing(remote["base"])

    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    assert r.returncode == 1, r.stdout + r.stderr
    s = steps(project)
    assert s["pull"]["status"] == "failed"
    assert s["pull"]["msg"] == (
        f"refusing to delete anything on teardown: the pull of teardown:{remote['results']} to {dest} is"
        " incomplete: 1 of 3 files not verified: corrupt 1 (a.txt); rerun teardown to resume the pull,"
        " or pass --force to wipe anyway"
    )
    assert [s[n]["status"] for n in ("containers", "autostop", "files")] == ["skipped"] * 3
    assert s["cost"]["status"] == "ok"  # read-only: still reported
    assert listing(remote["base"]) == before and docker_calls(remote) == []

    # a file that cannot land locally (a directory holds its name): missing, still refused
    bad.write_bytes(b"alpha\n")
    (dest / "ckpt" / "model.pt").unlink()
    (dest / "ckpt" / "model.pt").mkdir()
    (dest / "ckpt" / "model.pt" / "keep").write_text("x")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    assert r.returncode == 1
    msg = steps(project)["pull"]["msg"]
    assert "is incomplete: 1 of 3 files not verified: missing 1 (ckpt/model.pt) (rsync exit 23" in msg
    assert listing(remote["base"]) == before and docker_calls(remote) == []

    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--force", "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    s = steps(project)
    assert s["pull"]["status"] == "changed"
    assert "NOT verified: 1 of 3 files not verified: missing 1 (ckpt/model.pt)" in s["pull"]["msg"]
    assert s["pull"]["msg"].endswith("wiping anyway (--force)")
    assert s["containers"]["msg"].startswith("stop and remove containers train-1 (docker) (keeping image")
    assert docker_calls(remote) == ["rm -f train-1"]
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_unsafe_paths_are_refused_before_anything_is_deleted(
    project: Project, pool: TestHostPool, remote: dict[str, Path]
) -> None:
    home = pool.hosts["teardown"].home
    inventory(project, pool, remote, decrypted_dir=str(home))
    before = listing(remote["base"])
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 1
    s = steps(project)
    assert s["files"]["msg"] == (
        f"refusing to delete unsafe paths: {home} (the login user's home directory); fix the host vars"
    )
    # the pull and the other removals ran; the dataset, markers and results stay
    assert (remote["dataset"] / "train.bin").exists() and (remote["results"] / "a.txt").exists()
    assert home.is_dir() and len(listing(remote["base"])) < len(before)


def test_pull_goes_through_the_jump_host(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # `remote` puts the recording docker first on PATH: this machine's podman is never touched
    results = tmp_path / "jump results"
    (results / "sub").mkdir(parents=True)
    (results / "sub" / "x.bin").write_bytes(b"x" * 5000)
    entry = host_entry(pool.hosts["teardown"], pool, jump="bastion1")
    entry["vars"].update({"results_dir": str(results), "state_dir": str(tmp_path / "st"), "dataset_dir": ""})
    project.write_inventory({"bastion1": host_entry(pool.hosts["bastion1"], pool), "teardown": entry})
    before = pool.log_counts("bastion1")["logins"]
    dest = tmp_path / "out"
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == f"pulled teardown:{results} to {dest}: 1 files verified (sha256)"
    assert (dest / "sub" / "x.bin").read_bytes() == b"x" * 5000 and not results.exists()
    # the run's own connection and rsync's ssh both logged in through the bastion
    assert pool.log_counts("bastion1")["logins"] - before == 2
    [cfg_file] = (project.root / ".gpuonboard" / "ssh").glob("*.config")
    cfg = cfg_file.read_text()
    assert "Host gpuonboard-hop0" in cfg and "StrictHostKeyChecking yes" in cfg
