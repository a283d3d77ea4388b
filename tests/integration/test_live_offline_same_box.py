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
import re
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
# a capture's first line that is the shell's prompt and the command typed (`$ nvidia-smi`,
# `/# nvidia-smi`, `user@host:~$ nvidia-smi -a`)
PROMPT = re.compile(r"^\S*[$#] (\S+)")
BOOT_NOTE = " (the log read starts after boot, so it does not cover the whole boot)"
# rules whose live verdict reads a fact only the live probe has, and the words that say so offline
# the test machine's own cgroup CPU set, which the live cpu_cores rule reads beside lscpu
CGROUP_CPUS = re.compile(r", \d+ usable \(cgroup CPU set\)")
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
    its stderr beside each whole answer, then exits 14 (a corrupted infoROM); `edited`: rules
    judged offline from a mark of the capture's editing that no box's command prints (lines
    elided by hand, `...`; a kernel log holding only the lines a grep picked): unverified offline,
    where live reads the replay as the box's whole output."""

    order: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    session: str | None = None
    fails: int | None = None
    unsaid: tuple[str, ...] = ()
    warns: str = ""
    edited: tuple[str, ...] = ()


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
    # a laptop's inventory, each output saved with its `$ cmd` line: an RTX 3050 (595.84), a
    # hybrid CPU (12 threads), comma decimals in free, df and lsblk (pt_BR), `/` 95% full
    "lo-acer": Box(
        {"gpu_model": "RTX 3050", "gpu_count": 1, "vram": "6GB", "cpu_cores": 8, "ram": "24GB"},
        {
            "nvidia-smi": (
                "real/nvidia-smi__rtx3050-laptop__1gpu__driver595.84__prompt__acer-nitro-inventario-pt.txt"
            ),
            "lscpu": "real/lscpu__intel-hybrid-12-threads__prompt__acer-nitro-inventario-pt.txt",
            "free": "real/free-h__23gi-comma-decimals__prompt__acer-nitro-inventario-pt.txt",
            "df": "real/df-h__nvme-root-95pct-comma-decimals__prompt__acer-nitro-inventario-pt.txt",
            "lsblk": "real/lsblk__nvme-476.9g-comma-decimals__prompt__acer-nitro-inventario-pt.txt",
            "nproc": "real/nproc__12__prompt__acer-nitro-inventario-pt.txt",
        },
    ),
    # a VirtualBox VM (2 vCPUs, KVM paravirtualization, 8.4 GiB): lscpu, free -h, df -h
    "lo-vbox": Box(
        {"cpu_cores": 2, "ram": "8GB", "data_disk": {"mount": "/mnt/data", "min_size": "20GB"}},
        {
            "lscpu": "real/lscpu__virtualbox-vm-2vcpu-kvm__lab-report.txt",
            "free": "real/free-h__virtualbox-vm-8.4gi__lab-report.txt",
            "df": "real/df-h__virtualbox-vm-sda2-25g__lab-report.txt",
        },
    ),
    # a KVM VM (8 vCPUs): lscpu, and free in KiB
    "lo-kvm8": Box(
        {"cpu_cores": 8, "ram": "24GB"},
        {
            "lscpu": "real/lscpu__kvm-vm-8vcpu__ldss-stats.txt",
            "free": "real/free__kvm-vm-24682208-kib__ldss-stats.txt",
        },
    ),
    # a 251 GiB box's free -h and df -h
    "lo-kvarn": Box(
        {"ram": "256GB", "data_disk": {"mount": "/data", "min_size": "500GB"}},
        {"free": "real/free-h__251gi__kvarn-repro.txt", "df": "real/df-h__sdb2-878g-root__kvarn-repro.txt"},
    ),
    # 8 x H800 (555.42.06) and a kernel log of Xid 13 and 43 (lines elided with `...`)
    "lo-h800xid": Box(
        {"gpu_model": "H800", "gpu_count": 8, "vram": "80GB", "min_driver": "550"},
        {
            "nvidia-smi": "real/nvidia-smi__h800__8gpu__driver555.42.06__vrwkv.txt",
            "dmesg": "real/dmesg__xid-13-43-elided__h800__vrwkv.txt",
        },
        edited=("gpu_xid", "nvswitch_sxid"),
    ),
    # a pod's RTX 6000 Ada table (its `/# nvidia-smi` line) and one NVRM NV_ERR_STATE_IN_USE line
    "lo-ada-inuse": Box(
        {"gpu_model": "RTX 6000 Ada", "gpu_count": 1, "vram": "48GB"},
        {
            "nvidia-smi": "real/nvidia-smi__rtx6000ada__1gpu__driver590.48.01__pod-prompt__dcgm-283.txt",
            "dmesg": "real/dmesg-T__nv-err-state-in-use-no-xid__rtx6000ada__dcgm-283.txt",
        },
        edited=("nvswitch_sxid",),
    ),
    # 8 x RTX A4000, GPU3 lost: nvidia-smi prints only its device-handle failure (the exit code
    # not posted: 255, nvidia-smi(1)'s "other error"), the kernel log its Xid 79 and 154
    "lo-a4000-lost": Box(
        {"gpu_model": "RTX A4000", "gpu_count": 8},
        {
            "nvidia-smi": (
                "real/nvidia-smi__unable-device-handle-gpu3-unknown-error__8x-rtx-a4000__ru-blog.txt"
            ),
            "dmesg": "real/dmesg-T__xid-79-154-gpu3__8x-rtx-a4000__ru-blog.txt",
        },
        fails=255,
        edited=("nvswitch_sxid",),
    ),
    # a DGX Station (4 x V100, 525): nvidia-smi prints only GPU 08:00.0's device-handle failure
    "lo-dgxs-lost": Box(
        {"gpu_model": "V100 32GB", "gpu_count": 4, "vram": "32GB", "min_driver": "525"},
        {
            "nvidia-smi": (
                "real/nvidia-smi__unable-device-handle-gpu08-unknown-error"
                "__dgx-station-4x-v100__driver525.txt"
            )
        },
        fails=255,
    ),
    # an A10 (550.127.05): table and -q (gpud's mock of a real box)
    "lo-a10": Box(
        {"gpu_model": "A10", "gpu_count": 1, "vram": "24GB", "min_driver": "550"},
        {
            "nvidia-smi": "real/nvidia-smi__a10__1gpu__driver550.127.05__gpud-mock.txt",
            "nvidia-smi -q": "real/nvidia-smi-q__a10__1gpu__driver550.127.05__gpud-mock.txt",
        },
    ),
    # a GCE a2-highgpu-1g: table, -L, and df -h less its snap/tmpfs rows
    "lo-gce-a100": Box(
        {
            "gpu_model": "A100 40GB SXM",
            "gpu_count": 1,
            "data_disk": {"mount": "/data", "min_size": "1TB"},
        },
        {
            "nvidia-smi": "real/nvidia-smi__a100-sxm4-40gb__1gpu__driver580.126.09__gce-scotty-audit.txt",
            "nvidia-smi -L": "real/nvidia-smi-L__a100-sxm4-40gb__1gpu__gce-scotty-audit.txt",
            "df": "real/df-h-grep-v__gce-root-193g__gce-scotty-audit.txt",
        },
    ),
    # a Slurm job's one H100 of an 8-GPU node (545.23.08): table, -a (= -q), the node's lscpu
    "lo-della": Box(
        {
            "gpu_model": "H100 80GB HBM3",
            "gpu_count": 1,
            "vram": "80GB",
            "min_driver": "545",
            "cpu_cores": 96,
        },
        {
            "nvidia-smi": (
                "real/nvidia-smi__h100-80gb-hbm3__1gpu-of-8__driver545.23.08__prompt__princeton-della.txt"
            ),
            "nvidia-smi -q": (
                "real/nvidia-smi-a__h100-80gb-hbm3__1gpu-of-8__driver545.23.08__prompt__princeton-della.txt"
            ),
            "lscpu": "real/lscpu__2s-96-cores__princeton-della-pli.txt",
        },
    ),
    # 8 x H100 listed by -L alone
    "lo-ccr-L": Box(
        {"gpu_model": "H100 80GB HBM3", "gpu_count": 8},
        {"nvidia-smi -L": "real/nvidia-smi-L__h100-80gb-hbm3__8gpu__ccr-buffalo.txt"},
    ),
    # a vGPU VM (L40S-2Q, 580.105.08): -q -x, trimmed by the repository that saved it
    "lo-vgpu-qx": Box(
        {"gpu_model": "L40S-2Q", "gpu_count": 1, "vram": "2GB", "min_driver": "580"},
        {"nvidia-smi -q -x": "real/nvidia-smi-q-x__l40s-2q-vgpu__1gpu__driver580.105.08__trimmed.xml"},
    ),
    # a root port's fatal AER (device recovery failed) above the GPU, whose driver could not
    # recover it, in the journal (no dmesg on the host: the probe's journalctl -k)
    "lo-rootport-aer": Box(
        {"gpu_count": 1},
        {
            "journalctl": (
                "real/journalctl__root-port-aer-fatal-device-recovery-failed__xeon-e5v4-pc__zh-notes.txt"
            )
        },
    ),
    # 8 x A800 SXM4 all NV8 (topo -m alone, 8 bonded NICs)
    "lo-a800-topo": Box(
        {"gpu_count": 8, "interconnect": "nvlink"},
        {"nvidia-smi topo -m": "real/nvidia-smi-topo-m__a800-sxm4__8gpu-nv8-8nic-bond__zh-env-report.txt"},
    ),
    # 2 x RTX 4090, GPU 3b:00.0 lost: -L prints its device-handle failure and lists the other
    # (after the login's CUDA_VISIBLE_DEVICES line; exit code not posted: 255)
    "lo-4090-L-lost": Box(
        {"gpu_model": "RTX 4090", "gpu_count": 2, "vram": "24GB"},
        {
            "nvidia-smi -L": (
                "real/nvidia-smi-L__geforce-rtx-4090__2gpu-gpu0-no-device-handle"
                "__env-line__incident-notes.txt"
            )
        },
        fails=255,
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
        if path != copy:  # (the box prints its output, not the `$ cmd` line a capture starts with)
            text = path.read_text()
            typed = PROMPT.match(text)
            copy.write_text(text.partition("\n")[2] if typed and typed[1] == tool else text)
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
    differ = _differences(box, live, judged)
    assert not differ, "\n".join(map(str, differ))


def _agree(box: Box, rule: str, on: dict[str, str], off: dict[str, str]) -> bool:
    """Whether the live row `on` says what the offline row `off` says, but for what one side
    alone can read."""
    said = (on["verdict"], on["actual"].replace(BOOT_NOTE, ""))
    if rule in EXPLAINED and EXPLAINED[rule] in off["actual"]:
        return off["verdict"] == "unverified"  # never a pass on the fact it cannot read
    if box.warns and rule == "sensor_faults":  # (the warning is on nvidia-smi's stderr, live only)
        return said[0] == "warn" and "infoROM reads corrupted" in said[1]
    if rule == "cpu_cores" and CGROUP_CPUS.search(said[1]):  # (this machine's, live only)
        return CGROUP_CPUS.sub("", said[1]) == off["actual"]
    if rule in box.edited:
        return off["verdict"] == "unverified"
    if rule in box.unsaid:
        return said[0] == off["verdict"] == "unverified"
    if rule == "fabric_manager":  # the service state is this machine's systemctl's
        return said[0] == off["verdict"]
    return said == (off["verdict"], off["actual"].replace(BOOT_NOTE, ""))


def _differences(
    box: Box, live: dict[str, dict[str, str]], judged: dict[str, dict[str, str]]
) -> list[tuple[str, str, str, str, str]]:
    """(rule, live verdict, live actual, offline verdict, offline actual) of each rule judged
    differently."""
    none = {"verdict": "no row", "actual": ""}
    return [
        (rule, on["verdict"], on["actual"], off["verdict"], off["actual"])
        for rule, off in judged.items()
        if not _agree(box, rule, on := live.get(rule, none), off)
    ]
