"""One box judged two ways gives one set of verdicts: `gpuonboard check` over SSH on a test host
whose commands print a real box's captured outputs, and `gpuonboard facts DIR --order` on those
same captures saved as files. Every rule the offline judge judges must read the same verdict and
actual live, unless a fact only one path can read explains it (listed in EXPLAINED).

The live probe's kernel-log filter once dropped the kernel's AER lines about a GPU (`nvidia
0000:03:00.0: AER: can't recover`), which offline judging of the same log reads: a GPU the kernel
could not recover failed `gpu_xid` offline and passed live (tests/unit/facts/
test_kernel_log_probe_filter.py holds the class over every real kernel log); so did the host's own
hardware errors (EDAC, machine checks, APEI records), which host_hw_errors read offline only."""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from conftest import Project, host_entry

from gpuonboard.api.transcript import sections
from gpuonboard.testing import TestHost, TestHostPool
from gpuonboard.testing.toolbox import ReplayRule, add_executable, render_script

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# the commands of the live probe that print a box's state: each host has them all, a capture's
# replay or `not found` (never this machine's own dmesg, lscpu, free or df)
COMMANDS = ("nvidia-smi", "dmesg", "sudo", "journalctl", "lscpu", "free", "df", "lsblk", "nproc")
CSV = "csv"  # the live probe's --query-gpu line (its arguments are the parser's field list)
# (the live kernel log's `# first:` line tells whether it reaches back to boot; a saved file's
# first line says so only where the file holds lines no grep for the drivers' keeps: compared
# without the note)
BOOT_NOTE = " (the log read starts after boot, so it does not cover the whole boot)"
# rules whose live verdict reads a fact only the live probe has, and the words that say so offline
EXPLAINED = {
    # the cgroup memory limit of the test machine (offline: no cgroup file given)
    "ram": "(of the host: / is an overlay, a container)",
}


# nvidia-smi's own warning line, as the real 8 x V100 capture ends (Azure/azhpc-diagnostics)
INFOROM_WARNING = (
    (
        FIXTURES
        / "real/nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt"
    )
    .read_text()
    .strip()
    .splitlines()[-1]
)


@dataclass(frozen=True)
class Box:
    """A real box's captures: `files` by the command that printed them (`nvidia-smi -q`), or a
    saved terminal `session` of it; `fails`: nvidia-smi's exit code where it printed its failure;
    `unsaid`: rules judged offline from an output that no live command prints (a session's
    `dmesg | grep NVRM`): never a pass on either side; `warns`: a warning nvidia-smi prints on
    its stderr beside each whole answer, then exits 14 (a corrupted infoROM)."""

    order: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    session: str | None = None
    fails: int | None = None
    unsaid: tuple[str, ...] = ()
    warns: str = ""


