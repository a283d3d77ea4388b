"""SR-IOV virtual functions beside their physical function are not more RDMA ports.

On the host, each VF bound to the driver is an RDMA device of its own, its port ACTIVE at its
parent's rate: a real bare-metal ibstat (satishdotpatel.github.io, an HDR100 ConnectX-6 with
SR-IOV) lists the PF mlx5_0 and its VF mlx5_1 both `Active`, `Rate: 100`, so a `2x100G` order
passed on one physical port; a real OpenShift SR-IOV node (Red Hat's hardware accelerators
guide) lists two PFs and eight VFs of one adapter, three ACTIVE at 200. Inside a VM the VF it
was given is its port and still counts.
"""

import subprocess
from pathlib import Path

import pytest

from gpuonboard.facts.extra_probes import RDMA_PORTS
from gpuonboard.facts.infiniband import parse_ib_sysfs, parse_rdma, shared_ports
from gpuonboard.steps.checks.fabric_health import rule_rdma

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
HOST = "ibstat__connectx6-hdr100__pf_plus_sriov-vf-both-active__bare-metal-host.txt"
NODE = "ibstat__connectx6-hdr200__2pf_plus_8vf-1active__openshift-sriov-node.txt"
VM = "ibstat__connectx6-vf-mt4124__1port-active-hdr100__openstack-vm.txt"


def read(name: str) -> str:
    return (REAL / name).read_text()


@pytest.mark.parametrize(
    ("name", "order", "verdict"),
    [
        (HOST, "2x100G", "fail"),  # one physical port: the VF is a share of it
        (HOST, "1x100G", "pass"),
        (NODE, "3x200G", "fail"),  # two physical ports (RoCE + IB); the ACTIVE VF shares the first
        (NODE, "2x200G", "pass"),
        (VM, "1x100G", "pass"),  # a VM's VF, its PF not listed: the port it was given
    ],
)
def test_vf_ports_beside_their_pf_are_not_counted(
    tmp_path: Path, name: str, order: str, verdict: str
) -> None:
    got, actual = verdicts(tmp_path, name, read(name), f'gpu_model: any\nrdma: "{order}"\n')["rdma_ports"]
    assert got == verdict, actual
    if name != VM:
        assert "SR-IOV virtual function" in actual and "mlx5_" in actual


def test_the_node_names_only_its_physical_ports_down_or_up() -> None:
    report = parse_rdma(read(NODE))
    assert [p.device for p in shared_ports(report.ports)] == [f"mlx5_{n}" for n in range(2, 10)]
    check = rule_rdma((3, 200.0), report.ports, report.complete, report.cut)
    assert check is not None and check.verdict == "fail"
    assert check.actual.startswith("2 of 2 port(s) ACTIVE at >= 200 Gb/s")
    assert "down:" not in check.actual  # (the eight VFs are not the node's ports down)
    assert "share its link" in check.detail


def _tree(root: Path, vf_link: bool) -> None:
    """A /sys/class/infiniband of the host capture: PF mlx5_0 and VF mlx5_1 (the capture's
    values), the VF's PCI function with a `physfn` link when it is the host's own."""
    pci = root.parent / "pci"
    for dev, fn in (("mlx5_0", "0000:af:00.0"), ("mlx5_1", "0000:af:00.1")):
        port = root / dev / "ports" / "1"
        port.mkdir(parents=True)
        for name, value in (
            ("state", "4: ACTIVE"),
            ("phys_state", "5: LinkUp"),
            ("rate", "100 Gb/sec (2X HDR)"),
            ("link_layer", "InfiniBand"),
        ):
            (port / name).write_text(value + "\n")
        (root / dev / "sys_image_guid").write_text("043f:7203:00cf:ef92\n")
        (pci / fn).mkdir(parents=True)
        (root / dev / "device").symlink_to(pci / fn)
    if vf_link:
        (pci / "0000:af:00.1" / "physfn").symlink_to(pci / "0000:af:00.0")


