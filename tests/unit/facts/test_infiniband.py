"""RDMA port parsers on real captures: ibv_devinfo -v (E3SM-Project/scorpio) and the sysfs
listing assembled from leptonai/gpud's /sys/class/infiniband test data (8x NDR 400G + RoCE bond)."""

import subprocess
from pathlib import Path

import pytest

from gpuonboard.facts import infiniband, rdma_merge
from gpuonboard.facts.extra_probes import RDMA_PORTS
from gpuonboard.facts.infiniband import IbReport, parse_ib_sysfs, parse_ibstat, parse_ibv_devinfo, parse_rdma
from gpuonboard.steps.checks.rdma_ports import rule_rdma

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_ibv_devinfo_v_rate_is_width_times_lane_speed() -> None:
    report = parse_ibv_devinfo(read("ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt"))
    got = [(p.device, p.port, p.state, p.rate_gbps, p.link_layer, p.phys_state) for p in report.ports]
    assert got == [
        ("mlx5_0", 1, "ACTIVE", 200.0, "InfiniBand", "LINK_UP"),
        ("mlx5_1", 1, "ACTIVE", 100.0, "Ethernet", "LINK_UP"),
        ("mlx5_2", 1, "ACTIVE", 100.0, "Ethernet", "LINK_UP"),
    ]
    assert all(p.source == "ibv_devinfo" and p.active for p in report.ports)


def test_ibv_devinfo_without_v_has_no_rate() -> None:
    text = (
        "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tphys_port_cnt:\t\t\t1\n"
        "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_DOWN (1)\n\t\t\tlink_layer:\t\tInfiniBand\n"
    )
    (port,) = parse_ibv_devinfo(text).ports
    assert (port.state, port.rate_gbps, port.active) == ("DOWN", None, False)


def test_sysfs_listing_h100_8x_ndr() -> None:
    report = parse_ib_sysfs(read("ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt"))
    assert report.warnings == ()
    ib = [p for p in report.ports if p.link_layer == "InfiniBand"]
    assert len(ib) == 8 and all(p.active and p.rate_gbps == 400.0 and p.phys_state == "LinkUp" for p in ib)
    bond = report.ports[-1]
    assert (bond.device, bond.rate_gbps, bond.link_layer) == ("mlx5_bond_0", 200.0, "Ethernet")


def test_parse_rdma_dispatches_by_content() -> None:
    assert (
        parse_rdma(read("ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt")).ports[0].source
        == "ibv_devinfo"
    )
    assert (
        parse_rdma(read("ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt")).ports[0].source == "sysfs"
    )


def test_sysfs_probe_reads_a_tree(tmp_path: Path) -> None:
    # the probe's loop over a real-shaped tree (values from the gpud fixture; a DOWN port added)
    lines = read("ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt").splitlines()[:2]
    root = tmp_path / "sys" / "class" / "infiniband"
    for line in lines:
        dev, port, state, phys, rate, layer = line.split("\t")
        d = root / dev / "ports" / port
        d.mkdir(parents=True)
        for name, value in (("state", state), ("phys_state", phys), ("rate", rate), ("link_layer", layer)):
            (d / name).write_text(value + "\n")
    down = root / "mlx5_2" / "ports" / "1"
    down.mkdir(parents=True)
    for name, value in (
        ("state", "1: DOWN"),
        ("phys_state", "3: Disabled"),
        ("rate", "10 Gb/sec (4X SDR)"),
        ("link_layer", "InfiniBand"),
    ):
        (down / name).write_text(value + "\n")
    command = RDMA_PORTS.command.replace("/sys/class/infiniband", str(root))
    r = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    report = parse_ib_sysfs(r.stdout)
    assert [(p.device, p.state, p.rate_gbps) for p in report.ports] == [
        ("mlx5_0", "ACTIVE", 400.0),
        ("mlx5_1", "ACTIVE", 400.0),
        ("mlx5_2", "DOWN", 10.0),
    ]


def test_no_rdma_device_outputs_read_as_the_empty_sysfs_listing(tmp_path: Path) -> None:
    """ibv_devinfo's `No IB devices found` and ibstat's panic on libibumad's fallback name
    `mthca0` (no /sys/class/infiniband) are what the live probe's listing of such a box is: no
    port, a complete report, nothing unread."""
    command = RDMA_PORTS.command.replace("/sys/class/infiniband", str(tmp_path / "absent"))
    live = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30)
    assert (live.returncode, live.stdout) == (0, "")
    empty = parse_rdma(live.stdout)
    for name in ("ibv_devinfo__no-ib-devices.txt", "ibstat__no-ib-device__ibpanic-mthca0.txt"):
        text = read(name)
        assert infiniband.no_rdma_device(text), name
        assert parse_rdma(text) == empty == IbReport(()), name
    assert parse_ibstat(read("ibstat__no-ib-device__ibpanic-mthca0.txt")) == IbReport(())
    assert parse_ibv_devinfo(read("ibv_devinfo__no-ib-devices.txt")) == IbReport(())


