"""`invoke teardown` against a real sshd test host: real rsync over the host's SSH settings,
sha256 verification, refusal to wipe on a missing/corrupt copy, --force, --check, a clean host.

The test host shares this machine's filesystem, so every "remote" path lives under tmp_path;
the container runtime is a test double (`docker` first on the host's PATH) that records calls.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry

from gpuonboard.steps.teardown import RECORD, RECORD_TAG, Record, read_record
from gpuonboard.testing import TestHostPool
from gpuonboard.transfer import uploadlock
from gpuonboard.units import format_bytes

IMAGE = "registry.test/proj/train:1"
# what a teardown leaves of the host side set up below: the (empty) cron.d dir, the data dir,
# and the decoy beside the results dir that a wildcard in its name matched
# the cost step's last words in teardown (host "teardown")
STILL_BILLED = (
    "; autostop removed: the box is still running and billed: release it at the vendor (or rerun"
    " `invoke autostop --host teardown` to have it shut down once idle)"
)
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
        "on_rm": tmp_path / "on-docker-rm",  # run (when present) as the fake docker removes containers
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
        f'  rm) shift 2; for c in "$@"; do sed -i "/^$c\\$/d" {p["containers"]}; done;'
        f" if [ -x {p['on_rm']} ]; then {p['on_rm']}; fi ;;\n"
        f'  rmi) shift; for i in "$@"; do grep -vxF "$i" {p["images"]} > {p["images"]}.n;'
        f" mv {p['images']}.n {p['images']}; done ;;\n"
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    cache = pool.hosts["teardown"].home / ".cache" / "gpuonboard"
    shutil.rmtree(cache, ignore_errors=True)  # (a refused teardown of another test may leave it)
    for d in ("dataset", "decrypted"):
        uploaded(pool, p[d])
    yield p
    fake.unlink()
    shutil.rmtree(cache, ignore_errors=True)


def own_cache_said(pool: TestHostPool) -> str:
    """How the files step names gpuonboard's cache on the host (holding the lists `uploaded` wrote)."""
    return f", {pool.hosts['teardown'].home}/.cache/gpuonboard (gpuonboard's own cache on the host)"