@pytest.mark.parametrize("vf_link", [True, False])
def test_the_live_probe_reads_physfn_and_the_adapter(tmp_path: Path, vf_link: bool) -> None:
    root = tmp_path / "sys" / "class" / "infiniband"
    _tree(root, vf_link)
    command = RDMA_PORTS.command.replace("/sys/class/infiniband", str(root))
    out = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    report = parse_ib_sysfs(out.stdout)
    assert report.complete and report.warnings == ()
    assert [(p.device, p.adapter, p.vf) for p in report.ports] == [
        ("mlx5_0", "043f720300cfef92", False),
        ("mlx5_1", "043f720300cfef92", vf_link),
    ]
    check = rule_rdma((2, 100.0), report.ports, report.complete, report.cut)
    assert check is not None and check.verdict == ("fail" if vf_link else "pass")
    # the probe's own output saved as a file (raw/<host>/rdma_ports.txt copied) is judged the same
    saved = verdicts(tmp_path, "ports.txt", out.stdout, 'gpu_model: any\nrdma: "2x100G"\n')["rdma_ports"]
    assert saved[0] == check.verdict, saved


def test_a_new_sysfs_line_cut_before_its_link_layer_is_cut() -> None:
    whole = "mlx5_0\t1\t4: ACTIVE\t5: LinkUp\t100 Gb/sec (2X HDR)\t043f:7203:00cf:ef92\tpf\tInfiniBand\n"
    assert parse_ib_sysfs(whole).complete
    for end in (whole.rindex("\t"), whole.rindex("\tpf")):
        cut = parse_ib_sysfs(whole[:end])
        assert not cut.complete and cut.cut, whole[:end]


SYSFS = REAL / "ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt"


def _sysfs_tree(root: Path, lines: list[str], unread: str, how: str) -> None:
    """/sys/class/infiniband as the real listing's lines say, the `unread` device's port state
    file as `how` leaves it: `empty` (a masked file), `missing` (ENOENT)."""
    for line in lines:
        dev, port, state, phys, rate, layer = line.split("\t")
        d = root / dev / "ports" / port
        d.mkdir(parents=True)
        for name, value in (("state", state), ("phys_state", phys), ("rate", rate), ("link_layer", layer)):
            if dev == unread and name == "state":
                if how == "empty":
                    (d / name).write_text("")
                continue
            (d / name).write_text(value + "\n")


@pytest.mark.parametrize("how", ["empty", "missing"])
@pytest.mark.parametrize("unread", ["mlx5_0", "mlx5_9"])
def test_a_port_whose_state_the_probe_could_not_read_is_not_down(
    tmp_path: Path, how: str, unread: str
) -> None:
    """The live probe over a sysfs like the real 8 x NDR400 node's, one port's state file masked:
    rdma_ports failed "down: mlx5_9/1" (a blank state read as a port down); now unverified, naming
    the port whose state was not read. Control: the whole tree passes."""
    lines = SYSFS.read_text().splitlines()
    order = (8, 400.0)
    for name, expect in ((unread, "unverified"), ("", "pass")):
        root = tmp_path / (name or "whole") / "infiniband"
        _sysfs_tree(root, lines, name, how)
        command = RDMA_PORTS.command.replace("/sys/class/infiniband", str(root))
        out = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30)
        report = parse_rdma(out.stdout)
        check = rule_rdma(order, report.ports, report.complete, report.cut)
        assert check is not None and check.verdict == expect, check
        if name:
            assert check.actual.endswith(f"state not readable: {unread}/1"), check
            assert "down" not in check.actual, check


def test_a_box_with_no_sysfs_to_read_has_its_ports_unread(tmp_path: Path) -> None:
    """sysfs not mounted or masked (no /sys/class/net, which holds `lo` wherever sysfs is): the
    probe printed nothing at exit 0 and rdma_ports failed "no RDMA device found", a fail from
    absence; it now exits non-zero and the rule is unverified. Control: a sysfs with no
    infiniband class is a whole listing with no port."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.inventory.model import OrderSpec
    from gpuonboard.steps.checks.rdma_ports import rdma_check

    order = OrderSpec(rdma=(8, 400.0))
    for with_net, expect in ((False, "unverified"), (True, "fail")):
        sysfs = tmp_path / str(with_net) / "class"
        (sysfs / "net" / "lo").mkdir(parents=True) if with_net else sysfs.mkdir(parents=True)
        command = RDMA_PORTS.command.replace("/sys/class", str(sysfs))
        out = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30)
        facts = parse_facts({"rdma_ports": ProbeOutput(out.stdout, out.stderr, out.returncode)})
        check = rdma_check(facts, order)
        assert check is not None and check.verdict == expect, check