BOXES = {
    # 8 x H100 80GB HBM3 (driver 535.161.08): the merged -q text alone
    "lo-h100x8": Box(
        {"gpu_model": "H100", "gpu_count": 8, "vram": "80GB", "min_driver": "535"},
        {"nvidia-smi -q": "real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"},
    ),
    # one H200 VM, ten outputs: every nvidia-smi format merged, and the host's CPU, RAM and disks
    "lo-h200vm": Box(
        {
            "gpu_model": "H200",
            "gpu_count": 1,
            "vram": "141GB",
            "cpu_cores": 8,
            "ram": "64GB",
            "min_driver": "570",
        },
        {
            "nvidia-smi -q -x": "real/nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml",
            "nvidia-smi -q": "real/nvidia-smi-q__h200__1gpu__driver580.159.04.txt",
            "nvidia-smi": "real/nvidia-smi__h200__1gpu__driver580.159.04.txt",
            f"nvidia-smi {CSV}": "real/nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv",
            "nvidia-smi topo -m": "real/nvidia-smi-topo-m__h200__1gpu__driver580.159.04.txt",
            "lscpu": "real/lscpu__intel-xeon-16vcpu__h200-vm.txt",
            "free": "real/free-k__h200-vm__procps-4.0.2.txt",
            "nproc": "real/nproc__h200-vm.txt",
            "lsblk": "real/lsblk-J-b__h200-vm.json",
            "df": "real/df-P-B1__h200-vm.txt",
        },
    ),
    # one H100 in MIG mode (driver 590.48.01): table, -q, -L with its MIG devices, nvlink refused
    "lo-h100mig": Box(
        {"gpu_model": "H100", "gpu_count": 1, "vram": "80GB"},
        {
            "nvidia-smi": "real/nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
            "nvidia-smi -q": "real/nvidia-smi-q__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
            "nvidia-smi -L": "real/nvidia-smi-L__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01.txt",
            "nvidia-smi nvlink -s": "real/nvidia-smi-nvlink-s__h100-mig__not-supported__driver590.48.01.txt",
        },
    ),
    # a container (AutoDL): an overlay `/`, and `free` showing the host's 1.0 TiB
    "lo-autodl": Box(
        {"ram": "64GB", "data_disk": {"mount": "/root/autodl-tmp", "min_size": "50GB"}},
        {
            "df": "public/df-h__autodl-rtx4090-container__overlay-root.txt",
            "free": "public/free-h__autodl-rtx4090-container__host-1.0ti.txt",
        },
    ),
    # nvidia-smi failed (NVML driver/library mismatch: exit 18, anderskm/gputil#55), a grep'd dmesg
    "lo-nvml": Box(
        {"gpu_model": "A100", "gpu_count": 1},
        session="sessions/transcript__nvidia-smi-NVMLmismatch+dmesg-NVRM__h01.txt",
        fails=18,
        unsaid=("gpu_xid", "nvswitch_sxid"),
    ),
    # every nvidia-smi call answers whole and exits 14 with its warning, nvidia-smi(1)'s "14 -
    # infoROM is corrupted" (NVIDIA/gpu-operator#285: the table and `echo $?` 14): `topo -m` and
    # `nvlink -s` were not read live (the NVLink pair unverified, where offline it passed)
    "lo-inforom14": Box(
        {"gpu_model": "H100 PCIe", "gpu_count": 2, "vram": "80GB", "interconnect": "nvlink"},
        {
            "nvidia-smi": "real/nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt",
            "nvidia-smi topo -m": "real/nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt",
            "nvidia-smi nvlink -s": (
                "real/nvidia-smi-nvlink-s__h100-pcie__2gpu-12of18-links__driver555.42.02.txt"
            ),
        },
        warns=INFOROM_WARNING,
    ),
    # a GPU the kernel could not recover from a PCIe error (AER), no NVRM line in the log
    "lo-aer": Box(
        {"gpu_count": 1}, {"dmesg": "real/dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"}
    ),
    # the host's own hardware errors: an uncorrectable DIMM error (EDAC UE), an APEI record of an
    # NVMe's PCIe error, machine checks logged (the live probe's filter kept none of them: no
    # host_hw_errors row live, where the saved log fails)
    "lo-host-errors": Box(
        {"gpu_count": 1}, {"dmesg": "real/dmesg__edac-ue-apei-pcie-recoverable__lwa-issues-117.txt"}
    ),
}


def _session_files(session: Path, into: Path) -> dict[str, Path]:
    """A saved session's outputs that the live probe's commands print, by command, as files."""
    out: dict[str, Path] = {}
    for part in sections(session.read_text()) or []:
        words = part.tool_command.split()
        if part.empty or not words or words[0] not in COMMANDS or "|" in words:
            continue  # (`dmesg | grep NVRM` is not what the box's dmesg prints)
        path = into / f"{len(out)}-{words[0]}.txt"
        path.write_text(part.text)
        out[" ".join(words)] = path
    return out