def uploaded(pool: TestHostPool, tree: Path) -> None:
    """List the files in `tree` as what an upload wrote there, by the command `sync` runs for it
    (uploadlock.write_listing_command) as the host's login (the test host is this machine, its
    home the host's): teardown empties the dir of them, as it would of a `sync` copy."""
    tree = tree.resolve()
    files = [(f, f.lstat()) for f in sorted(tree.rglob("*")) if f.is_file() or f.is_symlink()]
    entries = [
        ("l" if f.is_symlink() else "f", str(f.relative_to(tree)), st.st_size, st.st_mtime_ns // 10**9)
        for f, st in files
    ]
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = str(pool.hosts["teardown"].home)
    cmd = ["sh", "-c", uploadlock.WRITE_LISTING_SCRIPT, "sh", str(tree)]
    subprocess.run(cmd, input=uploadlock.listing_stdin(entries), env=env, check=True)


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


def earlier_pull(project: Project, pool: TestHostPool, p: dict[str, Path], dest: Path) -> None:
    """A verified pull into dest alone (its record written), as a run stopped after the pull."""
    inventory(project, pool, p, results_dest=str(dest))
    r = project.cli("provision", "--host", "teardown", "--playbook", "teardown", "--only", "pull")
    assert r.returncode == 0, r.stdout + r.stderr
    inventory(project, pool, p)


def corrupt_keeping_size_and_mtime(path: Path, content: bytes) -> None:
    """Local corruption rsync's quick check (size, mtime) cannot see: only a sha256 notices."""
    st = path.stat()
    path.write_bytes(content)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


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
    # (the dataset and decrypted dirs hold only what uploads wrote: emptied, then removed; the
    # lists of what they wrote are in gpuonboard's cache on the host, removed last)
    assert s["files"]["msg"] == (
        f"would remove {remote['dataset']}, {remote['decrypted']}, {remote['state']}, {remote['results']}"
        f"{own_cache_said(pool)} (check mode: nothing changed)"
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
    # the last word: the watcher is gone and the box runs on, billed (before: not a word)
    assert s["cost"]["msg"].endswith(
        "billed per hour: 3 hours x 58 CNY/hour = 174.00 CNY; autostop removed: the box is still running"
        " and billed: release it at the vendor (or rerun `invoke autostop --host teardown` to have it shut"
        " down once idle)"
    )
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
    dest = tmp_path / "local copy"
    # an earlier pull, then local corruption that keeps size and mtime: rsync's quick check
    # skips the file, only the sha256 manifest notices
    earlier_pull(project, pool, remote, dest)
    bad = dest / "a.txt"
    corrupt_keeping_size_and_mtime(bad, b"ALPHA\n")
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


def _local_rsyncs(marker: str) -> list[int]:
    """pids of this machine's rsync processes whose command line names `marker`."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and Path(os.fsdecode(argv[0])).name == "rsync" and any(marker.encode() in a for a in argv):
            pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_killed_teardown_stops_its_rsync(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, sig: signal.Signals
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "signal copy"
    # the host's rsync sends slowly: the pull is still running when the signal comes
    (remote["results"] / "big.bin").write_bytes(os.urandom(1_500_000))
    slow = pool.hosts["teardown"].bin_dir / "rsync"
    slow.write_text('#!/bin/sh\nexec /usr/bin/rsync --bwlimit=100 "$@"\n')
    slow.chmod(0o755)
    before = listing(remote["base"])
    try:
        proc = subprocess.Popen(
            [*project.cli_argv(), "teardown", "--host", "teardown", "--dest", str(dest)],
            cwd=project.root,
            env=project.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        # rsync forks when the transfer starts: a SIGKILL to the first leaves the other running
        while len(_local_rsyncs(str(dest))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = _local_rsyncs(str(dest))
        assert len(pids) >= 2, pids
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=20)
        ends = {signal.SIGTERM: (143, "terminated"), signal.SIGINT: (130, "interrupted")}
        code, last = ends.get(sig, (-9, ""))
        assert proc.returncode == code, out + err
        if last:  # (a SIGKILL leaves no last word; rsync gets its SIGTERM from the kernel)
            assert err.strip().splitlines()[-1] == last
        assert "Traceback" not in out + err
        deadline = time.monotonic() + 10  # (under the 15 s the transfer itself would take)
        while _local_rsyncs(str(dest)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _local_rsyncs(str(dest)) == [], f"rsync still running after the CLI got {sig.name}"
        assert listing(remote["base"]) == before and docker_calls(remote) == []
    finally:
        slow.unlink()


def refusal(what: str) -> str:
    return f"refusing to delete anything on teardown: {what}, or pass --force to wipe anyway"


def test_only_symlinks_whose_targets_teardown_deletes_are_refused(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    res = remote["results"]
    doomed = remote["dataset"] / "train.bin"
    (res / "ckpt" / "latest.pt").symlink_to(doomed)  # into the dataset, which teardown deletes
    (res / "gone.pt").symlink_to("ckpt/never-written.pt")  # dangling (a rotated checkpoint)
    (res / "python").symlink_to("/usr/bin/env")  # a system file: it stays where it is
    (res / "best.pt").symlink_to("ckpt/model.pt")  # inside: copied as a link, its target verified
    before = listing(remote["base"])
    dest = tmp_path / "copy"
    lost = (
        f"teardown:{res} holds 1 symlink whose target lies in a directory teardown deletes (first:"
        f" ckpt/latest.pt -> {doomed}), so the copy would not hold that data"
    )
    expected = refusal(f"{lost}; copy the targets into {res} (or delete the links) on the host, then rerun")
    for extra in (["--check"], []):
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), *extra)
        assert r.returncode == 1, r.stdout + r.stderr
        s = steps(project)
        assert s["pull"]["status"] == "failed" and s["pull"]["msg"] == expected
        assert [s[n]["status"] for n in ("containers", "autostop", "files")] == ["skipped"] * 3
        assert listing(remote["base"]) == before and docker_calls(remote) == []
        assert not dest.exists() or not any(dest.iterdir())  # --dest is created, nothing pulled

    # --check --force: goes on, but says what will be lost (it said nothing before)
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--check", "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["pull"]["msg"]
    assert msg.startswith(f"would pull 3 files (7.0 KB) from teardown:{res} to {dest} and verify them"), msg
    assert f"; {lost}: wiping anyway (--force) (check mode: nothing changed)" in msg, msg
    assert listing(remote["base"]) == before

    (res / "ckpt" / "latest.pt").unlink()
    kept = (
        "; 2 symlinks copied as links, not their targets (missing, or outside every directory teardown"
        " removes, so they stay; first: gone.pt -> ckpt/never-written.pt)"
    )
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"].endswith(f"verify them (sha256){kept} (check mode: nothing changed)")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        steps(project)["pull"]["msg"] == f"pulled teardown:{res} to {dest}: 3 files verified (sha256){kept}"
    )
    assert os.readlink(dest / "best.pt") == "ckpt/model.pt"
    assert (dest / "best.pt").read_bytes() == FILES["ckpt/model.pt"]
    assert os.readlink(dest / "gone.pt") == "ckpt/never-written.pt"
    assert os.readlink(dest / "python") == "/usr/bin/env" and Path("/usr/bin/env").exists()
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_a_configured_dir_that_is_a_symlink_now_is_refused(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # vars.dataset_dir became a symlink to a team's shared dir: `rm -rf` of its target took a
    # colleague's only checkpoint, which teardown never made. Now nothing is deleted, and said.
    shared = tmp_path / "nfs" / "team-shared"
    shared.mkdir(parents=True)
    (shared / "colleague-ckpt.pt").write_bytes(b"only copy of a colleague's checkpoint")
    shutil.rmtree(remote["dataset"])
    remote["dataset"].symlink_to(shared)
    link = remote["base"] / "plain-link"  # and vars.decrypted_dir a symlink to the plaintext
    link.symlink_to(remote["decrypted"])
    inventory(project, pool, remote, decrypted_dir=str(link))
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["files"]["msg"] == (
        f"refusing to delete unsafe paths: {remote['dataset']} (a symlink now, to {shared}: teardown never"
        f" deletes through a link what it did not make; remove the link yourself (rm {remote['dataset']}),"
        f" or set the var to {shared} if that is the dir provisioning made); {link} (a symlink now, to"
        f" {remote['decrypted']}: teardown never deletes through a link what it did not make; remove the"
        f" link yourself (rm {link}), or set the var to {remote['decrypted']} if that is the dir"
        " provisioning made); fix the host vars"
    )
    assert (shared / "colleague-ckpt.pt").exists() and (remote["decrypted"] / "train.txt").exists()
    assert remote["dataset"].is_symlink() and link.is_symlink() and remote["state"].exists()

    # the target named instead: it goes, the link is the user's to remove
    remote["dataset"].unlink()
    remote["dataset"].mkdir()
    (remote["dataset"] / "train.bin").write_text("x\n")
    uploaded(pool, remote["dataset"])  # (what an upload wrote: emptied, then removed)
    inventory(project, pool, remote, decrypted_dir=str(remote["decrypted"]))
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not remote["decrypted"].exists() and link.is_symlink()
    link.unlink()

    # a link whose target is the login's home (or a system dir): refused, nothing deleted
    home = pool.hosts["teardown"].home
    link.symlink_to(home)
    inventory(project, pool, remote, decrypted_dir=str(link))
    remote["dataset"].mkdir(parents=True)
    (remote["dataset"] / "train.bin").write_text("x\n")
    r = project.cli("teardown", "--host", "teardown", "--keep-image")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["files"]["msg"] == (
        f"refusing to delete unsafe paths: {link} (it resolves to {home}, the login user's home"
        " directory); fix the host vars"
    )
    assert home.is_dir() and link.is_symlink() and (remote["dataset"] / "train.bin").exists()


def test_a_results_path_that_is_not_utf8(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # --results $'/.../r\xe9s' was an internal error (exit 70) hashing the probe's command
    inventory(project, pool, remote)
    odd = os.fsencode(remote["base"]) + b"/r\xe9s"
    os.makedirs(odd + b"/sub")
    with open(odd + b"/sub/x.pt", "wb") as f:
        f.write(b"x\n")
    dest = tmp_path / "copy"
    r = project.cli("teardown", "--host", "teardown", "--results", os.fsdecode(odd), "--dest", str(dest))
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == (
        f"pulled teardown:{os.fsdecode(odd)} to {dest}: 1 files verified (sha256)"
    )
    assert (dest / "sub" / "x.pt").read_bytes() == b"x\n" and not os.path.exists(odd)


def test_a_record_counts_only_for_its_own_host_and_results_dir(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "copy"
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    rec = Record.parse((dest / RECORD).read_bytes())
    assert rec is not None and (rec.host, rec.dir, len(rec.sums)) == ("teardown", str(remote["results"]), 3)
    h = pool.hosts["teardown"]
    assert (rec.address, rec.port) == (h.address, h.port)
    check = subprocess.run(["sha256sum", "-c", "--quiet", RECORD], cwd=dest, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr  # the record works with sha256sum -c
    good = (dest / RECORD).read_bytes()
    other = json.loads(good.split(b"\n", 1)[0][len(RECORD_TAG) :])

    # a typo in --results: the record of the earlier pull does not stand for it
    remote["dataset"].mkdir(parents=True)
    (remote["dataset"] / "train.bin").write_text("x\n")
    uploaded(pool, remote["dataset"])  # (what an upload wrote: emptied, then removed)
    typo = remote["base"] / "results [2]"
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--results", str(typo))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refusal(
        f"results dir teardown:{typo} not found on the host ({dest} holds the verified copy of"
        f" {remote['results']}, not of it); check the path (--results or vars.results_dir)"
    )
    assert (remote["dataset"] / "train.bin").exists()

    # records that do not count for the (gone) results dir: old format, empty, cut, other host
    lines = good.decode().splitlines(keepends=True)
    other["address"] = "192.0.2.7"
    bad_records = {
        "old": "".join(lines[1:]).encode(),
        "empty": b"",
        "cut": "".join(lines[:-1]).encode(),
        "other host": (RECORD_TAG + json.dumps(other) + "\n" + "".join(lines[1:])).encode(),
    }
    for why, data in bad_records.items():
        (dest / RECORD).write_bytes(data)
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
        assert r.returncode == 1, why
        msg = steps(project)["pull"]["msg"]
        assert msg.startswith(
            f"refusing to delete anything on teardown: results dir teardown:{remote['results']}"
        )
        assert (remote["dataset"] / "train.bin").exists(), why
    (dest / RECORD).write_bytes(good)
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"].endswith(f"is gone; its verified copy (3 files) is in {dest}")
    assert not remote["dataset"].exists()


@pytest.mark.parametrize(
    ("change", "name"),
    [("echo 3 > ckpt-3.pt", "ckpt-3.pt"), ("echo more >> a.txt", "a.txt")],
)
def test_results_written_after_the_pull_are_not_deleted(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path, change: str, name: str
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "copy"
    res = remote["results"]
    # the job writes once more while its container is being removed (after the pull's verification)
    remote["on_rm"].write_text(f"#!/bin/sh\ncd '{res}' && sleep 0.02 && {change}\n")
    remote["on_rm"].chmod(0o755)
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 1, r.stdout + r.stderr
    s = steps(project)
    assert s["pull"]["status"] == "changed" and s["containers"]["status"] == "changed"
    assert s["files"]["status"] == "failed"
    assert s["files"]["msg"] == (
        f"refusing to delete anything on teardown: teardown:{res} changed after it was pulled (e.g. {name}):"
        " a job may still be writing; stop it, then rerun"
    )
    assert (res / name).exists() and (remote["dataset"] / "train.bin").exists() and remote["state"].exists()

    remote["on_rm"].unlink()
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / name).read_bytes() == (b"3\n" if name == "ckpt-3.pt" else b"alpha\nmore\n")
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_results_in_dirs_named_like_rsync_partial_dirs(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    res = remote["results"]
    ours = res / "sub" / ".gpuonboard-rsync-partial"
    ours.mkdir(parents=True)
    (ours / "x.pt").write_text("x\n")
    (res / "run" / ".rsync-partial").mkdir(parents=True)
    (res / "run" / ".rsync-partial" / "part.bin").write_bytes(b"p" * 100)
    before = listing(remote["base"])
    dest = tmp_path / "copy"
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refusal(
        f"teardown:{res} holds sub/.gpuonboard-rsync-partial, a name teardown keeps for its own files"
        " (rsync's partial files, the verification record), so it would not be pulled; rename it on the"
        " host, then rerun"
    )
    assert listing(remote["base"]) == before and docker_calls(remote) == []

    ours.rename(res / "sub" / "kept")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == f"pulled teardown:{res} to {dest}: 5 files verified (sha256)"
    assert (dest / "run" / ".rsync-partial" / "part.bin").read_bytes() == b"p" * 100
    assert (dest / "sub" / "kept" / "x.pt").read_text() == "x\n"


def test_a_file_name_that_is_not_utf8(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    dest = tmp_path / "copy"
    earlier_pull(project, pool, remote, dest)
    odd = os.fsencode(remote["results"]) + b"/caf\xe9.pt"
    with open(odd, "wb") as f:
        f.write(b"latin-1 name\n")
    # first the name cannot land (a directory holds it): named in the refusal, no crash
    os.makedirs(os.fsencode(dest) + b"/caf\xe9.pt/x")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "missing 1 (caf\udce9.pt)" in steps(project)["pull"]["msg"]
    shutil.rmtree(os.fsencode(dest) + b"/caf\xe9.pt")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == (
        f"pulled teardown:{remote['results']} to {dest}: 4 files verified (sha256)"
    )
    with open(os.fsencode(dest) + b"/caf\xe9.pt", "rb") as f:
        assert f.read() == b"latin-1 name\n"
    rec = Record.parse((dest / RECORD).read_bytes())
    assert rec is not None and "caf\udce9.pt" in rec.sums
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_a_record_that_cannot_be_written_is_one_sentence_and_no_record(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # many small results make a record larger than the file size limit this run gets (the
    # results themselves fit): writing the record fails as on a full disk
    res = remote["results"]
    for i in range(300):
        (res / "many" / f"{i:03d}-{'n' * 80}.log").parent.mkdir(exist_ok=True)
        (res / "many" / f"{i:03d}-{'n' * 80}.log").write_text(f"{i}\n")
    inventory(project, pool, remote)
    before = listing(remote["base"])
    dest = tmp_path / "copy"
    limit = 48_000

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    r = subprocess.run(
        [*project.cli_argv(), "teardown", "--host", "teardown", "--dest", str(dest)],
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=small_files,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr and "internal error" not in r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refusal(
        f"could not write the verification record {dest / RECORD} (File too large); make room on this"
        " machine (or give another --dest), then rerun"
    )
    # no record: only the mark of the pull in progress (whose copy this is), which counts for nothing
    assert sorted(p.name for p in dest.iterdir() if p.name.startswith(RECORD)) == [RECORD]
    assert read_record(dest) is None
    assert (dest / RECORD).read_text().startswith("# gpuonboard-pulling {")
    assert listing(remote["base"]) == before and docker_calls(remote) == []

    # with room again, the rerun resumes into the same copy (it is this pull's, not another's)
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == (f"pulled teardown:{res} to {dest}: 303 files verified (sha256)")


def test_bad_results_and_dest_are_one_sentence(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    before = listing(remote["base"])
    a_file = tmp_path / "a file"
    a_file.write_text("x\n")
    usage = {
        ("--results", "/"): "--results / is the root directory, which teardown never pulls nor deletes;"
        " give the directory your job writes its results into.",
        ("--results", "/etc"): "--results /etc is a system directory, which teardown never pulls nor"
        " deletes; give the directory your job writes its results into.",
        ("--results", "/etc/ssh"): "--results /etc/ssh is a system directory, which teardown never pulls"
        " nor deletes; give the directory your job writes its results into.",
        ("--dest", str(a_file)): f"--dest {a_file}: {a_file} is a file; give a directory (it is created"
        " when missing).",
        ("--dest", f"{a_file}/sub"): f"--dest {a_file}/sub: {a_file} is a file; give a directory (it is"
        " created when missing).",
        ("--dest", "/proc/x"): "--dest /proc/x: cannot create /proc/x (No such file or directory); give a"
        " directory on this machine you can write to.",
    }
    for (flag, value), sentence in usage.items():
        for check in ((), ("--check",)):  # check mode said "would pull ... to /proc/x", exit 0
            r = project.cli("teardown", "--host", "teardown", flag, value, *check)
            assert (r.returncode, r.stdout, r.stderr) == (2, "", f"error: {sentence}\n"), (flag, value, check)
    assert listing(remote["base"]) == before
    assert not list(project.root.glob("**/.gpuonboard-check-*"))  # (check mode's probe dir went)

    # a results dir that is a file, or that resolves to a system dir: the step refuses
    (remote["base"] / "etc-link").symlink_to("/etc")
    r = project.cli("teardown", "--host", "teardown", "--results", str(remote["base"] / "etc-link"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == (
        f"refusing to pull and delete teardown:{remote['base'] / 'etc-link'}: it resolves to /etc, a"
        " system directory; give --results (or vars.results_dir) the directory your job writes its"
        " results into"
    )
    (remote["base"] / "etc-link").unlink()
    f = remote["results"] / "a.txt"
    r = project.cli("teardown", "--host", "teardown", "--results", str(f))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refusal(
        f"teardown:{f} is a file, not a directory; give --results (or vars.results_dir) the directory your"
        " job writes its results into"
    )
    assert listing(remote["base"]) == before and docker_calls(remote) == []


def test_the_files_step_alone_never_removes_unverified_results(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # the files step run without the pull (`--only files`): no verified copy, nothing removed
    inventory(project, pool, remote)
    before = listing(remote["base"])
    r = project.cli("provision", "--host", "teardown", "--playbook", "teardown", "--only", "files")
    assert r.returncode == 1, r.stdout + r.stderr
    dest = project.root / "results" / "teardown"
    assert steps(project)["files"]["msg"] == (
        f"refusing to delete anything on teardown: {dest} holds no verified copy of"
        f" teardown:{remote['results']} (no matching {RECORD}); run the whole teardown (its pull"
        " verifies the copy), or pass --force to wipe anyway"
    )
    assert listing(remote["base"]) == before


def test_a_local_copy_dir_that_cannot_be_made(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    a_file = tmp_path / "a file"
    a_file.write_text("x\n")
    inventory(project, pool, remote, results_dest=str(a_file / "{host}"))
    before = listing(remote["base"])
    r = project.cli("teardown", "--host", "teardown")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == (
        "refusing to delete anything on teardown: cannot create the local copy's directory"
        f" ({a_file / 'teardown'}: Not a directory); give --dest a directory on this machine you can"
        " write to"
    )
    assert listing(remote["base"]) == before and docker_calls(remote) == []


def test_a_rental_start_in_the_future_or_out_of_range_is_said_not_billed(
    project: Project, pool: TestHostPool, remote: dict[str, Path]
) -> None:
    """vars.rented_since after now billed "0 hours" without a word; 1e400 was an internal error."""
    future = int(time.time()) + 7 * 86400
    inventory(project, pool, remote, rented_since=future)
    r = project.cli("teardown", "--host", "teardown", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(future))
    msg = steps(project)["cost"]["msg"]
    assert msg.startswith(f"cost unknown: the rental start {when} (vars.rented_since) is after now ("), msg
    assert msg.endswith(f"); check it (or this machine's clock){STILL_BILLED}"), msg
    inventory(project, pool, remote, rented_since="1e400")
    r = project.cli("teardown", "--host", "teardown", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["cost"]["msg"] == (
        "cost unknown: vars.rented_since: '1e400' is not a time between the years 2000 and 2100"
        + STILL_BILLED
    )


def test_a_rental_start_a_few_seconds_ahead_is_billed_as_just_started(
    project: Project, pool: TestHostPool, remote: dict[str, Path]
) -> None:
    # a start up to a minute ahead (clock skew) printed "rented 0h00m00s ... = 0.00" with a since
    # later than now: billed as the started first hour, and said
    inventory(project, pool, remote, rented_since=int(time.time()) + 30)
    r = project.cli("teardown", "--host", "teardown", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)["cost"]["msg"]
    assert re.fullmatch(
        r"rented 0h00m00s since [-\d: ]+ \(vars\.rented_since, (2\d|30)s after this machine's clock:"
        r" counted from now\); billed per hour: 1 hour x 58 CNY/hour = 58\.00 CNY" + re.escape(STILL_BILLED),
        msg,
    ), msg


def test_the_pull_keeps_no_device_node_setuid_bit_or_owner_from_the_host(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # `rsync -a` as root kept a crw-rw-rw- device node, a -rwsrwxrwx file and the host's owner:
    # a compromised host dropped a raw-disk node or a setuid-root binary on this machine
    inventory(project, pool, remote)
    res = remote["results"]
    (res / "dev").mkdir()
    os.mknod(res / "dev" / "disk", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    (res / "run").mkdir()
    os.mkfifo(res / "run" / "pipe")
    tool = res / "tool"
    tool.write_bytes(b"#!/bin/sh\n")
    os.chown(tool, 1234, 1234)
    tool.chmod(0o6777)  # (after chown, which clears the bits)
    (res / "shared").mkdir()
    (res / "shared").chmod(0o3777)
    dest = tmp_path / "copy"
    note = (
        "; not pulled: 1 device node (first: dev/disk, a character device) and 1 fifo or socket (first:"
        " run/pipe, a fifo), which hold no data to copy (a device node in results is suspicious: check"
        " what on the host made it)"
    )
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"].endswith(f"(sha256){note} (check mode: nothing changed)")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        steps(project)["pull"]["msg"] == f"pulled teardown:{res} to {dest}: 4 files verified (sha256){note}"
    )
    assert not os.path.lexists(dest / "dev" / "disk") and not os.path.lexists(dest / "run" / "pipe")
    st = (dest / "tool").lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755, oct(st.st_mode)
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    assert stat.S_IMODE((dest / "shared").stat().st_mode) == 0o755
    for rel, content in FILES.items():
        assert (dest / rel).read_bytes() == content
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_an_unverified_pull_leaves_no_link_out_of_the_copy(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # the host makes links after the check (its rsync runs a hook): the pull is refused, but the
    # pulled links that pointed out of the copy (to the dataset, to /usr/bin/env) stayed on disk
    inventory(project, pool, remote)
    res = remote["results"]
    doomed = remote["dataset"] / "train.bin"
    (res / "best.pt").symlink_to("ckpt/model.pt")  # inside: stays a link
    real = shutil.which("rsync")
    hook = pool.hosts["teardown"].bin_dir / "rsync"
    hook.write_text(
        f"#!/bin/sh\nln -s '{doomed}' ckpt/latest.pt; ln -s /usr/bin/env python; ln -s ../.. up\n"
        f'exec {real} "$@"\n'
    )
    hook.chmod(0o755)
    dest = tmp_path / "copy"
    try:
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    finally:
        hook.unlink()
    assert r.returncode == 1, r.stdout + r.stderr
    s = steps(project)
    assert s["pull"]["msg"] == refusal(
        f"teardown:{res} holds 1 symlink whose target lies in a directory teardown deletes (first:"
        f" ckpt/latest.pt -> {doomed}), so the copy would not hold that data; the 3 pulled symlinks"
        f" pointing out of {dest} were removed from it (first: ckpt/latest.pt -> {doomed}); copy the"
        f" targets into {res} (or delete the links) on the host, then rerun"
    )
    for gone in ("ckpt/latest.pt", "python", "up"):
        assert not os.path.lexists(dest / gone), gone
    assert os.readlink(dest / "best.pt") == "ckpt/model.pt"
    assert doomed.exists() and (res / "a.txt").exists() and remote["state"].exists()
    assert docker_calls(remote) == []

    # fixed on the host: a rerun pulls the links it keeps (as the README says) and goes on
    (res / "ckpt" / "latest.pt").unlink()
    (res / "up").unlink()
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.readlink(dest / "python") == "/usr/bin/env"
    assert listing(remote["base"]) == LEFT_ON_HOST


# Teardown's pull and this machine's disk: results larger than the room left where the copy
# goes are refused before anything is pulled (in --check too), a disk that fills up during the
# pull says to make room (a plain rerun fills it again), and a file the host changes while it is
# pulled fails the verification. Nothing on the host is deleted in any of them.
#
# Real sshd test host and real rsync, as in test_teardown.py (whose fixtures this module uses);
# the small disk is a tmpfs mounted under the test's tmp_path (root only) and unmounted after.

__all__ = ["remote"]  # the fixture, used by name


@contextlib.contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (skips the test where mounting is not allowed)."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def host_rsync_hook(pool: TestHostPool, before: str = "", after: str = "") -> Path:
    """The host's rsync runs `before`, the real rsync, then `after` (in the results dir)."""
    real = shutil.which("rsync")
    hook = pool.hosts["teardown"].bin_dir / "rsync"
    hook.write_text(f'#!/bin/sh\n{before}\n{real} "$@"; rc=$?\n{after}\nexit $rc\n')
    hook.chmod(0o755)
    return hook


def test_results_larger_than_the_free_space_here_are_never_pulled(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # rsync used to fill this machine's disk, hours of transfer later, then failed with "rerun
    # teardown to resume the pull": a rerun filled it again. A sparse file stands for the big
    # results (its size counts; it takes no room on the host's side either)
    dest = tmp_path / "copy"
    free = shutil.disk_usage(tmp_path).free
    big = remote["results"] / "ckpt" / "huge.pt"
    with big.open("wb") as f:
        f.truncate(free + 10**9)
    size = free + 10**9 + sum(len(c) for c in FILES.values())
    inventory(project, pool, remote)
    before = listing(remote["base"])
    for check in (("--check",), ()):
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), *check)
        assert r.returncode == 1, r.stdout + r.stderr
        msg = steps(project)["pull"]["msg"]
        shown_free = msg.split("has only ")[1].split(" free")[0]  # (the free space moves meanwhile)
        assert msg == refusal(
            f"teardown:{remote['results']} holds {format_bytes(size, binary=False)} (4 files) but the disk"
            f" of {dest} on this machine has only {shown_free} free; make room there (or give --dest a"
            " directory on a disk with room), then rerun"
        )
        assert "Traceback" not in r.stdout + r.stderr
        assert [steps(project)[n]["status"] for n in ("containers", "autostop", "files")] == ["skipped"] * 3
    assert list(dest.iterdir()) == []  # nothing pulled (--dest is made up front, as the README says)
    assert listing(remote["base"]) == before and docker_calls(remote) == []


def test_a_disk_that_fills_up_during_the_pull_says_make_room_then_resumes(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    (remote["results"] / "ckpt" / "big.pt").write_bytes(b"w" * 2_000_000)
    inventory(project, pool, remote)
    before = listing(remote["base"])
    with small_disk(tmp_path / "small", "3m") as disk:
        dest, filler = disk / "copy", disk / "other-job.bin"
        # another job on this machine takes the room after the check, while rsync starts
        hook = host_rsync_hook(pool, before=f"head -c 1500000 /dev/zero > '{filler}'")
        try:
            r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
        finally:
            hook.unlink()
        assert r.returncode == 1, r.stdout + r.stderr
        msg = steps(project)["pull"]["msg"]
        assert msg.startswith(
            f"refusing to delete anything on teardown: the pull of teardown:{remote['results']} to {dest} is"
            " incomplete: "
        ), msg
        assert msg.endswith(
            " (rsync: No space left on device on this machine); make room on the disk of"
            f" {dest} (or give another --dest), then rerun, or pass --force to wipe anyway"
        ), msg
        assert listing(remote["base"]) == before and docker_calls(remote) == []

        filler.unlink()  # room made: the rerun resumes, verifies and cleans the host
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
        assert r.returncode == 0, r.stdout + r.stderr
        assert (dest / "ckpt" / "big.pt").read_bytes() == b"w" * 2_000_000
        assert all((dest / rel).read_bytes() == content for rel, content in FILES.items())
        assert (dest / RECORD).exists()
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_a_file_the_host_changes_while_it_is_pulled_is_not_verified(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, remote)
    dest = tmp_path / "copy"
    before = listing(remote["base"])
    # the job writes once more just after rsync read the file, at its size and within the same
    # second: rsync's quick check (size, mtime in whole seconds) does not see it, the sha256 does,
    # and a rerun must pull it again
    hook = host_rsync_hook(pool, after="t=$(stat -c %Y a.txt); printf 'ALPHA\\n' > a.txt; touch -d @$t a.txt")
    try:
        r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    finally:
        hook.unlink()
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"] == refusal(
        f"the pull of teardown:{remote['results']} to {dest} is incomplete: 1 of 3 files not verified:"
        " corrupt 1 (a.txt); rerun teardown to resume the pull"
    )
    assert listing(remote["base"]) == before and docker_calls(remote) == []
    assert (remote["results"] / "a.txt").read_bytes() == b"ALPHA\n"
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / "a.txt").read_bytes() == b"ALPHA\n"
    assert listing(remote["base"]) == LEFT_ON_HOST


