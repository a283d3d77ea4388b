"""lscpu before util-linux 2.38 prints its CPU counts among its first lines, before Vendor ID and
Model name: one set for the whole box, no CPU type block to be cut inside. An s390x LPAR's
(kimchi-project/gingerbase#42: `Socket(s) per book:` and `Book(s):`, no `Socket(s):`), its paste
ending at `Vendor ID:`, was said "cut short inside a CPU type's block, before its core count"
(measure31b 13): untrue, and its cores are known from CPU(s) / Thread(s) per core."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.facts.cpu import CpuInfo, parse_lscpu

REAL = Path(__file__).parents[2] / "fixtures" / "real"
S390X = "lscpu__s390x-lpar-8cpu-smt2__no-socket-line-books__paste-ends-at-vendor-id__gingerbase-42.txt"


def test_counts_before_vendor_id_are_no_type_block_cut_short() -> None:
    info = parse_lscpu((REAL / S390X).read_text())
    assert info == CpuInfo("s390x", None, None, 8, 2, 8, None, ("lscpu has no 'Socket(s)' field",))
    assert info.cut is None


def test_a_new_layout_cut_inside_its_type_block_still_says_so() -> None:
    """util-linux 2.38+'s flat layout heads each type's block with Vendor ID and Model name: an
    output ending after `Core(s) per socket:` there is cut inside that block."""
    text = (REAL / "lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt").read_text()
    cut = text[: text.index("\n", text.index("Core(s) per socket")) + 1]
    # (round 34: its Core(s) per socket read, the socket count is what the cut took)
    assert parse_lscpu(cut).cut == (
        "it ends inside a CPU type's block, before its socket count (Socket(s); its Core(s) per"
        " socket, 10, read)"
    )


def test_an_old_layout_cut_among_its_counts_is_still_cut() -> None:
    """The s390x output cut right after its `Core(s) per socket:` line: nothing follows it."""
    text = (REAL / S390X).read_text()
    cut = text[: text.index("\n", text.index("Core(s) per socket")) + 1]
    assert parse_lscpu(cut).cut is not None


@pytest.mark.parametrize(("cores", "verdict"), [(4, "pass"), (5, "unverified")])
def test_the_indented_session_is_judged_from_cpus_over_threads(
    tmp_path: Path, cores: int, verdict: str
) -> None:
    """As posted: indented under its `[root@zs95k4 ~]# lscpu` prompt. 8 online CPUs of 2 threads
    a core hold at least 4 cores; 5 is not known."""
    body = "".join(f"            {line}\n" for line in (REAL / S390X).read_text().splitlines())
    (tmp_path / "session.txt").write_text("            [root@zs95k4 ~]# lscpu\n" + body)
    (tmp_path / "order.yml").write_text(f"cpu_cores: {cores}\n")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json"]
    r = subprocess.run(
        [*cmd, str(tmp_path / "session.txt"), "--order", str(tmp_path / "order.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["cpu_cores"]["verdict"] == verdict, rules["cpu_cores"]
    assert "cut short" not in rules["cpu_cores"]["actual"] + rules["cpu_cores"]["detail"]
    if verdict == "pass":
        assert rules["cpu_cores"]["actual"].endswith("at least 4 cores (8 CPUs, 2 per core)")


def test_every_cut_of_the_s390x_lscpu_keeps_its_verdict_or_is_unverified() -> None:
    """As test_host_cut_r9 asks of the whole captures (this one is a paste cut at `Vendor ID:`,
    left out there): no cut passes or fails what the whole does not."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.host_rules import rule_cpu

    text = (REAL / S390X).read_text()
    for cores in (4, 5, 8):
        order = OrderSpec(cpu_cores=cores)
        whole = rule_cpu(order, parse_facts({"lscpu": ProbeOutput(text, "", 0)})).verdict
        moved = [
            (k, check.verdict)
            for k in range(1, len(text))
            if (check := rule_cpu(order, parse_facts({"lscpu": ProbeOutput(text[:k], "", 0)}))).verdict
            not in (whole, "unverified")
        ]
        assert moved == [], (cores, whole, moved[:3])
