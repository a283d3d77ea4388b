"""A slice of a bigger machine (a container: RunPod, Vast.ai, AutoDL, a Kubernetes pod; a Slurm
job) sees only its own GPUs in nvidia-smi but may read the host's whole kernel log, with other
tenants' Xids in it. An Xid on a whole PCI address none of the rental's GPUs has is said as on
a GPU this rental does not show, and warns; before, it failed the rental for a GPU it does not
have. On a whole box, an Xid without an address, or on a listed GPU, it is judged as before.

The outputs are real captures (tests/fixtures/real, tests/fixtures/public; SOURCES.md), put
together as one box's files: a RunPod pod's one-GPU `nvidia-smi` (00000000:1E:00.0), AutoDL's
container `df -h` (/ an overlay), and kernel logs with Xids on other addresses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.xid_rules import rule_xid

from ...facts.test_kernel_log_nvrm import reload_after_a_fall

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL, PUBLIC = FIXTURES / "real", FIXTURES / "public"
POD_SMI = PUBLIC / "nvidia-smi__a100-80gb-pcie__runpod-pod__driver580.159.04__one-line-processes.txt"
CONTAINER_DF = PUBLIC / "df-h__autodl-rtx4090-container__overlay-root.txt"
MACHINE_DF = REAL / "df__ubuntu-18.04-vm__snap-loops.txt"
XID_119 = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"  # on 0000:9b:00
XID_79_SXID = REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt"  # Xid 79 on 0000:91:00, fatal SXids
OLD_FORMAT = REAL / "dmesg-syslog__old-xid-format-0001-00__xid-6-30.txt"  # `Xid (0001:00)`
H100_8 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"  # lists 00000000:9B:00.0
ONE_OF_FOUR = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"  # 1 of 4 attached
# the cgroup paths of real Slurm jobs' /proc/self/cgroup (a Fox compute node, cgroup v2; an older
# cgroup v1 node: search index file 40544207901), as `grep . FILE` of the limit file under them
SLURM_V2 = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_1392969/step_0/user/task_0/memory.max:max\n"
SLURM_V1 = (
    "/sys/fs/cgroup/memory/slurm/uid_2101171/job_280678/step_interactive/task_0/memory.limit_in_bytes"
    ":9223372036854771712\n"
)


def judged(tmp_path: Path, *files: Path, texts: dict[str, str] | None = None) -> dict[str, Check]:
    """rule -> check of the files (and texts saved under their names) judged as one box's."""
    folder = tmp_path / "box"
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).write_bytes(f.read_bytes())
    for name, text in (texts or {}).items():
        (folder / name).write_text(text)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return {c.name: c for c in offline.judge(facts, None)}


def test_a_containers_xid_on_a_gpu_it_does_not_show_warns(tmp_path: Path) -> None:
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, XID_119)["gpu_xid"]
    assert row.verdict == "warn", row
    assert row.actual == (
        "GPU at PCI 0000:9b:00 (a GPU this rental does not show): Xid 119 GSP RPC Timeout x5 -> reset_gpu"
        " (the log read starts after boot, so it does not cover the whole boot)"
    )
    assert row.detail.startswith("The box is a slice of a bigger machine (/ is an overlay: a container)")
    assert "gpu_count" in row.detail


def test_the_same_log_on_a_whole_machine_still_fails(tmp_path: Path) -> None:
    """/ on a disk: an Xid on an address no listed GPU has may be a GPU that fell off the bus."""
    row = judged(tmp_path, POD_SMI, MACHINE_DF, XID_119)["gpu_xid"]
    assert row.verdict == "fail"
    assert row.actual.startswith("GPU at PCI 0000:9b:00: Xid 119")


def test_a_containers_xid_on_its_own_gpu_still_fails(tmp_path: Path) -> None:
    """A container given all 8 GPUs: the Xid's 0000:9b:00 is GPU 4 of its listing."""
    row = judged(tmp_path, H100_8, CONTAINER_DF, XID_119)["gpu_xid"]
    assert row.verdict == "fail"
    assert row.actual.startswith("GPU 4 (0000:9b:00): Xid 119")


@pytest.mark.parametrize("listing", [SLURM_V2, SLURM_V1])
def test_a_slurm_jobs_xid_on_a_gpu_it_does_not_show_warns(tmp_path: Path, listing: str) -> None:
    """/ on a disk (a Slurm node), the login's cgroup a Slurm job's: a slice of the node."""
    row = judged(tmp_path, POD_SMI, MACHINE_DF, XID_119, texts={"cgroup.txt": listing})["gpu_xid"]
    assert row.verdict == "warn", row
    job = "1392969" if listing is SLURM_V2 else "280678"
    assert f"(the login runs in Slurm job {job}'s cgroup)" in row.detail


def test_a_fallen_gpu_elsewhere_warns_and_the_switch_faults_still_fail(tmp_path: Path) -> None:
    checks = judged(tmp_path, POD_SMI, CONTAINER_DF, XID_79_SXID)
    xid, sxid = checks["gpu_xid"], checks["nvswitch_sxid"]
    assert xid.verdict == "warn"
    assert "GPU at PCI 0000:91:00 (a GPU this rental does not show): Xid 79" in xid.actual
    # (an NVSwitch serves every GPU of the board, the rental's too: its fatal SXids stay failures)
    assert sxid.verdict == "fail"


