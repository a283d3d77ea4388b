"""The truth audit's sixth round (its part of tests/unit/facts/audit_captures.py): host facts
beside the GPU, as users paste them: `nvidia-smi topo -m` with and without NICs (a bonded NIC in
the NIC Legend, the R535+ "GPU NUMA ID" column reading N/A, "NUMA Affinity" N/A on a desktop),
`lscpu` of a KVM guest, `nvidia-smi nvlink -s` cut short with `...`. Each value below was read
off the capture by hand, not copied from the parser's output. R6-F1 and R6-F2 are fixed (each
test named after one fails without its fix)."""

from __future__ import annotations

import pytest

from gpuonboard.api import offline, saved_text
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.cpu import CpuInfo
from gpuonboard.facts.nvlink import parse_nvlink_status
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.facts.topo import interconnect, nvlink_orphans, weakest_link
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks import acceptance, fabric_health

from .audit_captures import REAL, read, saved

GTX1080TI = "nvidia-smi-topo-m__geforce-gtx-1080-ti__2gpu-phb__no-nic.txt"
A100 = "nvidia-smi-topo-m__a100__8gpu-17nic-bond__gpu-numa-id.txt"
A10 = "nvidia-smi-topo-m__a10__4gpu-2nic-sys__gpu-numa-id.txt"
WRX90 = "nvidia-smi-topo-m__rtx-6000-ada__2gpu-2nic-phb__driver575.51.03__threadripper-wrx90.txt"
XEON = "lscpu__xeon-platinum-8481c-sapphire-rapids__2socket-4numa__kvm.txt"
GB200 = "nvidia-smi-nvlink-s__gb200__2gpu-second-elided.txt"

# the prompt/command line pasted above each capture, kept out of its file (real outputs never
# start with a prompt: tests/unit/api/test_offline.py), byte-exact
PASTED = {
    GTX1080TI: "yxc@hua-System-Product-Name:~$ nvidia-smi topo -m\n",
    A100: "$ nvidia-smi topo -m\n",
    A10: "$nvidia-smi topo -m\n",
    WRX90: "$ sonata@dev-canyon1:~/stelline$ nvidia-smi topo -m\n",
    GB200: "nvidia-smi nvlink -s\n",
}
PROBE = {"nvidia-smi-topo-m": "nvidia_topo", "lscpu": "lscpu", "nvidia-smi-nvlink-s": "nvidia_nvlink"}


def live(name: str) -> Facts:
    """The capture as a live probe's stdout (exit 0), under the probe of its command."""
    return parse_facts({PROBE[name.split("__")[0]]: ProbeOutput(read(name), "", 0)})


def both(name: str) -> list[Facts]:
    return [live(name), saved(name)]


# file, GPUs, NICs (count), the link of every GPU pair (one value: the box is uniform), kind,
# CPU affinity of GPU0, NUMA affinity of GPU0 (None: printed N/A), NIC Legend (first, last)
TOPOS = [
    (GTX1080TI, 2, 0, "PHB", "pcie", "0-11", None, None),
    (A100, 8, 17, "NV12", "nvlink", "0-103", "0", (("NIC0", "mlx5_2"), ("NIC16", "mlx5_bond_0"))),
    (A10, 4, 2, "SYS", "pcie", "0-127", "0", (("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"))),
    (WRX90, 2, 2, "PHB", "pcie", "0-23", "0", (("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"))),
]


@pytest.mark.parametrize(
    ("name", "gpus", "nics", "link", "kind", "cpus", "numa", "legend"), TOPOS, ids=[t[0] for t in TOPOS]
)
def test_topo_values(
    name: str,
    gpus: int,
    nics: int,
    link: str,
    kind: str,
    cpus: str,
    numa: str | None,
    legend: tuple[tuple[str, str], tuple[str, str]] | None,
) -> None:
    for facts in both(name):
        topo = facts.topology
        assert topo is not None
        assert topo.gpus == tuple(f"GPU{i}" for i in range(gpus))
        assert len(topo.nics) == nics
        assert set(topo.links.values()) == {link}
        assert interconnect(topo) == kind and weakest_link(topo) == link and nvlink_orphans(topo) == []
        assert set(topo.cpu_affinity.values()) == {cpus} and len(topo.cpu_affinity) == gpus
        # "NUMA Affinity" N/A (a desktop board) is not a node; "GPU NUMA ID" N/A is not read as one
        assert topo.numa_affinity.get("GPU0") == numa
        assert set(topo.numa_affinity.values()) <= {numa}
        if legend is None:
            assert not topo.nic_legend
        else:
            (first, first_dev), (last, last_dev) = legend
            assert topo.nic_legend[first] == first_dev and topo.nic_legend[last] == last_dev
            assert len(topo.nic_legend) == nics
        assert topo.warnings == ()


def test_topo_with_the_pasted_prompt_reads_the_same() -> None:
    for name, prompt in PASTED.items():
        if not name.startswith("nvidia-smi-topo-m"):
            continue
        pasted = parse_facts(
            {"nvidia_topo": ProbeOutput(saved_text.strip_prompt(prompt + read(name)), "", 0)}
        )
        assert pasted.topology == live(name).topology, name


@pytest.mark.parametrize(
    ("name", "ordered", "verdict"),
    [
        (A100, "nvlink", "pass"),  # NV12 between all 8 (NVSwitch)
        (A10, "nvlink", "fail"),  # SYS between every pair: no NVLink at all
        (A10, "pcie", "pass"),
        (GTX1080TI, "nvlink", "fail"),  # two consumer cards over the host bridge
        (WRX90, "pcie", "pass"),
    ],
)
def test_topo_interconnect_verdicts(name: str, ordered: str, verdict: str) -> None:
    for facts in both(name):
        c = {x.name: x for x in acceptance.evaluate(OrderSpec(interconnect=ordered), facts)}["interconnect"]
        assert c.verdict == verdict, (name, c)


