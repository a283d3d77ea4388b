"""(round 34) On a real sshd test host: where nvidia-smi FAILS on the box (a driver/library
version mismatch), the live probe reads the NVIDIA kernel module's own version file,
/proc/driver/nvidia/version, in the same remote command, after nvidia-smi's failure: min_driver
is judged from the loaded module and nvidia_driver's failure names it, as offline reading of a
saved session does. Before, the live probe never read it (min_driver: "version is not read
here"). A healthy box reads no file more (issue 31 counts files a host reads).

The host's toolbox replays real captures: nvidia-smi prints the truenas-nvidia-drivers#19
session's mismatch (tests/fixtures/sessions/SOURCES.md), and its `cat` prints that session's
`cat /proc/driver/nvidia/version` for that path (the file itself cannot be put under this
machine's /proc), any other path read by the real cat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Project, host_entry

from gpuonboard.facts.driver_module import MODULE_FILE
from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.toolbox import add_executable

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TRUENAS = (
    FIXTURES
    / "sessions"
    / "transcript__nvidia-smi-NVMLmismatch-library-580.178+proc-driver-version-580.173.02__truenas-19.txt"
)
TABLE = FIXTURES / "real" / "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt"
# nvidia-smi's return code of NVML_ERROR_LIB_RM_VERSION_MISMATCH (nvml.h: 18)
MISMATCH_EXIT = 18


def _tools(h: TestHost, nvidia_smi: str) -> Path:
    """The host's nvidia-smi as given; its `cat` printing the session's module file for
    MODULE_FILE (each path it is given logged), the real cat for any other. The calls log."""
    lines = TRUENAS.read_text().splitlines(keepends=True)
    (h.home / "failed.txt").write_text("".join(lines[1:3]))
    (h.home / "module.txt").write_text("".join(lines[4:6]))
    calls = h.home / "cat.calls"
    calls.unlink(missing_ok=True)
    add_executable(h.bin_dir, "nvidia-smi", f"#!/bin/sh\n{nvidia_smi}\n")
    add_executable(
        h.bin_dir,
        "cat",
        f'#!/bin/sh\necho "$@" >> {calls}\n'
        f'[ "$*" = {MODULE_FILE} ] && exec /bin/cat {h.home / "module.txt"}\nexec /bin/cat "$@"\n',
    )
    return calls


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> TestHost:
    if "module-file" not in pool.hosts:
        pool.add_many([("module-file", None)])
    return pool.hosts["module-file"]


def test_a_failed_nvidia_smi_reads_the_loaded_module_live(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    calls = _tools(host, f"/bin/cat {host.home / 'failed.txt'}; exit {MISMATCH_EXIT}")
    order = {"gpu_count": 1, "min_driver": "580"}
    project.write_inventory({"module-file": host_entry(host, pool, order=order)})
    r = project.cli("check", "--host", "module-file")
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules("module-file")
    assert (rules["min_driver"]["verdict"], rules["min_driver"]["actual"]) == (
        "pass",
        "580.173.02 (the loaded kernel module, /proc/driver/nvidia/version: `NVRM version: NVIDIA UNIX"
        " x86_64 Kernel Module 580.173.02`); nvidia-smi failed on a version mismatch: its NVML library"
        " is 580.178, not the module's",
    )
    assert rules["nvidia_driver"]["verdict"] == "fail", rules["nvidia_driver"]
    assert (
        "the loaded kernel module is 580.173.02 (/proc/driver/nvidia/version)"
        in rules["nvidia_driver"]["actual"]
    )
    assert calls.read_text().splitlines().count(MODULE_FILE) == 1  # (once: the table probe's)
    # the run's saved outputs hold the file as its own output, judged the same by `invoke facts`
    raw = project.root / "reports" / "latest" / "raw" / "module-file"
    assert (raw / "nvidia_module_version.txt").read_text() == "".join(
        TRUENAS.read_text().splitlines(True)[4:6]
    )
    assert "==>" not in (raw / "nvidia_smi_table.txt").read_text()
    (project.root / "order.yml").write_text("gpu_count: 1\nmin_driver: '580'\n")
    again = project.cli("facts", str(raw), "--order", str(project.root / "order.yml"), "--json")
    assert again.returncode in (0, 1), again.stdout + again.stderr
    offline = {c["name"]: c for c in json.loads(again.stdout)["rules"]}
    assert offline["min_driver"]["actual"] == rules["min_driver"]["actual"], offline["min_driver"]


def test_a_healthy_box_reads_no_module_file(project: Project, pool: TestHostPool, host: TestHost) -> None:
    """The real 4 x A100 table, exit 0: the probe never asks for the module file."""
    calls = _tools(host, f'[ "$#" -eq 0 ] && exec /bin/cat {TABLE}; exit 2')
    project.write_inventory({"module-file": host_entry(host, pool, order={"gpu_count": 4})})
    r = project.cli("check", "--host", "module-file")
    assert "Traceback" not in r.stderr, r.stderr
    assert project.rules("module-file")["gpu_count"]["verdict"] == "pass"
    assert MODULE_FILE not in (calls.read_text() if calls.exists() else "")