def test_a_panic_on_a_listed_device_still_cuts_the_listing() -> None:
    """Not the fallback name, or after devices it listed: ibstat stopped early (incomplete)."""
    cut = parse_rdma(read("ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt"))
    assert len(cut.ports) == 8 and not cut.complete
    other = "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory\n"
    assert not infiniband.no_rdma_device(other) and not parse_ibstat(other).complete
    assert not infiniband.no_rdma_device("No IB devices found\nhca_id:\tmlx5_0\n")


def test_merge_listings_of_two_formats_is_whole_where_one_is() -> None:
    """gpud's A100 VM: its `ibstat` stopped at mlx5_8 (ibpanic), its `ibstatus` lists mlx5_8 too;
    merged, the nine ports are known (the whole ibstatus), each port's fields together: ibstat's
    VF part number (MT4124) and adapter, ibstatus's rate."""
    ibstat = parse_ibstat(read("ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt"))
    ibstatus = infiniband.parse_ibstatus(read("ibstatus__a100-hdr200__all-active__gpud.txt"))
    assert not ibstat.complete and ibstatus.complete
    merged = rdma_merge.merge_listings([ibstat, ibstatus])
    assert merged.complete and merged.cut is None and len(merged.ports) == 9
    first = merged.ports[0]
    assert (first.device, first.state, first.rate_gbps, first.source) == (
        "mlx5_0",
        "ACTIVE",
        200.0,
        "ibstat+ibstatus",
    )
    assert first.vf is True and first.adapter is not None
    assert merged.ports[8].source == "ibstatus" and merged.ports[8].link_layer == "Ethernet"
    # (neither whole: the merged listing is not whole either)
    assert not rdma_merge.merge_listings([ibstat, ibstat]).complete


FLATTENED = [
    "ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt",
    "ibv_devinfo-v__connectx3-mlx4__port-down-polling.txt",
    "ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt",
    "ibstat__h100-8x-ndr400__some-down__gpud.txt",
    "ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt",
    "ibstat__connectx6-hdr200__2pf_plus_8vf-1active__openshift-sriov-node.txt",
    "ibstatus__a100-hdr200__all-active__gpud.txt",
]


@pytest.mark.parametrize("name", FLATTENED)
def test_a_listing_pasted_without_its_indentation_reads_as_the_listing(name: str) -> None:
    """Each real capture with every line's leading blanks and tabs removed, as a comment pasted
    outside a code block shows it (open-mpi/ompi#9087 pasted its `ibv_devinfo -v` so: `port: 1`,
    `state: PORT_ACTIVE (4)` at the start of the line). Before, no port block was read ("mlx5_0
    has no port block"): 8 ports Active at 400 were unverified against `8x400G`; now the same
    ports, and the same verdict, as the capture as it is."""
    text = read(name)
    flat = "".join(line.lstrip(" \t") for line in text.splitlines(keepends=True))
    assert parse_rdma(flat) == parse_rdma(text)


def test_an_ibstat_without_its_indentation_is_judged() -> None:
    """gpud's 12-CA H100 ibstat flattened (every line's leading whitespace removed): its 8 ports
    Active at 400 pass `8x400G` and fail `9x400G` (before: both unverified, no port read)."""
    text = read("ibstat__h100-8x-ndr400__some-down__gpud.txt")
    flat = "".join(line.lstrip() + "\n" for line in text.splitlines())
    report = parse_rdma(flat)
    assert rule_rdma((8, 400.0), report.ports, report.complete, report.cut).verdict == "pass"  # type: ignore[union-attr]
    assert rule_rdma((9, 400.0), report.ports, report.complete, report.cut).verdict == "fail"  # type: ignore[union-attr]


def test_an_infiniband_ports_guid_is_read_in_each_format() -> None:
    """ibstat's `Port GUID` and the interface half of ibstatus's `default gid` of gpud's A100 VM
    (one box) read the same; a RoCE port (mlx5_8 of the ibstatus, Ethernet) has none."""
    ibstat = parse_ibstat(read("ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt"))
    ibstatus = infiniband.parse_ibstatus(read("ibstatus__a100-hdr200__all-active__gpud.txt"))
    assert ibstat.ports[0].guid == ibstatus.ports[0].guid == "00155dfffd3411eb"
    assert ibstatus.ports[8].guid is None
    assert rdma_merge.listings_disagree([ibstat, ibstatus]) is None


