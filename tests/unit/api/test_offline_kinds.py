"""`gpuonboard facts` recognises the fabric outputs (real captures) and judges them."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.api.offline import FABRIC_KINDS, RAW_DIR_PROBES, detect_kind
from gpuonboard.api.shown import shown

REAL = Path(__file__).parents[2] / "fixtures" / "real"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt", "kernel_log"),
        ("dmesg-decode-iso__xid-13-43__plus-oom.txt", "kernel_log"),
        ("dmesg__xid-79-sxid-20034__nvswitch.txt", "kernel_log"),
        ("nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt", "nvidia_nvlink"),
        ("nvidia-smi-nvlink-s__l40s__no-nvlink__driver595.80.txt", "nvidia_nvlink"),
        ("nvidia-smi-nvlink-s__h100-mig__not-supported__driver590.48.01.txt", "nvidia_nvlink"),
        ("nvidia-smi-L__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01.txt", "nvidia_smi_list"),
        ("nvidia-smi-L__l40s__1gpu__driver595.80.txt", "nvidia_smi_list"),
        ("ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt", "rdma_ports"),
        ("ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt", "rdma_ports"),
        ("docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt", "docker_info"),
        ("iperf3-J__tcp-1stream-10s-omit3__iperf3.9.json", "iperf3"),
        ("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt", "nvidia_smi"),
        ("lscpu__intel-xeon-16vcpu__h200-vm.txt", "lscpu"),
    ],
)
def test_kinds(name: str, kind: str) -> None:
    assert detect_kind((REAL / name).read_text()) == kind


def test_fabric_kinds_are_read_from_a_run_folder() -> None:
    assert set(FABRIC_KINDS) <= RAW_DIR_PROBES


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_dmesg_with_xid_79_fails_offline() -> None:
    r = cli("--json", str(REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt"))
    assert r.returncode == 1, r.stderr
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["gpu_xid"]["verdict"] == "fail" and rules["nvswitch_sxid"]["verdict"] == "fail"


def test_nvlink_and_rdma_with_order(tmp_path: Path) -> None:
    order = tmp_path / "order.yml"
    order.write_text('order:\n  rdma: "8x400G"\n')
    r = cli(
        "--json",
        "--order",
        str(order),
        f"{REAL / 'nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt'},"
        f"{REAL / 'ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt'}",
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["nvlink_links"]["verdict"] == "pass" and rules["rdma_ports"]["verdict"] == "pass"


def test_docker_info_is_shown_not_judged() -> None:
    """It said "read and shown" and showed nothing (round 14): what it says is now said."""
    r = cli(str(REAL / "docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt"))
    assert r.returncode == 0, r.stderr
    assert (
        "docker info: docker 28.0.0-rc.1; runtimes io.containerd.runc.v2, nvidia, runc (default runc);"
        " NVIDIA runtime registered: read, not judged" in " ".join(r.stderr.split())
    )
    r = cli(str(REAL / "iperf3-J__tcp-1stream-10s-omit3__iperf3.9.json"))
    assert "iperf3 -J: 0.22 Gbit/s sent, 0.22 received: read, not judged" in " ".join(r.stderr.split())


def test_numactl_hardware_is_shown_not_judged_beside_the_outputs_judged(tmp_path: Path) -> None:
    """A folder of a box's outputs holding `numactl --hardware` (egandro/proxmox-cpu-affinity
    #58, its prompt line kept as the user pasted it) was refused whole, exit 2 ("not a
    recognised command output"), no rule judged: it is shown in a note, the others judged."""
    (tmp_path / "numactl.txt").write_text(
        "root@node3:~# LANG=C numactl --hardware\n"
        + (REAL / "numactl-H__2x-epyc-9375f__2node-1.5tb__proxmox-cpu-affinity-58.txt").read_text()
    )
    (tmp_path / "free.txt").write_text((REAL / "free__ubuntu-18.04-vm.txt").read_text())
    order = tmp_path.parent / f"{tmp_path.name}-order.yml"
    order.write_text("ram: 1GB\n")
    r = cli(str(tmp_path), "--order", str(order), "--json")
    assert r.returncode == 0, r.stderr
    assert (
        "numactl --hardware: 2 NUMA nodes, 64 CPUs, 1547299 MiB (1511.0 GiB) of memory: ram reads"
        in " ".join(r.stderr.split())
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["ram"]["verdict"] == "pass"


def test_ibdev2netdev_is_shown_not_judged_beside_the_ports_judged(tmp_path: Path) -> None:
    """A folder holding `ibdev2netdev | column -t` (imbue-ai/cluster-health #4, with the user's
    `# CX-7 1/8 infiniband` notes, its command line put back as pasted) beside the box's ibstat
    was refused whole, exit 2, `rdma_ports` not judged: it is shown, its `(Up)`/`(Down)` said to be
    the net devices' (an IB port may be ACTIVE with its IPoIB interface down), the ibstat judged."""
    (tmp_path / "ibdev2netdev.txt").write_text(
        "$ ibdev2netdev | column -t\n"
        + (
            REAL / "ibdev2netdev__8x-cx7-ib_plus_2x-cx6-eth__column-t-with-notes__imbue-cluster-health-4.txt"
        ).read_text()
    )
    ibstat = "ibstat__connectx6-vf-mt4124__1port-active-hdr100__openstack-vm.txt"
    (tmp_path / "ibstat.txt").write_text((REAL / ibstat).read_text())
    order = tmp_path.parent / f"{tmp_path.name}-order.yml"
    order.write_text("rdma: 1x100G\n")
    r = cli(str(tmp_path), "--order", str(order), "--json")
    assert r.returncode == 0, r.stderr
    assert (
        "ibdev2netdev: 12 RDMA ports, 2 of them with their net device up (the net device's state, not"
        " the port's): read, not judged" in " ".join(r.stderr.split())
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["rdma_ports"]["verdict"] == "pass"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "ibdev2netdev-v__cx4-ib-sriov-vfs__active-port-netdev-down__search-23205468075.txt",
            "6 RDMA ports, 2 of 6 ACTIVE by `-v` (the port's own state; no rate or link layer), 1 of them"
            " with their net device up",
        ),
        (
            "ibdev2netdev-v__cx4-lx_cx5_cx6-socket-direct__8-ports__search-41237316056.txt",
            "8 RDMA ports, 3 of 8 ACTIVE by `-v`",
        ),
        ("ibdev2netdev-v__mlx4-qdr-no-pci-address__search-49090933291.txt", "1 RDMA port, 1 of 1 ACTIVE"),
        ("ibdev2netdev-v__4x-cx6-vpi-hdr__all-active__search-25374003452.txt", "4 RDMA ports, 4 of 4 ACTIVE"),
    ],
)
def test_ibdev2netdev_v_is_shown_with_the_ports_own_state(tmp_path: Path, name: str, said: str) -> None:
    """`ibdev2netdev -v` (PCI address, board, description, firmware, the port's own state padded
    as `(DOWN  )`, then the net device's): refused, exit 2, "not a recognised command output",
    and the box's ibstat beside it with it; now shown as plain ibdev2netdev is, with the port
    states it adds (an ACTIVE port whose IPoIB device is Down, SR-IOV VFs DOWN), the ibstat
    judged."""
    (tmp_path / "ibdev2netdev-v.txt").write_text("# ibdev2netdev -v\n" + (REAL / name).read_text())
    ibstat = "ibstat__connectx6-vf-mt4124__1port-active-hdr100__openstack-vm.txt"
    (tmp_path / "ibstat.txt").write_text((REAL / ibstat).read_text())
    order = tmp_path.parent / f"{tmp_path.name}-order.yml"
    order.write_text("rdma: 1x100G\n")
    r = cli(str(tmp_path), "--order", str(order), "--json")
    assert r.returncode == 0, r.stderr
    assert f"ibdev2netdev: {said}" in " ".join(r.stderr.split())
    assert {c["name"]: c for c in json.loads(r.stdout)["rules"]}["rdma_ports"]["verdict"] == "pass"