def _toolbox(h: TestHost, box: Box) -> None:
    """The host's commands: each prints its capture (a copy on the host), the others `not found`."""
    from gpuonboard.facts import nvidia_smi

    copies = h.dir / "captures"
    shutil.rmtree(copies, ignore_errors=True)
    copies.mkdir()
    files = {k: FIXTURES / v for k, v in box.files.items()}
    if box.session:
        files.update(_session_files(FIXTURES / box.session, copies))
    rules: dict[str, list[ReplayRule]] = {}
    for key, path in files.items():
        tool, _, args = key.partition(" ")
        if args == CSV:
            args = f"--query-gpu={','.join(nvidia_smi.QUERY_FIELDS)} --format=csv,nounits"
        copy = copies / path.name
        if path != copy:
            shutil.copyfile(path, copy)
        rules.setdefault(tool, []).append(
            ReplayRule("*" if tool != "nvidia-smi" else args, PurePosixPath(copy.name))
        )
    for tool in COMMANDS:
        if box.fails is not None and tool == "nvidia-smi":
            (only,) = rules[tool]
            text = f"#!/bin/sh\ncat {shlex.quote(str(copies / only.file))}\nexit {box.fails}\n"
        elif box.warns and tool == "nvidia-smi":
            cases = "".join(
                f"  {shlex.quote(r.args)}) cat {shlex.quote(str(copies / r.file))};"
                f" echo {shlex.quote(box.warns)} >&2; exit 14 ;;\n"
                for r in rules[tool]
            )
            text = f'#!/bin/sh\ncase "$*" in\n{cases}  *) echo "no capture: $*" >&2; exit 2 ;;\nesac\n'
        elif tool in rules:
            text = render_script(tool, rules[tool], copies)
        else:
            text = f"#!/bin/sh\necho 'sh: 1: {tool}: not found' >&2\nexit 127\n"
        add_executable(h.bin_dir, tool, text)


def _offline(project: Project, name: str, box: Box) -> dict[str, dict[str, str]]:
    folder = project.root / "saved" / name
    folder.mkdir(parents=True)
    for rel in [*box.files.values(), *([box.session] if box.session else [])]:
        shutil.copyfile(FIXTURES / rel, folder / Path(rel).name)
    order = project.root / f"{name}-order.yml"
    order.write_text(yaml.safe_dump(box.order))
    r = project.cli("facts", str(folder), "--order", str(order), "--json")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return {c["name"]: c for c in json.loads(r.stdout)["rules"]}


@pytest.fixture(scope="module")
def hosts(pool: TestHostPool) -> dict[str, TestHost]:
    missing = [n for n in BOXES if n not in pool.hosts]
    if missing:
        pool.add_many([(n, None) for n in missing])
    return {n: pool.hosts[n] for n in BOXES}


@pytest.mark.parametrize("name", list(BOXES))
def test_live_and_offline_judge_one_box_alike(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost], name: str
) -> None:
    box, h = BOXES[name], hosts[name]
    _toolbox(h, box)
    project.write_inventory({name: host_entry(h, pool, order=box.order)})
    r = project.cli("check", "--host", name)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    live = project.rules(name)
    offline = _offline(project, name, box)
    judged = {n: c for n, c in offline.items() if not c["actual"].startswith("not judged")}
    assert judged, offline
    for rule, off in judged.items():
        on = live[rule]
        said = (on["verdict"], on["actual"].replace(BOOT_NOTE, ""))
        if rule in EXPLAINED and EXPLAINED[rule] in off["actual"]:
            assert off["verdict"] == "unverified", off  # never a pass on the fact it cannot read
            continue
        if box.warns and rule == "sensor_faults":  # (the warning is on nvidia-smi's stderr, live only)
            assert said[0] == "warn" and "infoROM reads corrupted" in said[1], (rule, on, off)
            continue
        if rule in box.unsaid:
            assert said[0] == off["verdict"] == "unverified", (rule, on, off)
            continue
        if rule == "fabric_manager":  # the service state is this machine's systemctl's
            assert said[0] == off["verdict"], (rule, on, off)
            continue
        assert said == (off["verdict"], off["actual"].replace(BOOT_NOTE, "")), (rule, on, off)
