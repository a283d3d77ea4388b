"""The `rdma_ports` rule with the order's fabric (steps/checks/rdma_ports.py): an order naming
InfiniBand or RoCE (`8x400G InfiniBand`, `2x100G RoCE v2`) counts only ports of that link layer,
read from real listings of boxes with both: a port of the other fabric is real but not the one
ordered (named; too few = fail naming both), one whose link layer was not read is neither."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks, details, judged_box, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
# 8 x NDR 400 InfiniBand and one 200 Gb/s RoCE bond (sysfs listing)
SYSFS = "ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt"
# a ConnectX-6 InfiniBand port (200 Gb/s) and two ConnectX-5 RoCE ports (100 Gb/s)
DEVINFO = "ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt"
# a RoCE and an InfiniBand physical function (200 Gb/s each) and 8 SR-IOV VFs
NODE = "ibstat__connectx6-hdr200__2pf_plus_8vf-1active__openshift-sriov-node.txt"


def _rdma(tmp_path: Path, name: str, rdma: str, text: str | None = None) -> tuple[str, str]:
    text = (REAL / name).read_text() if text is None else text
    return verdicts(tmp_path, name, text, f'order:\n  rdma: "{rdma}"\n')["rdma_ports"]


@pytest.mark.parametrize(
    ("name", "rdma", "verdict"),
    [
        (SYSFS, "8x400G InfiniBand", "pass"),
        (SYSFS, "8x ConnectX-7 400Gb/s NDR", "pass"),
        (SYSFS, "9x200G InfiniBand", "fail"),  # the 9th port up at 200 Gb/s is the RoCE bond
        (SYSFS, "9x200G", "pass"),  # no fabric named: either counts
        (SYSFS, "1x200G RoCE", "pass"),
        # the InfiniBand ports do not make up a RoCE order; the bond may hold 2 or more ports
        (SYSFS, "2x200G RoCE v2", "unverified"),
        (DEVINFO, "3x25G InfiniBand", "fail"),
        (DEVINFO, "1x50G IB", "pass"),
        (DEVINFO, "2x25G RoCE", "pass"),
        (DEVINFO, "2x100GbE", "pass"),
        (NODE, "2x200G InfiniBand", "fail"),
        (NODE, "1x200G HDR", "pass"),
    ],
)
def test_rdma_counts_only_the_ordered_fabric(tmp_path: Path, name: str, rdma: str, verdict: str) -> None:
    got, actual = _rdma(tmp_path, name, rdma)
    assert got == verdict, actual


def test_rdma_wrong_fabric_fail_names_both(tmp_path: Path) -> None:
    text = (REAL / DEVINFO).read_text()
    order = 'order:\n  rdma: "3x25G InfiniBand"\n'
    verdict, actual = verdicts(tmp_path, DEVINFO, text, order)["rdma_ports"]
    assert verdict == "fail"
    assert actual == (
        "1 of 1 port(s) ACTIVE at >= 25 Gb/s on InfiniBand; on Ethernet (RoCE), not the InfiniBand"
        " ordered: mlx5_1/1 ACTIVE 100 Gb/s Ethernet, mlx5_2/1 ACTIVE 100 Gb/s Ethernet"
    )
    # (the 2 RoCE ports up at >= 25 Gb/s would make up the shortfall: may be VPI ports set to Ethernet)
    detail = details(tmp_path, DEVINFO, text, order)["rdma_ports"]
    assert detail.startswith("InfiniBand was ordered and 2 port(s) up are Ethernet (RoCE)"), detail


@pytest.mark.parametrize(
    ("name", "rdma", "advised"),
    [
        (NODE, "2x200G InfiniBand", True),  # mlx5_0 (Ethernet) shares mlx5_1's adapter GUID
        (NODE, "2x200G RoCE", True),
        (DEVINFO, "3x25G InfiniBand", True),  # the 2 RoCE ports up at 100 Gb/s make up the 2 short
        (DEVINFO, "2x200G HDR", False),  # RoCE ports of another card, up at 100 Gb/s: cannot
        (DEVINFO, "4x25G InfiniBand", False),  # 1 + 2 RoCE ports still short of 4
    ],
)
def test_rdma_wrong_fabric_advice_where_the_other_fabric_explains_it(
    tmp_path: Path, name: str, rdma: str, advised: bool
) -> None:
    """A fail with ports of both fabrics listed gives the `mlxconfig LINK_TYPE_P1` advice where
    the other fabric's ports up at the ordered rate would make up the shortfall, or share an
    adapter (system image GUID) with a port of the fabric ordered (the real OpenShift node's
    ConnectX-6: one port Ethernet, one InfiniBand); not where they cannot explain it."""
    text = (REAL / name).read_text()
    order = f'order:\n  rdma: "{rdma}"\n'
    assert verdicts(tmp_path, name, text, order)["rdma_ports"][0] == "fail"
    detail = details(tmp_path, name, text, order)["rdma_ports"]
    assert ("LINK_TYPE_P1" in detail) is advised, detail


def test_rdma_every_port_of_the_other_fabric_said_plainly(tmp_path: Path) -> None:
    """The real sysfs listing without its last line (the RoCE bond): 8 InfiniBand ports and none
    of Ethernet; a `1x200G RoCE` order fails saying no RoCE port is listed (not "0 of 0
    port(s)"), with the wrong-fabric advice first and the next sentence capitalised."""
    lines = (REAL / SYSFS).read_text().splitlines(keepends=True)
    assert lines[-1].startswith("mlx5_bond_0\t")
    text = "".join(lines[:-1])
    order = 'order:\n  rdma: "1x200G RoCE"\n'
    verdict, actual = verdicts(tmp_path, SYSFS, text, order)["rdma_ports"]
    assert verdict == "fail"
    assert actual.startswith(
        "no Ethernet (RoCE) port listed; on InfiniBand, not the Ethernet (RoCE) ordered: mlx5_0/1"
    )
    detail = details(tmp_path, SYSFS, text, order)["rdma_ports"]
    assert detail.startswith("Ethernet was ordered and 8 port(s) up are InfiniBand: the wrong fabric")
    assert "if InfiniBand was sold. Fewer RDMA ports are up" in detail


def test_rdma_link_layer_not_read_is_unverified(tmp_path: Path) -> None:
    """The sysfs capture with mlx5_0's link_layer cell blanked (the probe's line for a link_layer
    file it could not read; not the last line, so the listing is whole): 8 InfiniBand ports
    ordered, 7 read as InfiniBand, mlx5_0 neither counted nor called Ethernet."""
    lines = (REAL / SYSFS).read_text().splitlines(keepends=True)
    assert lines[0].startswith("mlx5_0\t") and lines[0].rstrip("\n").endswith("\tInfiniBand")
    lines[0] = lines[0].rstrip("\n")[: -len("InfiniBand")] + "\n"
    verdict, actual = _rdma(tmp_path, SYSFS, "8x400G InfiniBand", "".join(lines))
    assert verdict == "unverified", actual
    assert "link layer not known: mlx5_0/1" in actual
    # (7 up at the rate and one unread cannot make 9: the order is missed either way)
    assert _rdma(tmp_path, SYSFS, "10x400G InfiniBand", "".join(lines))[0] == "fail"


def test_rdma_expected_names_the_fabric_and_the_unchecked_nic(tmp_path: Path) -> None:
    text = (REAL / SYSFS).read_text()
    order = 'order:\n  rdma: "8x ConnectX-7 400Gb/s NDR"\n'
    row = next(c for c in checks(tmp_path, SYSFS, text, order) if c.name == "rdma_ports")
    want = "8 InfiniBand port(s) ACTIVE at >= 400 Gb/s (ConnectX-7: the NIC model is not checked)"
    assert row.expected == want


IBSTAT = "ibstat__h100-8x-ndr400__some-down__gpud.txt"  # 8 x NDR 400 InfiniBand, 4 Ethernet ports


def _sysfs_of(ibstat: str, layers: dict[str, str]) -> str:
    """The probe's sysfs listing of the ports an ibstat lists (six cells each), with the link
    layer of the devices in `layers` replaced: the box's second listing, as saved beside it."""
    from gpuonboard.facts.infiniband import parse_ibstat

    return "".join(
        f"{p.device}\t{p.port}\t{'4' if p.active else '1'}: {p.state}\t5: {p.phys_state}"
        f"\t{p.rate_gbps:g} Gb/sec\t{layers.get(p.device, p.link_layer)}\n"
        for p in parse_ibstat(ibstat).ports
    )


def test_rdma_link_layer_two_listings_disagree_on_is_unverified(tmp_path: Path) -> None:
    """The real 8 x NDR ibstat (mlx5_1: `Link layer: Ethernet`, up at 100 Gb/s) saved beside the
    sysfs listing of the same ports where mlx5_1 reads InfiniBand: that port's fabric is not
    known; a `9x100G InfiniBand` order is unverified naming both readings, never a pass and never
    a fail calling the port Ethernet."""
    ibstat = (REAL / IBSTAT).read_text()
    sysfs = _sysfs_of(ibstat, {"mlx5_1": "InfiniBand"})
    _, rows = judged_box(
        tmp_path, {"ibstat.txt": ibstat, "ib-sysfs.txt": sysfs}, 'order:\n  rdma: "9x100G InfiniBand"\n'
    )
    row = rows["rdma_ports"]
    assert row.verdict == "unverified", row
    said = row.actual.split("the listings disagree: ")[1]
    assert (
        said.startswith("mlx5_1 port 1 reads ")
        and "Ethernet in ibstat" in said
        and "InfiniBand in sysfs" in said
    )
    assert "link layer not known: mlx5_1/1" in row.actual
    assert "mlx5_1/1 ACTIVE" not in row.actual  # (not named as a port of the other fabric)


def test_rdma_link_layer_ib_is_infiniband(tmp_path: Path) -> None:
    """The real ConnectX-6 VF ibstat (one port, Active, `Rate: 100`) with its `Link layer:
    InfiniBand` written `IB` (libibumad's default where the kernel has no link_layer file): an
    InfiniBand port, which meets `1x100G InfiniBand`."""
    name = "ibstat__connectx6-vf-mt4124__1port-active-hdr100__openstack-vm.txt"
    text = (REAL / name).read_text()
    assert text.count("Link layer: InfiniBand") == 1
    verdict, actual = _rdma(
        tmp_path, name, "1x100G InfiniBand", text.replace("Link layer: InfiniBand", "Link layer: IB")
    )
    assert verdict == "pass", actual


def test_rdma_bond_is_not_one_port(tmp_path: Path) -> None:
    """The real sysfs listing's mlx5_bond_0 (a RoCE LAG: 2 or more ports listed as one device, up
    at 200 Gb/s): a `2x200G RoCE` order is unverified naming the bond, never a fail claiming the
    box has 1 port; where the other ports are too few without it, still a fail."""
    verdict, actual = _rdma(tmp_path, SYSFS, "2x200G RoCE")
    assert verdict == "unverified", actual
    assert "mlx5_bond_0/1 is a bond (a link aggregation of 2 to 4 ports of one card" in actual
    assert _rdma(tmp_path, SYSFS, "10x200G")[0] == "unverified"  # (8 InfiniBand ports and the bond)
    assert _rdma(tmp_path, SYSFS, "2x400G RoCE")[0] == "fail"  # (no port up at 400 Gb/s on RoCE)


@pytest.mark.parametrize(
    ("rdma", "verdict"),
    [
        ("9x200G", "unverified"),  # 7 InfiniBand ports up and a bond of 2 to 4 may make 9
        ("11x200G", "unverified"),  # 7 + a bond of 4
        ("12x200G", "fail"),  # 7 + a bond of at most 4 ports: 11 at most
        ("16x200G", "fail"),
        ("8x200G RoCE", "fail"),  # one bond cannot make up 8 RoCE ports
        ("4x200G RoCE", "unverified"),  # a bond of 4 may
    ],
)
def test_rdma_bond_stands_for_at_most_four_ports(tmp_path: Path, rdma: str, verdict: str) -> None:
    """The real sysfs listing with mlx5_9 edited DOWN (`4: ACTIVE\t5: LinkUp` -> `1: DOWN\t2:
    Polling`): a bond (mlx5 LAG: the ports of one card, 2 or 4) stands for at most 4 ports, so an
    order even 4 per bond cannot make up fails, and every row names the port down."""
    text = (REAL / SYSFS).read_text()
    old = "mlx5_9\t1\t4: ACTIVE\t5: LinkUp\t"
    assert old in text
    text = text.replace(old, "mlx5_9\t1\t1: DOWN\t2: Polling\t")
    got, actual = _rdma(tmp_path, SYSFS, rdma, text)
    assert got == verdict, actual
    if "RoCE" not in rdma:
        assert "down: mlx5_9/1 DOWN (Polling)" in actual
    assert "mlx5_bond_0/1 is a bond" in actual


# `ibv_devinfo` of a SoftiWARP device, as Jason Gunthorpe posted it to linux-rdma on 7 Sep 2022
# ("Re: [PATCH] Add missing ib_uverbs dependency from SoftiWARP", Message-ID
# <YxilUf2HbA6PAo59@nvidia.com>; the lines after `$ build/bin/ibv_devinfo`, byte for byte)
SIW_DEVINFO = (
    "hca_id:\tsiw0\n\ttransport:\t\t\tiWARP (1)\n\tfw_ver:\t\t\t\t0.0.0\n"
    "\tnode_guid:\t\t\t7686:e2ff:fe28:63fc\n\tsys_image_guid:\t\t\t7486:e228:63fc:0000\n"
    "\tvendor_id:\t\t\t0x626d74\n\tvendor_part_id:\t\t\t1\n\thw_ver:\t\t\t\t0x0\n"
    "\tphys_port_cnt:\t\t\t1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t1024 (3)\n\t\t\tactive_mtu:\t\t1024 (3)\n\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n\t\t\tport_lmc:\t\t0x00\n\t\t\tlink_layer:\t\tEthernet\n"
)


def test_rdma_iwarp_port_is_not_roce(tmp_path: Path) -> None:
    """The real siw0 listing with its device renamed in-test `cxgb4_0` (a Chelsio iWARP adapter's
    name; transport iWARP, link layer Ethernet, active, no rate without -v): not a RoCE port, so
    a `1x10G RoCE` order fails saying so, not unverified as a RoCE port whose rate was not
    reported; an order naming no fabric still counts it (unverified: no rate)."""
    name = "ibv_devinfo.txt"
    text = SIW_DEVINFO.replace("siw0", "cxgb4_0")
    verdict, actual = _rdma(tmp_path, name, "1x10G RoCE", text)
    assert verdict == "fail", actual
    assert actual.startswith(
        "no Ethernet (RoCE) port listed; on iWARP (RDMA over TCP, not RoCE), not the Ethernet (RoCE)"
    )
    assert "cxgb4_0/1 ACTIVE" in actual
    assert _rdma(tmp_path, name, "1x10G", text)[0] == "unverified"


def test_rdma_soft_iwarp_port_is_software_whatever_the_order(tmp_path: Path) -> None:
    """The real siw0 listing as posted: soft-iWARP, the kernel's RDMA over a plain NIC (its
    name, `rdma link add siw0 type siw`). A `1x10G RoCE` order fails naming software RDMA, and
    so does an order naming no fabric (before: unverified, a port that could make it up)."""
    for order in ("1x10G RoCE", "1x10G"):
        verdict, actual = _rdma(tmp_path, "ibv_devinfo.txt", order, SIW_DEVINFO)
        assert verdict == "fail", (order, actual)
        assert "on software RDMA (Soft-RoCE rxe or soft-iWARP siw" in actual and "siw0/1 ACTIVE" in actual


# AWS EFA: `ibv_devinfo` (transport `unspecified (4)`, link layer printed InfiniBand; rdma-core
# pull request #884) and `ibstat` (`Link layer: Unknown`; amzn/amzn-drivers issue #114)
EFA_DEVINFO = "ibv_devinfo__aws-efa__transport-unspecified__1port-active.txt"
EFA_IBSTAT = "ibstat__aws-efa__link-layer-unknown__1port-active.txt"


def test_rdma_efa_port_is_not_infiniband(tmp_path: Path) -> None:
    """The real EFA ibv_devinfo (efa_0, `transport: unspecified (4)`, `link_layer: InfiniBand`,
    active, no rate without -v): not an InfiniBand port, so a `1x100G InfiniBand` order fails
    naming its transport (not unverified as an InfiniBand port whose rate was not reported)."""
    verdict, actual = _rdma(tmp_path, EFA_DEVINFO, "1x100G InfiniBand")
    assert verdict == "fail", actual
    assert actual.startswith(
        "no InfiniBand port listed; on unspecified transport (not InfiniBand nor RoCE), not the"
        " InfiniBand ordered: efa_0/1 ACTIVE"
    )
    detail = details(
        tmp_path, EFA_DEVINFO, (REAL / EFA_DEVINFO).read_text(), 'order:\n  rdma: "1x100G IB"\n'
    )["rdma_ports"]
    assert "efa_0/1: RDMA of another transport (unspecified), neither InfiniBand nor RoCE" in detail
    assert "LINK_TYPE" not in detail


def test_rdma_efa_unknown_link_layer_kept_in_the_merge() -> None:
    """The real EFA ibstat (`Link layer: Unknown`, the kernel's sysfs word) merged with the real
    EFA ibv_devinfo (`link_layer: InfiniBand` of transport `unspecified`: rdma-core's print of an
    unspecified link layer; two EC2 boxes' captures, one efa_0 each, paired as one box's): the
    port's link layer stays Unknown, not InfiniBand."""
    from gpuonboard.facts.infiniband import parse_rdma
    from gpuonboard.facts.rdma_merge import merge_listings

    reports = [parse_rdma((REAL / name).read_text()) for name in (EFA_IBSTAT, EFA_DEVINFO)]
    for ordered in (reports, reports[::-1]):
        (port,) = merge_listings(ordered).ports
        assert port.link_layer == "Unknown" and port.transport == "unspecified", port


def test_rdma_usnic_port_is_not_roce(tmp_path: Path) -> None:
    """The real siw0 listing with its transport edited to `usNIC (2)` and its device renamed
    `usnic_0` (Cisco usNIC: link layer Ethernet, not RoCE): a `1x10G RoCE` order fails naming
    the usNIC transport."""
    text = SIW_DEVINFO.replace("iWARP (1)", "usNIC (2)").replace("siw0", "usnic_0")
    verdict, actual = _rdma(tmp_path, "ibv_devinfo.txt", "1x10G RoCE", text)
    assert verdict == "fail", actual
    assert (
        "on usNIC transport (not InfiniBand nor RoCE), not the Ethernet (RoCE) ordered: usnic_0/1" in actual
    )


# Soft-RoCE (rdma_rxe, RoCE run by the kernel over a plain Ethernet NIC): `ibstat` of rxe0 on a
# laptop's Wi-Fi (linux-rdma list, 2022-01-19) and `ibv_devinfo -d rxe0 -v` of a CentOS 7 box
RXE_IBSTAT = "ibstat__soft-roce-rxe0__1port-active-2.5g__linux-rdma-list.txt"
RXE_DEVINFO = "ibv_devinfo-v__soft-roce-rxe0__vendor-0x0000__centos7__linux-riscv-dev.txt"


@pytest.mark.parametrize("name", [RXE_IBSTAT, RXE_DEVINFO])
def test_rdma_soft_roce_port_is_no_roce_adapter(tmp_path: Path, name: str) -> None:
    """A real Soft-RoCE device: ibstat's rxe0 (`CA type:`, `Firmware version:` and `Hardware
    version:` empty, `Link layer: Ethernet`, ACTIVE at 2.5) and ibv_devinfo -v's rxe0 (fw_ver
    0.0.0, hw_ver 0x0, vendor_id 0x0000, vendor_part_id 0; 1X 2.5 Gbps). Both passed a `1x2.5G
    RoCE` order as an RDMA NIC's port, while the kernel runs it in software over any Ethernet NIC
    (an EC2 VM's ENA gives it `Rate: 100`); it fails naming software RDMA, and so does an order
    naming no fabric (it passed: a plain NIC made up the RDMA order)."""
    verdict, actual = _rdma(tmp_path, name, "1x2.5G RoCE")
    assert verdict == "fail", actual
    assert actual.startswith("no Ethernet (RoCE) port listed; on software RDMA (Soft-RoCE rxe"), actual
    assert "rxe0/1 ACTIVE 2.5 Gb/s" in actual
    verdict, actual = _rdma(tmp_path, name, "1x2.5G")
    assert verdict == "fail", actual
    assert actual.startswith("no RDMA adapter's port listed; on software RDMA (Soft-RoCE rxe"), actual


def test_rdma_soft_roce_at_200g_makes_up_no_order_naming_no_fabric(tmp_path: Path) -> None:
    """The real rxe0 ibstat with its `Rate: 2.5` edited in-test to `Rate: 200` (an rxe device
    over a 200G plain NIC): `1x200G` passed on it (a plain NIC with `rdma link add rxe0 type
    rxe` made up an RDMA order); it fails now, naming the software port."""
    text = (REAL / RXE_IBSTAT).read_text().replace("Rate: 2.5\n", "Rate: 200\n")
    verdict, actual = _rdma(tmp_path, "ibstat.txt", "1x200G", text)
    assert verdict == "fail", actual
    assert "on software RDMA (Soft-RoCE rxe" in actual and "rxe0/1 ACTIVE 200 Gb/s" in actual


def test_rdma_adapter_naming_no_firmware_is_not_called_software(tmp_path: Path) -> None:
    """The real rxe0 ibstat with its device renamed in-test `mana_0` and `Rate: 2.5` edited to
    `Rate: 200` (Azure MANA's mana_ib, RoCE-capable hardware, prints no CA type, firmware nor
    hardware version either, as Alibaba's erdma): `1x200G RoCE` failed "on software RDMA ...
    no RDMA adapter", a hardware claim from empty fields. It is unverified now, naming the port
    and how to tell; so is an order naming no fabric (it may be software)."""
    text = (REAL / RXE_IBSTAT).read_text().replace("rxe0", "mana_0").replace("Rate: 2.5\n", "Rate: 200\n")
    for order in ("1x200G RoCE", "1x200G"):
        verdict, actual = _rdma(tmp_path, "ibstat.txt", order, text)
        assert verdict == "unverified", (order, actual)
        assert "not known to be an RDMA adapter's: mana_0/1 ACTIVE 200 Gb/s" in actual


def test_rdma_adapter_with_an_empty_ca_type_is_not_software(tmp_path: Path) -> None:
    """The real rxe0 ibstat with its device lines filled in-test as a RoCE adapter's driver fills
    some of them (Intel irdma prints no `CA type`, but its firmware and hardware version) and
    the device renamed `irdma0`: one empty field alone is no software device, so its port is
    RoCE and passes."""
    text = (REAL / RXE_IBSTAT).read_text().replace("rxe0", "irdma0")
    text = text.replace("Firmware version:\n", "Firmware version: 1.52\n")
    text = text.replace("Hardware version:\n", "Hardware version: 2\n")
    assert "CA type:\n" in text and "1.52" in text
    assert _rdma(tmp_path, "ibstat.txt", "1x2.5G RoCE", text)[0] == "pass"


STATUS = "ibstatus__a100-hdr200__all-active__gpud.txt"  # 8 x HDR 200, mlx5_8 `40 Gb/sec (4X QDR)`


def test_rdma_fdr10_order_not_met_by_a_qdr_port(tmp_path: Path) -> None:
    """The real A100 ibstatus with mlx5_8's `link_layer: Ethernet` edited to InfiniBand: its
    `40 Gb/sec (4X QDR)` is 40 Gb/s as FDR10's is, but 8b/10b (less data): a `9x40G FDR10` order
    fails naming it; with `(4X QDR)` also cut from the rate (the generation not printed, as ibstat
    prints `Rate: 40`) it is unverified; a `9x40G QDR` order passes."""
    text = (REAL / STATUS).read_text()
    old = "rate:            40 Gb/sec (4X QDR)\n        link_layer:      Ethernet"
    assert old in text
    text = text.replace(old, "rate:            40 Gb/sec (4X QDR)\n        link_layer:      InfiniBand")
    verdict, actual = _rdma(tmp_path, STATUS, "9x40G FDR10", text)
    assert verdict == "fail", actual
    assert "up on QDR, not the FDR10 ordered: mlx5_8/1 ACTIVE 40 Gb/s InfiniBand" in actual
    assert _rdma(tmp_path, STATUS, "9x40G QDR", text)[0] == "pass"
    assert _rdma(tmp_path, STATUS, "8x40G FDR10", text)[0] == "pass"  # (the 8 HDR ports)
    assert actual.startswith("8 of 9 port(s) ACTIVE at >= 40 Gb/s on InfiniBand;"), actual
    untold = text.replace("40 Gb/sec (4X QDR)", "40 Gb/sec")
    verdict, actual = _rdma(tmp_path, STATUS, "9x40G FDR10", untold)
    assert verdict == "unverified", actual
    assert "generation not printed" in actual and "mlx5_8/1" in actual


def test_rdma_rate_unread_names_the_sysfs_listing_it_read(tmp_path: Path) -> None:
    """The real 8 x NDR sysfs listing with every rate cell blanked (the probe's empty cell for a
    rate file it could not read; only the state, phys_state and link_layer files read): the
    advice names the sysfs listing, never "(ibv_devinfo without -v)" (it said so before)."""
    text = "".join(
        "\t".join(cells[:4] + [""] + cells[5:]) + "\n"
        for cells in (line.split("\t") for line in (REAL / SYSFS).read_text().splitlines())
    )
    row = next(
        c
        for c in checks(tmp_path, SYSFS, text, 'order:\n  rdma: "8x400G InfiniBand"\n')
        if c.name == "rdma_ports"
    )
    assert row.verdict == "unverified"
    assert "8 active with no rate reported" in row.actual
    assert row.detail == (
        "the port rate was not reported (the sysfs listing read no rate file);"
        " read /sys/class/infiniband/*/ports/*/rate."
    )


def test_rdma_rate_unread_in_ibv_devinfo_without_v_says_so(tmp_path: Path) -> None:
    """The real ConnectX-3 ibv_devinfo without -v (2 of 4 ports ACTIVE, no rate printed): the
    advice names ibv_devinfo without -v, as before."""
    name = "ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt"
    row = next(
        c
        for c in checks(tmp_path, name, (REAL / name).read_text(), 'order:\n  rdma: "2x40G InfiniBand"\n')
        if c.name == "rdma_ports"
    )
    assert row.verdict == "unverified"
    assert "(ibv_devinfo without -v)" in row.detail


QIB_SYSFS = "ib-sysfs-grep__qib0-qdr-40g-1port__hwloc.txt"  # QLogic qib0, `40 Gb/sec (4X QDR)`


def test_rdma_older_generation_port_is_counted_as_listed(tmp_path: Path) -> None:
    """The real sysfs of a QLogic QDR HCA (qib0 ACTIVE `40 Gb/sec (4X QDR)`, InfiniBand) against
    a `1x40G FDR10 InfiniBand` order: it fails, but said "no InfiniBand port listed; up on QDR
    ...: qib0/1 ACTIVE 40 Gb/s InfiniBand", an InfiniBand port listed beside "none listed"; it
    says 0 of the 1 InfiniBand port listed is up at the ordered generation."""
    verdict, actual = _rdma(tmp_path, QIB_SYSFS, "1x40G FDR10 InfiniBand")
    assert verdict == "fail", actual
    assert actual.startswith("0 of 1 port(s) ACTIVE at >= 40 Gb/s on InfiniBand; up on QDR, not the FDR10"), (
        actual
    )
    assert _rdma(tmp_path, QIB_SYSFS, "1x40G QDR InfiniBand")[0] == "pass"


def test_rdma_sysfs_soft_roce_device_is_software(tmp_path: Path) -> None:
    """The real H100 sysfs listing with its RoCE bond device renamed in-test `rxe0` (a Soft-RoCE
    device `rdma link add rxe0 type rxe` made over a plain 200G NIC; sysfs names no transport):
    `9x200G` passed counting it; it fails now, naming software RDMA (the 8 NDR ports still count)."""
    text = (REAL / SYSFS).read_text().replace("mlx5_bond_0", "rxe0")
    verdict, actual = _rdma(tmp_path, SYSFS, "9x200G", text)
    assert verdict == "fail", actual
    assert actual.startswith("8 of 8 port(s) ACTIVE at >= 200 Gb/s; on software RDMA (Soft-RoCE rxe"), actual


RXE_OLD = "ibv_devinfo__soft-roce-rxe0__no-link-layer-line__old-libibverbs__copied-command__rxe-dev-46.txt"
ORDER = 'order:\n  rdma: "1x10G RoCE"\n'


def test_an_old_ibv_devinfo_without_link_layer_is_not_called_cut_by_a_session(tmp_path: Path) -> None:
    """SoftRoCE/rxe-dev#46: an old ibv_devinfo of rxe0 whose port block ends on `port_lmc: 0x00`
    (it prints no link_layer: what the issue is about) was called "not whole (cut short by a
    dropped session, a scroll-back limit or a paste ...)" (measure31d 17), untrue of a whole
    listing. It says plainly now: the devices listed are software RDMA, no adapter, and the
    listing may be whole (an old libibverbs) or cut after the port; which is not known."""
    verdict, actual = _rdma(tmp_path, "ibv_devinfo.txt", "1x10G RoCE", (REAL / RXE_OLD).read_text())
    assert verdict == "unverified", actual
    assert "on software RDMA (Soft-RoCE rxe" in actual
    assert "rxe0 port 1 has no link_layer line after its port_lmc (an old ibv_devinfo prints none" in actual
    said = details(tmp_path, "ibv_devinfo.txt", (REAL / RXE_OLD).read_text(), ORDER)
    assert "cut short by a dropped session" not in said["rdma_ports"]
    assert said["rdma_ports"].startswith("every RDMA device it lists is software RDMA, no RDMA adapter")
    # (a current ibv_devinfo cut inside its port block, before port_lmc, stays "cut short")
    cut = (REAL / RXE_OLD).read_text().rsplit("            sm_lid", 1)[0]
    said = details(tmp_path, "ibv_devinfo.txt", cut, ORDER)
    assert "cut short by a dropped session" in said["rdma_ports"]
