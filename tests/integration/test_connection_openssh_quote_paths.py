"""A project dir whose path holds a double quote: OpenSSH's config (which rsync and the upload
probe go through) cannot name its known_hosts file. Each command says so in one sentence, as a
failed step (exit 1, no traceback), and teardown neither marks, pulls nor removes anything."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Project, host_entry

from gpuonboard.testing import TestHostPool

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")

SENTENCE = "holds a double quote or a line break, which OpenSSH's config (used by rsync) cannot hold"


def quoted_project(tmp_path: Path, pool: TestHostPool, name: str = 'proj "q"') -> Project:
    """A project dir named `proj "q"` (playbooks and templates linked from the repo)."""
    root = tmp_path / name
    root.mkdir()
    for d in ("playbooks", "templates"):
        (root / d).symlink_to(REPO / d)
    return Project(root, pool)


def only_step(project: Project) -> dict[str, Any]:
    steps = project.summary()["hosts"][0]["steps"]
    return dict(steps[0])


def assert_one_sentence(r: Any) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out and "internal error" not in out, out
    # (the sentence itself is checked in the report: the terminal wraps long lines)


def sync_setup(project: Project, tmp_path: Path) -> Path:
    """A one-file dataset for the `dataset` test host; -> the host's data dir."""
    src = tmp_path / "data"
    src.mkdir()
    (src / "a.bin").write_bytes(b"x" * 1000)
    data_dir = tmp_path / "remote"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"]["dataset"] = str(src)
    project.write_inventory({"dataset": entry})
    return data_dir


def test_sync_names_the_quote_in_the_project_path(tmp_path: Path, pool: TestHostPool) -> None:
    project = quoted_project(tmp_path, pool)
    data_dir = sync_setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset")
    assert_one_sentence(r)
    s = only_step(project)
    assert s["status"] == "failed" and SENTENCE in s["msg"] and "rename that path" in s["msg"], s
    assert not (data_dir / "data" / "a.bin").exists()


def teardown_setup(project: Project, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The host's results and dataset dirs, and the local dest (results, dataset, dest)."""
    base = tmp_path / "host"
    results, dataset = base / "results", base / "dataset"
    for d in (results, dataset):
        d.mkdir(parents=True)
    (results / "model.pt").write_bytes(b"weights")
    (dataset / "train.bin").write_bytes(b"data")
    dest = tmp_path / "pulled"
    entry = host_entry(project.pool.hosts["teardown"], project.pool)
    entry["vars"].update(
        {
            "results_dir": str(results),
            "results_dest": str(dest),
            "dataset_dir": str(dataset),
            "state_dir": str(base / "state"),
            "autostop_dir": str(base / "autostop"),
            "cron_dir": str(base / "cron.d"),
        }
    )
    project.write_inventory({"teardown": entry})
    return results, dataset, dest


def test_teardown_pull_says_why_and_touches_nothing(tmp_path: Path, pool: TestHostPool) -> None:
    project = quoted_project(tmp_path, pool)
    results, dataset, dest = teardown_setup(project, tmp_path)
    r = project.cli("teardown", "--host", "teardown")
    assert_one_sentence(r)
    s = only_step(project)
    assert s["step"] == "pull" and s["status"] == "failed", s
    assert SENTENCE in s["msg"] and "refusing to delete anything" in s["msg"], s
    # nothing marked (no dest made), pulled or removed
    assert not dest.exists()
    assert (results / "model.pt").read_bytes() == b"weights"
    assert (dataset / "train.bin").read_bytes() == b"data"


def test_network_upload_probe_says_why(tmp_path: Path, pool: TestHostPool) -> None:
    project = quoted_project(tmp_path, pool)
    entry = host_entry(pool.hosts["net1"], pool)
    entry["vars"].update({"iperf_peers": [], "rtt_count": 1})
    project.write_inventory({"net1": entry})
    r = project.cli("provision", "--host", "net1", "--playbook", "prove", "--only", "network")
    assert_one_sentence(r)
    upload = project.rules("net1")["upload_throughput"]
    assert upload["verdict"] == "fail" and SENTENCE in upload["actual"] + upload["detail"], upload


def test_teardown_names_the_config_dir_it_cannot_write(tmp_path: Path, pool: TestHostPool) -> None:
    project = quoted_project(tmp_path, pool, name="proj")
    results, dataset, dest = teardown_setup(project, tmp_path)
    blocked = project.root / ".gpuonboard" / "ssh"
    blocked.parent.mkdir()
    blocked.write_text("a file where the config dir goes\n")
    r = project.cli("teardown", "--host", "teardown")
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "Traceback" not in out and "internal error" not in out, out
    s = only_step(project)
    assert s["step"] == "pull" and s["status"] == "failed", s
    assert f"cannot write the OpenSSH config for rsync in {blocked} (File exists)" in s["msg"], s
    assert not dest.exists()
    assert (results / "model.pt").read_bytes() == b"weights"
    assert (dataset / "train.bin").read_bytes() == b"data"


def test_sync_names_the_config_dir_it_cannot_write(tmp_path: Path, pool: TestHostPool) -> None:
    project = quoted_project(tmp_path, pool, name="proj")
    data_dir = sync_setup(project, tmp_path)
    blocked = project.root / ".gpuonboard" / "ssh"
    blocked.parent.mkdir()
    blocked.write_text("a file where the config dir goes\n")
    r = project.cli("sync", "--host", "dataset")
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "Traceback" not in out and "internal error" not in out, out
    s = only_step(project)
    assert s["status"] == "failed", s
    assert f"cannot write the OpenSSH config for the upload in {blocked} (File exists)" in s["msg"], s
    assert not (data_dir / "data" / "a.bin").exists()
