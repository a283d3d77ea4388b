"""An overlay `/` was taken alone for a container's root (a slice of a bigger machine). A whole
machine booted diskless or from a live image (Warewulf, xCAT, dracut's LiveOS_rootfs, a custom
initrd: NVIDIA/nvidia-docker#1567's host) has an overlay root too: an Xid on a GPU it no longer
lists (fallen off the bus) was said as another tenant's and only warned. The cgroup probe now
reads PID 1's name first: an init system there (systemd, init) is a whole machine unless a
container's mark is beside it; an entry command (bash) or a name not read stays a container.

Real captures: the custom-initrd host's `df -h` (tests/fixtures/real), AutoDL's container
`df -h` (tests/fixtures/public), a RunPod pod's `nvidia-smi`, the Dell XE9680's Xid 119 on
0000:9b:00; PID 1's names as `cat /proc/1/comm` printed them, put in the `grep .` form the
offline judge reads (`/proc/1/comm:NAME`): `systemd` on a machine (search index file
6146978918, a 2015 note "Am I running systemd or good old init?"), `bash` in a UCloud k3s pod
(search index file 43041894513: "Root filesystem is overlay ... PID 1 is bash, NOT systemd")."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.slice_view import container_said

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL, PUBLIC = FIXTURES / "real", FIXTURES / "public"
POD_SMI = PUBLIC / "nvidia-smi__a100-80gb-pcie__runpod-pod__driver580.159.04__one-line-processes.txt"
CONTAINER_DF = PUBLIC / "df-h__autodl-rtx4090-container__overlay-root.txt"
INITRD_DF = REAL / "df-h__overlay-root__custom-initrd.txt"  # a host: / an overlay, /var on sda6
XID_119 = REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"  # on 0000:9b:00
MACHINE_PID1 = "/proc/1/comm:systemd\n"
POD_PID1 = "/proc/1/comm:bash\n"


def judged(tmp_path: Path, *files: Path, texts: dict[str, str] | None = None) -> dict[str, Check]:
    folder = tmp_path / "box"
    folder.mkdir(parents=True)
    for f in files:
        (folder / f.name).write_bytes(f.read_bytes())
    for name, text in (texts or {}).items():
        (folder / name).write_text(text)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return {c.name: c for c in offline.judge(facts, None)}


def test_a_whole_machine_with_an_overlay_root_fails_an_xid_on_a_gpu_it_does_not_list(tmp_path: Path) -> None:
    """systemd as PID 1: the box is the machine, and 0000:9b:00 may be its GPU off the bus."""
    row = judged(tmp_path, POD_SMI, INITRD_DF, XID_119, texts={"pid1.txt": MACHINE_PID1})["gpu_xid"]
    assert row.verdict == "fail", row
    assert row.actual.startswith("GPU at PCI 0000:9b:00: Xid 119")


def test_a_pod_whose_pid1_is_its_entry_command_is_a_slice(tmp_path: Path) -> None:
    row = judged(tmp_path, POD_SMI, CONTAINER_DF, XID_119, texts={"pid1.txt": POD_PID1})["gpu_xid"]
    assert row.verdict == "warn", row
    assert row.detail.startswith(
        "The box is a slice of a bigger machine (/ is an overlay and PID 1 is 'bash', no init system:"
        " a container)"
    )


def test_an_overlay_root_whose_pid1_is_not_known_stays_a_container(tmp_path: Path) -> None:
    """Nothing read of PID 1 (a saved df alone): as before, a container (round 20)."""
    row = judged(tmp_path, POD_SMI, INITRD_DF, XID_119)["gpu_xid"]
    assert row.verdict == "warn", row
    assert row.detail.startswith("The box is a slice of a bigger machine (/ is an overlay: a container)")


def _live(df: Path, cgroup_probe: str) -> str:
    raw = {"df": ProbeOutput(df.read_text(), "", 0), "cgroup_limits": ProbeOutput(cgroup_probe, "", 0)}
    return container_said(parse_facts(raw))


@pytest.mark.parametrize(
    ("probe", "said"),
    [
        ("/proc/1/comm\tsystemd\n", ""),
        ("/proc/1/comm\tbash\n", "/ is an overlay and PID 1 is 'bash', no init system"),
        ("", "/ is an overlay"),
        # systemd run in a container says so (its /run/systemd/container), as do the engines' marks
        (
            "/proc/1/comm\tsystemd\n/run/systemd/container\tdocker\n",
            "/ is an overlay and systemd runs in a container (docker)",
        ),
        (
            "/proc/1/comm\tinit\n/run/.containerenv\tpresent\n",
            "/ is an overlay and /run/.containerenv is there",
        ),
    ],
)
def test_the_live_probes_signs(probe: str, said: str) -> None:
    assert _live(INITRD_DF, probe) == said


def test_a_mark_without_an_overlay_root_is_no_container() -> None:
    """This build machine (2026-12-05): a Firecracker microVM booted from a Docker image, its own
    kernel, `/` on /dev/vda, PID 1 its agent `process_api`, and the image's /.dockerenv: the
    cgroup probe's first lines there, real. A whole (virtual) machine, not a slice."""
    df = REAL / "df__ubuntu-18.04-vm__snap-loops.txt"  # (/ on a disk)
    assert _live(df, "/proc/1/comm\tprocess_api\n/.dockerenv\tpresent\n") == ""