def test_a_rerun_mends_a_corrupt_copy_rsync_would_skip(
    project: Project, pool: TestHostPool, remote: dict[str, Path], tmp_path: Path
) -> None:
    # the copy's a.txt went bad keeping its size and mtime: rsync's quick check skipped it on
    # every rerun, so "rerun teardown to resume the pull" never mended it (only --force went on,
    # wiping the host's good a.txt)
    dest = tmp_path / "copy"
    earlier_pull(project, pool, remote, dest)
    bad = dest / "a.txt"
    st = bad.stat()
    corrupt_keeping_size_and_mtime(bad, b"ALPHA\n")
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest))
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)["pull"]["msg"].endswith(
        "1 of 3 files not verified: corrupt 1 (a.txt); rerun teardown to resume the pull, or pass --force"
        " to wipe anyway"
    )
    assert bad.read_bytes() == b"ALPHA\n"  # (kept: the rerun's rsync sends only what differs)
    r = project.cli("teardown", "--host", "teardown", "--dest", str(dest), "--keep-image")
    assert r.returncode == 0, r.stdout + r.stderr
    assert bad.read_bytes() == b"alpha\n" and bad.stat().st_mtime_ns == st.st_mtime_ns
    assert listing(remote["base"]) == LEFT_ON_HOST