def test_a_listing_whose_top_was_cut_off_is_not_whole() -> None:
    """deepseek-ai/DeepEP#38's `ibv_devinfo` paste starts inside a port record (`max_mtu: 4096
    (5)`, its `hca_id:` and `port:` lines above cut off), then lists mlx5_2: it was read as a
    whole listing of one port, so `2x400G` failed ("0 of 1 port(s)"); the devices above the cut
    are not known, so it is unverified. The same for NVIDIA/l2fwd-nv#6's `ibstat` with its first
    10 lines (`CA 'mlx5_0'` to `Port 1:`) cut off in the test: one port read, `2x100G` unverified,
    `1x100G` still passes."""
    devinfo = parse_rdma(read("ibv_devinfo__top-cut-inside-a-port__cx7-roce-mlx5_2-active__deepep-38.txt"))
    assert [p.device for p in devinfo.ports] == ["mlx5_2"] and not devinfo.complete
    assert devinfo.cut == (
        "its first line 'max_mtu: 4096 (5)' belongs to a record whose head was cut off above it"
    )
    assert rule_rdma((2, 400.0), devinfo.ports, devinfo.complete, devinfo.cut).verdict == "unverified"  # type: ignore[union-attr]
    text = read("ibstat__cx6dx-mt4125__2port-roce-100g-active__l2fwd-nv-6.txt")
    assert parse_rdma(text).complete and len(parse_rdma(text).ports) == 2
    ibstat = parse_rdma("".join(text.splitlines(keepends=True)[10:]))
    assert [p.device for p in ibstat.ports] == ["mlx5_1"] and not ibstat.complete
    assert rule_rdma((2, 100.0), ibstat.ports, ibstat.complete, ibstat.cut).verdict == "unverified"  # type: ignore[union-attr]
    assert rule_rdma((1, 100.0), ibstat.ports, ibstat.complete, ibstat.cut).verdict == "pass"  # type: ignore[union-attr]


def test_a_listing_with_lines_left_out_by_hand_is_not_whole() -> None:
    """leptonai/gpud#752's `ibstat` paste starts with `...` (the CAs above mlx5_7 left out by
    hand) and ends with ibstat's `ibpanic:` on mlx5_8. With that last line dropped in the test,
    it was read as a whole listing of one port: `8x200G` failed "1 of 1 port(s)"; the `...`
    now says devices were left out, so it is unverified (the one port read still passes
    `1x200G`; its `CA type: ...` values are no elision lines)."""
    text = read("ibstat__one-ca-mlx5_7-hdr200__elided-top-and-values__ibpanic-mlx5_8__gpud-752.txt")
    assert not parse_rdma(text).complete
    kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("ibpanic:"))
    report = parse_rdma(kept)
    assert [p.device for p in report.ports] == ["mlx5_7"] and not report.complete
    assert report.cut == "lines were left out by hand (`...` on line 1)"
    assert rule_rdma((8, 200.0), report.ports, report.complete, report.cut).verdict == "unverified"  # type: ignore[union-attr]
    assert rule_rdma((1, 200.0), report.ports, report.complete, report.cut).verdict == "pass"  # type: ignore[union-attr]


def test_a_record_under_another_tools_head_is_no_cut_top() -> None:
    """gpud's A100 `ibstatus` followed, in one text with no prompt between, by the 2-HCA mlx4
    `ibv_devinfo` (2 of 4 ports down): ibstatus' `state: 4: ACTIVE` under its own `Infiniband
    device 'mlx5_0' port 1 status:` head was read as the top of an ibv_devinfo record whose head
    was cut off, turning `4x10G`'s fail unverified; the listing read (ibv_devinfo's) is whole
    again and fails."""
    text = read("ibstatus__a100-hdr200__all-active__gpud.txt") + read(
        "ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt"
    )
    report = parse_rdma(text)
    assert report.cut is None and report.complete
    assert rule_rdma((4, 10.0), report.ports, report.complete, report.cut).verdict == "fail"  # type: ignore[union-attr]


# libibumad's debug lines above an ibstat, as linux-rdma/rdma-core#847 (a `set -x` log of
# `+ ibstat` on a ConnectX-3) shows them
UMAD_DEBUG = (
    "ibwarn: [168988] umad_init: umad_init\n"
    "ibwarn: [168988] umad_get_ca_device_list: return 1 cas\n"
    "ibwarn: [168988] umad_get_ca: ca_name mlx4_0\n"
    "ibwarn: [168988] umad_get_ca: opened mlx4_0\n"
)


def test_libibumad_debug_lines_do_not_stop_the_listing() -> None:
    """The real one-port `ibstat` of a port down (ibstat__one-ca-named-mlx5_7__port-down__sriov-
    pod.txt) with rdma-core#847's four `ibwarn:` debug lines put above it: the listing is whole
    and its port down is named (a fail), not a listing that stopped early; an `ibwarn:` line
    naming a failure still stops it."""
    text = UMAD_DEBUG + read("ibstat__one-ca-named-mlx5_7__port-down__sriov-pod.txt")
    report = parse_ibstat(text)
    assert report.complete and report.warnings == () and len(report.ports) == 1
    result = rule_rdma((1, 200.0), report.ports, report.complete, report.cut)
    assert result is not None and result.verdict == "fail" and "mlx5_7/1" in result.actual, result
    failing = "ibwarn: [3845] mad_rpc_open_port: can't open UMAD port ((null):0)\n" + read(
        "ibstat__one-ca-named-mlx5_7__port-down__sriov-pod.txt"
    )
    assert not parse_ibstat(failing).complete