def test_an_xid_without_a_whole_address_is_judged_as_before(tmp_path: Path) -> None:
    """An old driver's `Xid (0001:00)` names no PCI address to compare: the box's own."""
    inside = judged(tmp_path / "a", POD_SMI, CONTAINER_DF, OLD_FORMAT)["gpu_xid"]
    outside = judged(tmp_path / "b", POD_SMI, MACHINE_DF, OLD_FORMAT)["gpu_xid"]
    assert (inside.verdict, inside.actual) == (outside.verdict, outside.actual)
    assert "does not show" not in inside.actual


def test_a_listing_of_fewer_gpus_than_attached_is_not_whole(tmp_path: Path) -> None:
    """`Attached GPUs: 4`, one listed: the Xid's address may be one of the three not listed."""
    row = judged(tmp_path, ONE_OF_FOUR, CONTAINER_DF, XID_119)["gpu_xid"]
    assert row.verdict == "fail"
    assert "does not show" not in row.actual


# the host's driver failing another tenant's GPU in sentences of which one names no GPU:
# NVIDIA/open-gpu-kernel-modules #789 (`RmInitAdapter: Cannot initialize GSP firmware RM`, then
# `GPU 0000:98:00.0: RmInitAdapter failed!`), NVIDIA/NVSentinel #155 (`The NVIDIA GPU 0000:b3:00.0
# ... fallen off the bus`, then `The NVIDIA probe routine failed for 1 device(s).`)
GSP_789 = REAL / "dmesg__rminitadapter-cannot-initialize-gsp-no-pci__rtx3090__driver550.txt"
FALLEN_155 = REAL / "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"


@pytest.mark.parametrize(("log", "pci"), [(GSP_789, "0000:98:00.0"), (FALLEN_155, "0000:b3:00.0")])
def test_a_failure_on_a_gpu_it_does_not_show_in_sentences_naming_none_warns(
    tmp_path: Path, log: Path, pci: str
) -> None:
    """The sentence naming no GPU is a line of the same failure as the one naming 0000:98:00.0
    (0000:b3:00.0): another tenant's GPU. It failed the RunPod pod, whose own GPU is healthy, as
    "a GPU (no PCI address in the message)"."""
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, log)["gpu_xid"]
    # (#155's lines each hold `nvidia`, as a `grep -i nvidia` keeps them, which may drop an Xid
    # line: unverified since round 31, its failure on another GPU still said)
    assert row.verdict == ("unverified" if log == FALLEN_155 else "warn"), row
    assert row.actual.startswith(f"GPU at PCI {pci} (a GPU this rental does not show)")
    assert "no PCI address" not in row.actual


def test_another_gpus_probe_failure_after_a_fall_is_not_hidden(tmp_path: Path) -> None:
    """The pod beside a host log edited from NVIDIA/NVSentinel #155 and the Rockchip RTX 3090's
    (tests/unit/facts/test_kernel_log_nvrm.py reload_after_a_fall: b3 falls off the bus at
    `[1000.3]`; a reload at `[2000.1]` fails to probe 0000:3b:00.0, `nvidia: probe of
    0000:3b:00.0 failed`). The probe failure was taken for b3's fall and dropped; it is 3b's,
    another GPU the pod does not show, listed beside b3's."""
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, texts={"dmesg.txt": reload_after_a_fall()})["gpu_xid"]
    assert row.verdict == "unverified", row  # (every line holds `nvidia`: a grep's, round 31)
    assert row.actual.startswith(
        "GPU at PCI 0000:b3:00.0 (a GPU this rental does not show): driver message (no Xid): GPU has"
        " fallen off the bus -> reboot; GPU at PCI 0000:3b:00.0 (a GPU this rental does not show):"
        " driver message (no Xid): the driver failed to probe a GPU -> reboot"
    ), row.actual


def test_a_second_gsp_failure_naming_no_gpu_fails_the_slice(tmp_path: Path) -> None:
    """The pod beside #789's log with its `RmInitAdapter: Cannot initialize GSP firmware RM` line
    repeated at `[1500.0]`, no line naming a GPU after it: that failure may be the pod's own GPU
    (it warned, taken for 0000:98:00.0's)."""
    lines = GSP_789.read_text().splitlines()
    text = "\n".join([*lines, "[ 1500.000000] " + lines[0].split("] ", 1)[1]]) + "\n"
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, texts={"dmesg.txt": text})["gpu_xid"]
    assert row.verdict == "fail", row
    assert (
        "a GPU (no PCI address in the message): driver message (no Xid): GSP firmware failed to start"
        in row.actual
    )


def test_an_ignorable_xid_elsewhere_in_a_log_read_after_boot_says_so_in_its_detail() -> None:
    """The one real `Xid (PCI:0000:38:00): 43` line of dmesg-decode-iso (cut from its log
    in-test) on a container whose one GPU is 04:00.0, the log read starting after boot. Before,
    the pass named that Xid in its actual but its detail said "the log read holds no Xid"; now
    the detail says it holds none on a GPU this rental shows."""
    text = (REAL / "dmesg-decode-iso__xid-13-43__plus-oom.txt").read_text()
    line = next(line for line in text.splitlines() if "NVRM: Xid (PCI:0000:38:00): 43," in line)
    check = rule_xid(
        parse_kernel_log(line + "\n").events, True, "", [(0, "00000000:04:00.0")], False, slice_="a container"
    )
    assert check.verdict == "pass" and "Xid 43" in check.actual, check
    assert "holds no Xid," not in check.detail and "holds no Xid on a GPU this rental shows" in check.detail