def test_an_lscpu_pasted_without_its_architecture_line_is_judged() -> None:
    """archspec/archspec #159 (a GH200, `rchitecture:` as pasted): refused, exit 2, "not a
    recognised command output"; now read as the lscpu it is: 72 cores meet an order of 72."""
    name = "lscpu__gh200-grace-neoverse-v2__first-letter-lost__archspec-159.txt"
    r = cli(str(REAL / name), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["facts"]["cpu"]["physical_cores"] == 72


def test_numactl_cpu_compress_ranges_are_counted_as_their_cpus(tmp_path: Path) -> None:
    """`numactl --hardware --cpu-compress` (kvcache-ai/ktransformers #797, its command line put
    back as pasted) lists each node's CPUs as ranges with their count, `0-15 (16)`: the note said
    "4 CPUs" of a box of 32, counting the words; a range is all its CPUs."""
    name = "numactl-H-cpu-compress__2x-epyc-9135__2node-1.1tb__ktransformers-797.txt"
    (tmp_path / "numactl.txt").write_text("numactl --hardware --cpu-compress\n" + (REAL / name).read_text())
    r = cli(str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (
        "numactl --hardware: 2 NUMA nodes, 32 CPUs, 1160593 MiB (1133.4 GiB) of memory: ram reads"
        in " ".join(r.stderr.split())
    )


def test_a_numactl_cut_short_says_its_sums_are_a_floor(tmp_path: Path) -> None:
    """oneapi-src/unified-memory-framework#1289's `numactl -H` of a Sapphire Rapids HBM box (16
    nodes, 8 of them HBM without CPUs; its `$ numactl -H` line put back as pasted) as the stored
    excerpt shows it, cut inside node 10: the note said "564724 MiB (551.5 GiB) of memory" as
    the box's; it says the 11 nodes read are a floor of the 16, once at the end (and the HBM
    nodes' memory apart, measure31d 40)."""
    name = "numactl-H__spr-hbm-flat-16node__cut-at-node-10__umf-1289.txt"
    (tmp_path / "numactl.txt").write_text("$ numactl -H\n" + (REAL / name).read_text())
    r = cli(str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert (
        "numactl --hardware: 16 NUMA nodes, at least 192 CPUs, at least 515572 MiB (503.5 GiB) of memory"
        " on the nodes with CPUs, and at least 49152 MiB (48.0 GiB) on 3 CPU-less nodes (CPU-less nodes:"
        " device memory (GPU HBM, CXL) or DRAM whose CPUs are offline; ram leaves it out of its sum)"
        " (11 of 16 nodes read: the output is cut"
        " short): ram reads" in " ".join(r.stderr.split())
    )


NUMACTL_2NODE = "numactl-H__2x-epyc-9375f__2node-1.5tb__proxmox-cpu-affinity-58.txt"


def test_a_numactl_cut_inside_its_last_cpu_list_says_its_cpus_are_a_floor() -> None:
    """The 2-node EPYC 9375F `numactl -H` cut in the test inside `node 1 cpus:` (after `... 45
    46`): both nodes' CPU lines are there, so the 47 CPUs read were said as the box's; they are a
    floor, and so is the memory of the 1 node whose size was read."""
    text = (REAL / NUMACTL_2NODE).read_text()
    cut = text[: text.index(" 47 48", text.index("node 1 cpus:"))]
    assert shown("numactl", cut) == (
        "numactl --hardware: 2 NUMA nodes, at least 47 CPUs, at least 773271 MiB (755.1 GiB) of memory"
        " (1 of 2 nodes read: the output is cut short): ram reads these node sizes where no free or"
        " /proc/meminfo is given; cpu_cores reads lscpu (numactl lists CPU threads, not cores)."
    )
    assert shown("numactl", text).startswith("numactl --hardware: 2 NUMA nodes, 64 CPUs, 1547299 MiB")


def test_podman_info_is_shown_as_docker_info_is(tmp_path: Path) -> None:
    """coreos/fedora-coreos-config#615's `podman info` (its first 18 lines; edit: under the prompt
    line it was pasted with, put back) is shown, not judged, as `docker info` is (was: "not a
    recognised command output")."""
    capture = REAL / "podman-info__fcos-32-rootless__first-18-lines__fedora-coreos-config-615.txt"
    saved = tmp_path / "podman-info.txt"
    saved.write_text("[core@cosa-devsh ~]$ podman info \n" + capture.read_text())
    r = cli("--json", str(saved))
    assert r.returncode == 0, r.stderr
    assert "note: podman info: podman (version not read): read, not judged" in r.stderr


def test_a_docker_version_lists_no_runtime_so_says_none_is_missing() -> None:
    """nvidia-docker#1460's session holds a `docker version` (its Server section, no Runtimes
    line), read as a docker info: it was noted "no NVIDIA runtime", a claim from a line the
    output never has; it now says no runtime is listed, and (round 32) that it is a docker
    version, with its client's and engine's versions (it said "docker info: docker (version not
    read)")."""
    session = (
        REAL.parent
        / "sessions"
        / "transcript__uname+nvcc-version+docker-version-CUT__il048-conda-nvidia-docker-1460.txt"
    )
    said = " ".join(cli(str(session)).stderr.split())
    assert (
        "docker version: client 19.03.12, engine 19.03.12; it lists no runtime (no NVIDIA runtime read"
        " either way, `docker info` lists them)"
    ) in said
    assert "; no NVIDIA runtime:" not in said


def test_docker_info_grepped_for_its_runtimes_is_shown_beside_the_outputs_judged(tmp_path: Path) -> None:
    """A folder holding `docker info | grep -i runtime` (docker/for-linux#1531, docker's stderr
    warning above the two runtime lines) beside the box's `free` was refused whole, exit 2 ("not
    a recognised command output"), no rule judged: its runtime lines are read and shown (no
    NVIDIA runtime registered), never judged, the `free` judged."""
    (tmp_path / "docker-runtime.txt").write_text(
        (
            REAL / "docker-info-grep-i-runtime__no-nvidia-runtime__seccomp-warning__docker-for-linux-1531.txt"
        ).read_text()
    )
    (tmp_path / "free.txt").write_text((REAL / "free__ubuntu-18.04-vm.txt").read_text())
    order = tmp_path.parent / f"{tmp_path.name}-order.yml"
    order.write_text("ram: 1GB\n")
    r = cli(str(tmp_path), "--order", str(order), "--json")
    assert r.returncode == 0, r.stderr
    assert (
        "docker info: docker (version not read); runtimes io.containerd.runc.v2, runc (default runc);"
        " no NVIDIA runtime: read, not judged" in " ".join(r.stderr.split())
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["ram"]["verdict"] == "pass"


def test_a_docker_info_s_runtime_lines_alone_are_its_runtimes() -> None:
    """The real docker 28 `docker info` narrowed as `grep -i runtime` narrows it (its two runtime
    lines, one blank in) and the docker 18.06 one (at the margin): read as docker info, its
    runtimes and default runtime those of the whole output."""
    for name, said in [
        (
            "docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt",
            "runtimes io.containerd.runc.v2, nvidia, runc (default runc); NVIDIA runtime registered",
        ),
        (
            "docker-info__docker-18.06.1-ce__no-client-server-headers__kata-runtime-default__kata-tests-766.txt",
            "runtimes kata-runtime, runc (default kata-runtime); no NVIDIA runtime",
        ),
    ]:
        grepped = "".join(
            line for line in (REAL / name).read_text().splitlines(True) if "runtime" in line.lower()
        )
        assert detect_kind(grepped) == "docker_info", name
        assert said in shown("docker_info", grepped), name
