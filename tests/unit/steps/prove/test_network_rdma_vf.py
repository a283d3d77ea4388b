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
from gpuonboard.steps.prove.network import rdma_check

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