# Two hosts torn down together whose vars.results_dest names the same local dir (a group or
# defaults var without `{host}`): their pulls ran side by side into one copy, where one could
# replace the other's files of the same names; one host's pull was refused halfway through the
# run, and two pulls that both started before either marked the dir wrote into the same files.
# Now a usage error before any connection. Real sshd test hosts and real rsync.


def two_hosts(project: Project, pool: TestHostPool, tmp_path: Path, dest: str) -> dict[str, Path]:
    """Hosts `teardown` and `dataset`, each with results/ckpt/model.pt of its own (same size)."""
    hosts, results = {}, {}
    for name, letter in (("teardown", b"A"), ("dataset", b"B")):
        res = tmp_path / name / "results"
        (res / "ckpt").mkdir(parents=True)
        (res / "ckpt" / "model.pt").write_bytes(letter * 100_000)
        entry = host_entry(pool.hosts[name], pool)
        entry["vars"].update(results_dir=str(res), state_dir=str(tmp_path / name / "state"))
        hosts[name], results[name] = entry, res
    project.write_inventory(hosts, defaults={"vars": {"results_dest": dest}})
    return results


def test_two_hosts_never_pull_into_one_local_dir(
    project: Project, pool: TestHostPool, tmp_path: Path
) -> None:
    dest = tmp_path / "exp7"
    results = two_hosts(project, pool, tmp_path, str(dest))
    for check in (("--check",), ()):
        r = project.cli("teardown", "--host", "teardown,dataset", *check)
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr.strip().endswith(
            f"hosts teardown and dataset would pull their results into the same local dir {dest}"
            " (vars.results_dest), where one pull could overwrite the other's files; put {host} in"
            " vars.results_dest, or give --dest (each host then gets its own subdirectory), then rerun."
        ), r.stderr
        assert "Traceback" not in r.stdout + r.stderr
    assert not dest.exists()
    assert all((res / "ckpt" / "model.pt").exists() for res in results.values())

    # `{host}` in the var: each host its own verified copy
    two_hosts(project, pool, tmp_path / "again", str(tmp_path / "runs" / "{host}"))
    r = project.cli("teardown", "--host", "teardown,dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    for name, letter in (("teardown", b"A"), ("dataset", b"B")):
        copy = tmp_path / "runs" / name
        assert (copy / "ckpt" / "model.pt").read_bytes() == letter * 100_000
        record = read_record(copy)
        assert record is not None and record.host == name
