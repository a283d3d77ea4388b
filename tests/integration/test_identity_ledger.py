"""GPU identity across runs over real SSH: the acceptance playbook (`check`) run twice on a test
host replaying the real 8 x H100 `nvidia-smi -q` capture, the second time with one GPU's serial
and UUID replaced (a swap); and the same box handed back under another host name."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from conftest import REPO, Project, host_entry

from gpuonboard.testing import ReplayRule, add_executable, render_script
from gpuonboard.testing.hosts import TestHost, TestHostPool

H100_ORDER = {"gpu_model": "H100 80GB", "gpu_count": 8, "vram": "80GB"}
PROFILE = "h100-8x-throttled"  # replays the real capture below for `nvidia-smi -q`
REAL = REPO / "tests" / "fixtures" / "real"
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
TOPO = REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt"
GPU3_SERIAL, GPU3_UUID = "1650124032506", "GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99"
NEW_SERIAL, NEW_UUID = "1650124099999", "GPU-00000000-1111-2222-3333-444444444444"


def _host(pool: TestHostPool, name: str) -> TestHost:
    return pool.hosts.get(name) or pool.add(name, PROFILE)


def _check(project: Project, name: str) -> dict[str, dict[str, str]]:
    r = project.cli("check", "--host", name, timeout=120)
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    # the real capture's GPUs throttle (HW Slowdown): gpu_health fails the box, exit 1
    assert r.returncode == 1, r.stdout + r.stderr
    return project.rules(name)


def _replay_swapped_gpu3(h: TestHost, files: Path) -> None:
    """The host's nvidia-smi now replays the capture with GPU 3's serial and UUID replaced."""
    text = H100_Q.read_text()
    assert text.count(GPU3_SERIAL) == 1 and text.count(GPU3_UUID) == 1
    files.mkdir(parents=True, exist_ok=True)
    (files / "q.txt").write_text(text.replace(GPU3_SERIAL, NEW_SERIAL).replace(GPU3_UUID, NEW_UUID))
    (files / "topo.txt").write_text(TOPO.read_text())
    rules = [ReplayRule("-q", PurePosixPath("q.txt")), ReplayRule("topo -m", PurePosixPath("topo.txt"))]
    add_executable(h.bin_dir, "nvidia-smi", render_script("nvidia-smi", rules, files))


def test_a_swapped_gpu_warns_on_the_second_run(project: Project, pool: TestHostPool, tmp_path: Path) -> None:
    h = _host(pool, "idSwap")
    project.write_inventory({"idSwap": host_entry(h, pool, order=H100_ORDER)})
    first = _check(project, "idSwap")["gpu_identity"]
    assert first["verdict"] == "pass"
    assert first["actual"].startswith("recorded 8 GPUs: serials 1650124031592, 1650124008135, ")

    _replay_swapped_gpu3(h, tmp_path / "swapped")
    second = _check(project, "idSwap")["gpu_identity"]
    assert second["verdict"] == "warn", second
    assert second["actual"] == f"GPU 3: serial {GPU3_SERIAL} -> {NEW_SERIAL}"
    assert "a GPU was swapped since the run of" in second["detail"]
    assert "fine if you asked for it" in second["detail"] and "ask the vendor why" in second["detail"]

    # the ledger: one file for the host, both runs (check mode records it: local bookkeeping)
    doc = json.loads((project.root / ".gpuonboard" / "ledger" / "idSwap.json").read_text())
    assert [r["check_mode"] for r in doc["runs"]] == [True, True]
    assert [r["gpus"][3]["serial"] for r in doc["runs"]] == [GPU3_SERIAL, NEW_SERIAL]
    assert doc["runs"][0]["acceptance"] == {"verdict": "fail", "failed": ["throttling"]}


def test_the_failed_box_handed_back_under_a_new_name_fails(project: Project, pool: TestHostPool) -> None:
    old, new = _host(pool, "idOld"), _host(pool, "idNew")
    project.write_inventory(
        {
            "idOld": host_entry(old, pool, order=H100_ORDER),
            "idNew": host_entry(new, pool, order=H100_ORDER),
        }
    )
    assert _check(project, "idOld")["gpu_identity"]["verdict"] == "pass"  # failed on throttling
    rule = _check(project, "idNew")["gpu_identity"]
    assert rule["verdict"] == "fail", rule
    assert "all 8 GPUs are the GPUs of host idOld, which failed acceptance (throttling) on " in rule["actual"]
    assert "this is the box you rejected as host idOld" in rule["detail"]
    step = next(s for s in project.summary()["hosts"][0]["steps"] if s["step"] == "gpu_identity")
    assert step["status"] == "failed"
