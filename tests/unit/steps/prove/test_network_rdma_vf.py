"""prove/network's `rdma_devices` counted every port ibv_devinfo lists, the SR-IOV virtual
functions of a listed physical function too, which the acceptance rule `rdma_ports` leaves out
(shares of the physical link: an unassigned VF is DOWN). On an OpenShift SR-IOV node (2 PFs, 8
VFs, 1 of them assigned and ACTIVE) it said "3 active" and warned "7 port(s) not active" of a
box whose two links are up. Both read the ports alike now (infiniband.shared_ports): the VFs are
named apart, not counted.

Real captures (tests/fixtures/real, SOURCES.md), read by the same parser as the acceptance rule."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts import infiniband
from gpuonboard.steps.base import Check
from gpuonboard.steps.prove.network import rdma_check
from gpuonboard.steps.prove.rules import _summary

REAL = Path(__file__).parents[3] / "fixtures" / "real"
SRIOV_NODE = REAL / "ibstat__connectx6-hdr200__2pf_plus_8vf-1active__openshift-sriov-node.txt"
PF_VF_HOST = REAL / "ibstat__connectx6-hdr100__pf_plus_sriov-vf-both-active__bare-metal-host.txt"
VF_VM = REAL / "ibstat__connectx6-vf-mt4124__1port-active-hdr100__openstack-vm.txt"


def _check(path: Path):  # noqa: ANN202 - a Check
    return rdma_check(infiniband.parse_rdma(path.read_text()))


def test_unassigned_vfs_of_a_listed_pf_are_no_ports_down() -> None:
    check = _check(SRIOV_NODE)
    assert check.verdict == "pass", check
    assert check.actual.startswith(
        "2 active: mlx5_0 port 1 Ethernet 200 Gb/s; mlx5_1 port 1 InfiniBand 200 Gb/s;"
    )
    assert "down:" not in check.actual
    assert "not counted: 8 SR-IOV virtual function port(s)" in check.actual


def test_an_active_vf_beside_its_pf_is_one_link() -> None:
    check = _check(PF_VF_HOST)
    assert check.verdict == "pass" and check.actual.startswith("1 active: mlx5_0 port 1 InfiniBand 100 Gb/s;")
    assert "not counted: 1 SR-IOV virtual function port(s)" in check.actual


def test_a_vms_own_vf_is_its_port() -> None:
    """A VF whose physical function is not listed (a VM's) is the port it was given."""
    check = _check(VF_VM)
    assert (
        check.verdict == "pass" and check.actual.startswith("1 active:") and "not counted" not in check.actual
    )


THREE_HCA = REAL / "ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt"


def test_a_listing_cut_before_its_first_port_is_no_missing_rdma_stack() -> None:
    """The real `ibv_devinfo -v` of 3 HCAs cut in-test after its first 104 lines: mlx5_0's device
    block whole, the output ends before its `port:` line (an SSH channel or pipe that closed
    early). No port was read, and rdma_devices failed "ibv_devinfo: no devices ... no RDMA stack:
    install rdma-core" on a box whose ibv_devinfo ran and listed a device: a cut output is an
    incomplete probe (unverified), never a claim that the RDMA stack or ports are missing."""
    lines = THREE_HCA.read_text().splitlines(keepends=True)
    first_port = next(i for i, line in enumerate(lines) if line.strip().startswith("port:"))
    assert first_port == 104 and lines[0].startswith("hca_id:\tmlx5_0")
    report = infiniband.parse_ibv_devinfo("".join(lines[:first_port]))
    assert report.ports == () and not report.complete
    check = rdma_check(report, "ibv_devinfo: no devices")
    assert check.verdict == "unverified", check
    assert check.actual == "no active port read; incomplete probe: mlx5_0 has no port block"
    assert "no RDMA stack" not in check.detail
    # a whole listing that names no device still fails (the tool's own "No IB devices found")
    none = infiniband.parse_ibv_devinfo((REAL / "ibv_devinfo__no-ib-devices.txt").read_text())
    assert none.complete and rdma_check(none, "ibv_devinfo: No IB devices found").verdict == "fail"


def test_the_steps_sentence_names_a_check_not_judged() -> None:
    """The same cut listing beside a passing check: the step's one sentence said "network: all 2
    checks passed" over an `unverified` rdma_devices (the sentence every prove step builds with
    rules._summary); it names the check not judged now, as gpu_perf's did."""
    lines = THREE_HCA.read_text().splitlines(keepends=True)
    cut = rdma_check(infiniband.parse_ibv_devinfo("".join(lines[:104])))
    rtt = Check("ssh_rtt", "<= 250 ms", "12 ms", "pass")
    msg, failed = _summary("network", [rtt, cut])
    assert not failed
    assert msg == "network: 1 check(s) not judged: rdma_devices; the other 1 passed"
    warn = Check("upload_throughput", "x", "y", "warn")
    assert _summary("network", [rtt, warn, cut])[0] == (
        "network: passed with 1 warning(s): upload_throughput; 1 check(s) not judged: rdma_devices"
    )
    assert _summary("network", [rtt])[0] == "network: all 1 checks passed"
