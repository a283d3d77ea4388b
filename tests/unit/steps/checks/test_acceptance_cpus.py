"""cpu_cores against real lscpu captures: offline CPUs and CPU sets of SMT hosts.

lscpu's `CPU(s)` counts offline CPUs too, and `Socket(s)` x `Core(s) per socket` counts the
cores of the whole box; a box booted with most CPUs offline passed an order it cannot run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks.acceptance import evaluate

REAL = Path(__file__).parents[3] / "fixtures" / "real"
# real capture: 2 x Xeon E5-2630 v4 (20 cores, 40 CPUs), CPUs 4-39 offline
OFFLINE = "lscpu__xeon-e5-2630v4__2socket__36-of-40-cpus-offline.txt"
EPYC = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"  # 64 cores, no SMT
XEON_VM = "lscpu__intel-xeon-16vcpu__h200-vm.txt"


def _facts(lscpu: str, nproc: str | None = None) -> object:
    raw = {"lscpu": ProbeOutput((REAL / lscpu).read_text(), "", 0)}
    if nproc is not None:
        raw["nproc"] = ProbeOutput(nproc + "\n", "", 0)
    return parse_facts(raw)


def _cpu(cores: int, facts: object) -> object:
    return evaluate(OrderSpec(cpu_cores=cores), facts)[-1]  # type: ignore[arg-type]


def test_offline_cpus_are_not_delivered_cores() -> None:
    """Offline (`invoke facts` of a saved lscpu, no nproc): 4 online CPUs do not meet 20 cores."""
    check = _cpu(20, _facts(OFFLINE))
    assert check.name == "cpu_cores" and check.verdict == "fail"
    assert "4 online" in check.actual
    assert check.detail.startswith("only 4 of 40 CPUs online (36 offline")


def test_offline_cpus_named_as_the_reason_in_a_live_run() -> None:
    """Live: nproc (4) agrees with the online count; the reason given is the offline CPUs."""
    check = _cpu(8, _facts(OFFLINE, nproc="4"))
    assert check.verdict == "fail" and "offline" in check.detail and "affinity" not in check.detail


def test_an_order_the_online_cpus_meet_for_certain_still_passes() -> None:
    """4 online CPUs of a host with 2 threads per core (40 CPUs, 20 cores) hold at least 2
    cores: 2 pass; 4 may be two cores' threads, a warning (see test_blocked_views)."""
    assert _cpu(2, _facts(OFFLINE)).verdict == "pass"
    assert _cpu(4, _facts(OFFLINE)).verdict == "warn"


def test_boxes_with_every_cpu_online_are_unchanged() -> None:
    assert _cpu(64, _facts(EPYC)).verdict == "pass"
    assert _cpu(16, _facts(XEON_VM, nproc="16")).verdict == "pass"


def test_too_few_cores_fails_with_advice() -> None:
    check = _cpu(128, _facts(EPYC))
    assert check.verdict == "fail" and "ask the vendor" in check.detail


def _smt_lscpu() -> str:
    """The real EPYC capture as that box prints it with SMT on (2 threads per core, 128 CPUs):
    only the three counts lscpu derives from SMT change."""
    text = (REAL / EPYC).read_text()
    for old, new in (
        ("Thread(s) per core:   1", "Thread(s) per core:   2"),
        ("CPU(s):                   64", "CPU(s):                   128"),
        ("On-line CPU(s) list:    0-63", "On-line CPU(s) list:    0-127"),
    ):
        assert old in text
        text = text.replace(old, new)
    return text


def test_a_cpu_set_of_an_smt_host_may_be_hyperthreads() -> None:
    """A container pinned to 16 of 128 CPUs on a 64-core SMT host: the 16 may be both threads of
    8 cores, so 16 ordered cores are not met for certain (README: only hyperthreads -> warn)."""
    facts = parse_facts({"lscpu": ProbeOutput(_smt_lscpu(), "", 0), "nproc": ProbeOutput("16\n", "", 0)})
    check = _cpu(16, facts)
    assert check.verdict == "warn" and "hyperthreads" in check.detail and "as few as 8 cores" in check.detail
    assert _cpu(8, facts).verdict == "pass"  # 16 threads hold at least 8 cores
    assert _cpu(17, facts).verdict == "fail"


def test_nproc_alone_says_what_is_known_and_what_to_save(tmp_path: Path) -> None:
    """Only `nproc` given (our H200 VM's `16`): the logical CPUs this login may use, threads
    rather than cores, so at most a warning, and the detail says to save lscpu (it said
    "lscpu unavailable" with no detail)."""
    from ...offline_judge import details, verdicts

    real = Path(__file__).parents[3] / "fixtures" / "real" / "nproc__h200-vm.txt"
    text = real.read_text()
    assert verdicts(tmp_path, "nproc.txt", text, "cpu_cores: 8")["cpu_cores"] == (
        "warn",
        "16 logical CPUs (no lscpu)",
    )
    assert details(tmp_path, "nproc.txt", text, "cpu_cores: 8")["cpu_cores"] == (
        "only the logical CPUs this login may use are known (nproc): threads, not cores; save"
        " `lscpu` of the box to count its cores"
    )
    assert verdicts(tmp_path, "nproc.txt", text, "cpu_cores: 32")["cpu_cores"][0] == "fail"


def test_offline_cpus_are_said_without_a_core_count_of_part_of_them(tmp_path: Path) -> None:
    """lscpu counts cores over the online CPUs or over all, by version: "2 cores / 4 threads, 2
    online" was said of 4 single-thread cores with 2 offline (round 11). A real 40-CPU Xeon
    with 36 offline: the CPUs and how many are online."""
    from ...offline_judge import verdicts

    name = "lscpu__xeon-e5-2630v4__2socket__36-of-40-cpus-offline.txt"
    text = (Path(__file__).parents[3] / "fixtures" / "real" / name).read_text()
    assert verdicts(tmp_path, name, text, "cpu_cores: 20")["cpu_cores"] == (
        "fail",
        "40 CPUs (Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz), 4 online",
    )


@pytest.mark.parametrize(
    ("name", "cores", "verdict"),
    [
        # 1 x i7-4790K, 4 cores, 2 threads each: util-linux's Spanish `«Socket(s)»` has no colon
        ("lscpu__es-es__i7-4790k__socket-label-without-colon.txt", 5, "warn"),
        # 2 x Xeon Gold 6248 (4 cores each in this KVM guest), util-linux 2.37's nested layout
        ("lscpu__es-es__xeon-gold-6248__2socket-kvm__util-linux-2.37-nested__rocky-9.1.txt", 8, "pass"),
    ],
)
def test_a_spanish_lscpu_gives_its_cores(tmp_path: Path, name: str, cores: int, verdict: str) -> None:
    """Real Spanish lscpu: `Modelo:` (the model number, `Model:`) was read as a second CPU type's
    name (Galician's "Modelo" for "Model name:" in the label table) and `«Socket(s)»` without
    its colon as the wrapped rest of the line before: the cores unread, unverified (a 5-core
    order on 4 cores of 8 threads, an 8-core order on 8 cores). The cores are read."""
    from ...offline_judge import verdicts

    text = (Path(__file__).parents[3] / "fixtures" / "real" / name).read_text()
    assert verdicts(tmp_path, name, text, f"cpu_cores: {cores}")["cpu_cores"][0] == verdict
