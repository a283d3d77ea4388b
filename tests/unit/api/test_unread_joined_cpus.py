"""Several saved answers of one box to what its CPUs are (`lscpu`, `lscpu -J`, `cat
/proc/cpuinfo`) are read together where they agree (the CPUs online, the cores, the CPUs
offline, where both say them): the whole lscpu is judged before a cut one and before a
/proc/cpuinfo, the folder noted; answers that disagree are refused naming both readings. All
were refused as "a second lscpu output" (exit 2). The H200 VM's `lscpu` and `lscpu -J` (one box,
16 CPUs, 16 cores) and jc's /proc/cpuinfo of another box (2 CPUs): tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LSCPU = "lscpu__intel-xeon-16vcpu__h200-vm.txt"
LSCPU_J = "lscpu-J__intel-xeon-16vcpu__h200-vm.json"
CPUINFO = "proc-cpuinfo__i5-8279u__vm-2socket-1core__jc.txt"


def test_lscpu_beside_lscpu_json_of_one_box_is_judged(tmp_path: Path) -> None:
    files = {name: (REAL / name).read_text() for name in (LSCPU, LSCPU_J)}
    facts, by_rule = judged_box(tmp_path, files, "cpu_cores: 16\n")
    assert facts.cpu is not None and (facts.cpu.logical_cpus, facts.cpu.physical_cores) == (16, 16)
    assert by_rule["cpu_cores"].verdict == "pass", by_rule["cpu_cores"]


def test_a_whole_lscpu_is_judged_before_a_cut_one(tmp_path: Path) -> None:
    """The `lscpu -J` cut after its first 300 characters in-test (a JSON that does not close,
    nothing read of it) beside the whole plain lscpu: the whole one is judged, 16 cores pass."""
    files = {LSCPU_J: (REAL / LSCPU_J).read_text()[:300], LSCPU: (REAL / LSCPU).read_text()}
    _, by_rule = judged_box(tmp_path, files, "cpu_cores: 16\n")
    assert by_rule["cpu_cores"].verdict == "pass", by_rule["cpu_cores"]


def test_answers_that_disagree_are_refused_naming_both(tmp_path: Path) -> None:
    files = {name: (REAL / name).read_text() for name in (LSCPU, CPUINFO)}
    with pytest.raises(UsageError) as err:
        judged_box(tmp_path, files, "cpu_cores: 16\n")
    said = str(err.value)
    assert "2 CPUs online, 2 cores (/proc/cpuinfo)" in said and "16 CPUs, 16 cores (lscpu)" in said, said


def test_a_proc_cpuinfo_that_counts_the_cores_is_judged_before_an_lscpu_that_does_not(tmp_path: Path) -> None:
    """The Spanish i7-4790K lscpu (8 CPUs, all online) with its threads-per-core, cores-per-socket
    and socket lines cut out in-test (no core count), beside the Hyper-V Ryzen VM's /proc/cpuinfo
    (8 CPUs, 2 packages x 2 cores: two boxes' captures, agreeing on the 8 online CPUs): the lscpu
    was judged first, "the core count is not in this lscpu output", unverified; now the
    /proc/cpuinfo, which counts the cores, is judged: 4 cores pass."""
    lines = (REAL / "lscpu__es-es__i7-4790k__socket-label-without-colon.txt").read_text().splitlines(True)
    files = {
        "lscpu.txt": "".join(lines[:6] + lines[9:]),
        "cpuinfo.txt": (
            REAL / "proc-cpuinfo__amd-ryzen-3-4100__hyperv-vm-2socket-2core-smt__ollama-7287.txt"
        ).read_text(),
    }
    facts, by_rule = judged_box(tmp_path, files, "cpu_cores: 4\n")
    assert facts.cpu is not None and facts.cpu.physical_cores == 4, facts.cpu
    assert by_rule["cpu_cores"].verdict == "pass", by_rule["cpu_cores"]