def test_lscpu_sapphire_rapids_kvm_guest() -> None:
    # 2 sockets x 44 cores x 2 threads = 176 CPUs (0-175), 4 NUMA nodes; a KVM guest
    expected = CpuInfo("x86_64", "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", 2, 44, 2, 176, 88)
    for facts in both(XEON):
        assert facts.cpu == expected
        rows = {c.name: c for c in acceptance.evaluate(OrderSpec(cpu_cores=88), facts)}
        assert rows["cpu_cores"].verdict == "pass"
        # 176 threads are not 176 cores: only the hyperthreads reach an order of 96 cores
        rows = {c.name: c for c in acceptance.evaluate(OrderSpec(cpu_cores=96), facts)}
        assert rows["cpu_cores"].verdict in ("warn", "fail")


def test_gb200_nvlink_listing_values() -> None:
    # GPU 0: links 0-17 at 53.125 GB/s; GPU 1: links 0 and 1 at 53.125 GB/s, then `...`
    status = parse_nvlink_status(read(GB200))
    assert [(g.index, g.name, g.active_links, g.total_links) for g in status.gpus] == [
        (0, "NVIDIA GB200", 18, 18),
        (1, "NVIDIA GB200", 2, 2),
    ]
    assert {s for g in status.gpus for s in g.speeds} == {53.125}
    # (the paste's own `...` is a line left out by hand, round 36: not an unread line; it ends the
    # listing, so the GPUs after GPU 1 are not known)
    assert (status.warnings, status.elided, status.complete) == ((), "...", False)


def test_r6_f1_nvlink_listing_cut_short_is_not_links_down() -> None:
    """R6-F1: GPU 1's links 2-17 are not printed (the paste elided them with `...`), none is
    printed `<inactive>`: no evidence of a link down, so unverified, never a fail."""
    for facts in (live(GB200), saved(GB200)):
        c = {x.name: x for x in fabric_health.health_checks(facts)}["nvlink_links"]
        assert c.verdict == "unverified", c
        assert "GPU 1 (2 of 18 links listed" in c.actual


def test_r6_f1_a_link_printed_inactive_still_fails() -> None:
    """The fix leaves real faults alone: a link printed `<inactive>` fails even in a listing
    that is short of links too."""
    text = read(GB200).replace("Link 1: 53.125 GB/s\n...", "Link 1: <inactive>\n...")
    facts = parse_facts({"nvidia_nvlink": ProbeOutput(text, "", 0)})
    c = {x.name: x for x in fabric_health.health_checks(facts)}["nvlink_links"]
    assert c.verdict == "fail" and "inactive link(s) 1" in c.actual


def test_r6_f2_nvlink_listing_with_elision_is_recognised_offline() -> None:
    """R6-F2: `invoke facts` called the pasted `nvlink -s` (a valid listing ending in the
    paste's own `...`) "not a recognised command output"."""
    raw = offline.load_outputs([str(REAL / GB200)])
    assert "nvidia_nvlink" in raw and raw["nvidia_nvlink"].exit_code == 0


def test_r6_f3_an_unreadable_lscpu_is_no_evidence_of_too_few_cores() -> None:
    """lscpu ran but printed nothing readable (not installed: exit 127; an error line) and the
    usable CPU count is unknown: cpu_cores is unverified, never a fail from absence."""
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.host_rules import rule_cpu

    said = {
        "unknown: lscpu is not installed (sh: 1: lscpu: not found)": ProbeOutput(
            "", "sh: 1: lscpu: not found", 127
        ),
        "unknown: lscpu gave no readable output": ProbeOutput("lscpu: failed\n", "", 1),
    }
    for actual, out in said.items():
        facts = parse_facts({"lscpu": out})
        assert facts.cpu is None
        check = rule_cpu(OrderSpec(cpu_cores=64), facts)
        assert (check.verdict, check.actual) == ("unverified", actual)


def test_r6_f4_a_topo_matrix_cut_short_is_no_evidence_of_its_links() -> None:
    """A real 8-GPU all-NVLink matrix cut after GPU3's row (a paste of its first rows), or
    inside a row: the GPUs and links not printed are unknown, so an NVLink order is unverified,
    neither a pass on the rows there nor a fail on an empty cell; the whole matrix passes."""
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.interconnect_rule import rule_interconnect

    text = (REAL / "nvidia-smi-topo-m__a100__8gpu-17nic-bond__gpu-numa-id.txt").read_text()
    lines = text.splitlines()
    gpu4 = next(i for i, line in enumerate(lines) if line.startswith("GPU4"))
    order = OrderSpec(interconnect="nvlink")

    def judged(topo_text: str) -> tuple[str, str]:
        check = rule_interconnect(order, parse_facts({"nvidia_topo": ProbeOutput(topo_text, "", 0)}))
        return check.verdict, check.actual

    assert judged(text)[0] == "pass"
    cut = "\n".join(lines[:gpu4]) + "\n"
    assert judged(cut) == (
        "unverified",
        "unknown: the nvidia-smi topo -m matrix is cut after GPU3's row (4 of its 8 GPU rows read)",
    )
    assert (
        "the matrix ends before the row of GPU4, GPU5, GPU6, GPU7"
        in parse_facts({"nvidia_topo": ProbeOutput(cut, "", 0)}).topology.warnings[-1]
    )
    inside = "\n".join(lines[:gpu4]) + "\n" + lines[gpu4][:12] + "\n"
    assert judged(inside)[0] == "unverified"
