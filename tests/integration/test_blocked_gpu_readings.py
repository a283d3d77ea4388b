"""A GPU field the operating system refuses to read, on a real sshd test host: a gVisor sandbox's
nvidia-smi answers `ECC Mode : Current : GPU access blocked by the operating system` in `-q`
(google/gvisor PR 10676) and `ERR!` in the table's ECC cell. The live probe read both as the
GPU's fault: sensor_faults warned "a failing fan or sensor ... or a GPU in a bad state" and
ecc_mode asked to reset the GPU. Now both are unverified, naming the refusal and asking for the
field read on the host itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Project, host_entry

from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.toolbox import add_executable

REAL = Path(__file__).parents[1] / "fixtures" / "real"
GVISOR_ECC = (
    "part-of-nvidia-smi-q-d-ECC__gvisor-nvproxy-sandbox__ecc-mode-blocked-by-the-os__gvisor-10676.txt"
)
A10_Q = "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt"
A10_TABLE = "nvidia-smi__a10__1gpu__driver550.90.12.txt"
NAME = "os-blocked-ecc"


def _outputs() -> tuple[str, str]:
    """The A10's real `-q` with its `ECC Mode` block replaced by the gVisor capture's, and its
    real table with the ECC cell `0` made `ERR!` (as the sandbox's table prints it)."""
    q = (REAL / A10_Q).read_text()
    block = "\n".join((REAL / GVISOR_ECC).read_text().splitlines()[1:4]) + "\n"
    q = q[: q.index("    ECC Mode\n")] + block + q[q.index("    ECC Errors\n") :]
    cell = "00000000:08:00.0 Off |                    0 |"
    table = (REAL / A10_TABLE).read_text()
    assert cell in table
    return q, table.replace(cell, cell.replace("   0 |", "ERR! |"))


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> TestHost:
    if NAME not in pool.hosts:
        pool.add_many([(NAME, None)])
    return pool.hosts[NAME]


def test_a_field_the_os_refused_is_no_gpu_fault_live(
    project: Project, pool: TestHostPool, host: TestHost
) -> None:
    q, table = _outputs()
    saved = host.bin_dir.parent / "gvisor-outputs"
    saved.mkdir(exist_ok=True)
    (saved / "q.txt").write_text(q)
    (saved / "table.txt").write_text(table)
    add_executable(
        host.bin_dir,
        "nvidia-smi",
        "#!/bin/sh\n"
        'case "$*" in\n'
        f"  -q) exec cat '{saved / 'q.txt'}' ;;\n"
        f"  '') exec cat '{saved / 'table.txt'}' ;;\n"
        "  *) echo 'nvidia-smi: this test host replays no capture for arguments:' \"$*\" >&2; exit 2 ;;\n"
        "esac\n",
    )
    project.write_inventory({NAME: host_entry(host, pool, order={"gpu_count": 1, "gpu_model": "A10"})})
    r = project.cli("check", "--host", NAME)
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules(NAME)
    for rule in ("ecc_mode", "sensor_faults"):
        assert rules[rule]["verdict"] == "unverified", rules[rule]
        assert "GPU access blocked by the operating system" in rules[rule]["actual"], rules[rule]
        assert "the operating system refused nvidia-smi this reading" in rules[rule]["detail"], rules[rule]
    assert rules["gpu_model"]["verdict"] == "pass", rules["gpu_model"]
    assert rules["temperature"]["verdict"] == "pass", rules["temperature"]


SANDBOX = "os-sandbox-perf-err"
GVISOR_DMESG = "dmesg__gvisor-sandbox__emulated-kernel-log__k8s-image-builder-docs.txt"


def test_a_sandboxs_err_is_no_gpu_fault_live(project: Project, pool: TestHostPool) -> None:
    """The host's `dmesg` prints the gVisor sandbox's own log and nvidia-smi's table reads `ERR!`
    in the Perf cell (google/gvisor PR 10675; the real A10 table with `P8` so edited): it warned
    sensor_faults "a failing fan or sensor"; now unverified, naming the sandbox."""
    if SANDBOX not in pool.hosts:
        pool.add_many([(SANDBOX, None)])
    host = pool.hosts[SANDBOX]
    saved = host.bin_dir.parent / "gvisor-outputs"
    saved.mkdir(exist_ok=True)
    row = "|  0%   33C    P8             15W /  150W |"
    table = (REAL / A10_TABLE).read_text()
    assert row in table
    (saved / "table.txt").write_text(table.replace(row, row.replace("P8  ", "ERR!")))
    (saved / "dmesg.txt").write_text((REAL / GVISOR_DMESG).read_text())
    add_executable(
        host.bin_dir,
        "nvidia-smi",
        "#!/bin/sh\n"
        'case "$*" in\n'
        f"  '') exec cat '{saved / 'table.txt'}' ;;\n"
        "  *) echo 'nvidia-smi: this test host replays no capture for arguments:' \"$*\" >&2; exit 2 ;;\n"
        "esac\n",
    )
    add_executable(host.bin_dir, "dmesg", f"#!/bin/sh\nexec cat '{saved / 'dmesg.txt'}'\n")
    project.write_inventory({SANDBOX: host_entry(host, pool, order={"gpu_count": 1})})
    r = project.cli("check", "--host", SANDBOX)
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules(SANDBOX)
    assert rules["sensor_faults"]["verdict"] == "unverified", rules["sensor_faults"]
    assert "Starting gVisor" in rules["sensor_faults"]["detail"], rules["sensor_faults"]
    assert rules["gpu_xid"]["verdict"] == "unverified", rules["gpu_xid"]


NO_DRIVER = "os-sandbox-no-driver"


def test_a_failed_nvidia_smi_inside_a_sandbox_names_it_live(project: Project, pool: TestHostPool) -> None:
    """`dmesg` prints the gVisor sandbox's own log and every nvidia-smi call prints its real
    "couldn't communicate with the NVIDIA driver" (exit 9): nvidia_driver failed blaming the box's
    kernel module; it still fails, naming the sandbox."""
    if NO_DRIVER not in pool.hosts:
        pool.add_many([(NO_DRIVER, None)])
    host = pool.hosts[NO_DRIVER]
    saved = host.bin_dir.parent / "gvisor-outputs"
    saved.mkdir(exist_ok=True)
    (saved / "dmesg.txt").write_text((REAL / GVISOR_DMESG).read_text())
    message = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        " Make sure that the latest NVIDIA driver is installed and running."
    )
    (saved / "failed.txt").write_text(message + "\n\n")
    add_executable(host.bin_dir, "nvidia-smi", f"#!/bin/sh\ncat '{saved / 'failed.txt'}'\nexit 9\n")
    add_executable(host.bin_dir, "dmesg", f"#!/bin/sh\nexec cat '{saved / 'dmesg.txt'}'\n")
    project.write_inventory({NO_DRIVER: host_entry(host, pool, order={"gpu_count": 1})})
    r = project.cli("check", "--host", NO_DRIVER)
    assert "Traceback" not in r.stderr, r.stderr
    rules = project.rules(NO_DRIVER)
    assert rules["nvidia_driver"]["verdict"] == "fail", rules["nvidia_driver"]
    assert "Starting gVisor" in rules["nvidia_driver"]["detail"], rules["nvidia_driver"]
    assert "kernel module is not loaded" not in rules["nvidia_driver"]["detail"], rules["nvidia_driver"]
    assert "couldn't communicate with the NVIDIA driver" in rules["nvidia_driver"]["actual"], rules[
        "nvidia_driver"
    ]
