"""What the gpu_health rules conclude from an nvidia-smi output cut short: never a verdict milder
than the whole output could give. A fail read stays a fail; a pass or a warn where the part cut
away could hold worse (a later field of the record, a later GPU, the rest of a process list) is
unverified (steps/checks/gpu_health/step.py `_no_milder`). Real whole `-q` and `-q -x`
captures, cut after many of their lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health
from gpuonboard.steps.checks.gpu_health.step import RULE_PARTS, cut_read_whole
from gpuonboard.steps.checks.gpu_health.usage import CUT_LIST

REAL = Path(__file__).parents[4] / "fixtures" / "real"

# every real `-q` and `-q -x` of a whole box (a view of some GPUs, `1of`, and a capture already
# cut are left out: their whole is not known)
WHOLE = sorted(
    p.name for p in REAL.glob("nvidia-smi-q__*.txt") if "1of" not in p.name and "cut" not in p.name
) + sorted(p.name for p in REAL.glob("nvidia-smi-q-x__*.xml") if "1of" not in p.name)
# the cuts judged: after every 4th line (with the cases below, cut at their own lines, ~40 s)
STRIDE = 4

A10 = "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
H100_BRAKE = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.183.01__power-brake-active.txt"
RTX2080_WDDM = "nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt"


def _rows(text: str, probe: str) -> dict[str, set[str]]:
    """rule -> the verdicts of its rows, of `text` read as the live probe `probe`'s output."""
    return _judged(text, probe)[1]


def _judged(text: str, probe: str) -> tuple[Facts, dict[str, set[str]]]:
    """The facts of `text` read as the live probe `probe`'s output, and rule -> its verdicts."""
    facts = parse_facts({probe: ProbeOutput(text, "", 0)})
    out: dict[str, set[str]] = {}
    for check in gpu_health.evaluate(facts):
        out.setdefault(check.name, set()).add(check.verdict)
    return facts, out


def _probe(name: str) -> str:
    return "nvidia_smi" if name.endswith(".xml") else "nvidia_smi_q"


def _cut_after(name: str, n: int) -> str:
    """The real capture `name` cut after its first `n` lines."""
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(lines[:n])


@pytest.mark.parametrize("name", WHOLE)
def test_a_q_cut_anywhere_gives_no_verdict_milder_than_the_whole(name: str) -> None:
    """Each real whole `-q` / `-q -x` cut after every 4th line: each gpu_health row of the cut
    output gives the whole output's verdict or unverified (a fail only where the whole fails).
    Before round 28 a warn read above the cut stood where the whole fails: memory_repair of
    the A10 (remapped rows read, `Pending : Yes` cut), throttling of the 8 x H100 (GPU 2's SW
    Power Cap read, its HW Power Brake cut), foreign_processes of the RTX 2080 SUPER (a
    desktop's process read, the compute job listed after it cut)."""
    text = (REAL / name).read_text(encoding="utf-8")
    whole = _rows(text, _probe(name))
    lines = text.splitlines(keepends=True)
    for n in range(1, len(lines), STRIDE):
        facts, rows = _judged("".join(lines[:n]), _probe(name))
        for rule, verdicts in rows.items():
            milder = verdicts - _allowed(whole.get(rule, set()))
            assert not milder, (n, rule, verdicts, whole.get(rule))
            _assert_whole_where_read(facts, rule, verdicts, whole.get(rule, set()), n)


def _allowed(whole: set[str]) -> set[str]:
    """The verdicts a cut output may give of a rule the whole output gives `whole`: the same,
    unverified (a pass not known to hold), or a warning read where the whole fails (round 33: a
    warning of the GPUs read stands, "of what was read", the part cut away may hold the fail)."""
    return whole | {"unverified"} | ({"warn"} if "fail" in whole else set())


def _assert_whole_where_read(facts: Facts, rule: str, verdicts: set[str], whole: set[str], n: int) -> None:
    """Where the cut output read every GPU and, before its cut, each part of the records that
    `rule` reads (gpu_health RULE_PARTS: what can make it fail or warn), the cut output gives the
    whole output's verdict: the part cut away held nothing that rule reads."""
    if (
        facts.gpu is not None
        and rule in RULE_PARTS
        and cut_read_whole(facts, list(facts.gpu.gpus), rule, "pass")
    ):
        assert verdicts == whole, (n, rule, verdicts, whole)


# the table's records cut: each cut gives no verdict milder than the whole table's (its records
# say no part read: every verdict a cut leaves milder than the whole's is unverified)
TABLES = sorted(p.name for p in REAL.glob("nvidia-smi__*.txt"))


@pytest.mark.parametrize("name", TABLES)
def test_a_table_cut_anywhere_gives_no_verdict_milder_than_the_whole(name: str) -> None:
    """Each real plain `nvidia-smi` table cut after each of its lines: no gpu_health row gives a
    verdict milder than the whole table's (a fail only where the whole fails)."""
    text = (REAL / name).read_text(encoding="utf-8")
    whole = _rows(text, "nvidia_smi_table")
    lines = text.splitlines(keepends=True)
    for n in range(1, len(lines)):
        for rule, verdicts in _rows("".join(lines[:n]), "nvidia_smi_table").items():
            milder = verdicts - _allowed(whole.get(rule, set()))
            assert not milder, (n, rule, verdicts, whole.get(rule))


@pytest.mark.parametrize(
    ("name", "below", "rule", "verdict", "read"),
    [
        # memory_repair reads ECC Errors, Retired Pages and Remapped Rows: cut in the section after
        ("nvidia-smi-q__gh200-480gb__1gpu__driver550.127.05__dram-unc-1__power-limit-700of900__gls.txt",
         "    Temperature", "memory_repair", "warn", "GPU 0: 1 row(s) remapped after uncorrectable errors"),
        # pcie_link reads <pci>, the P-state, the utilisation and the clock event reasons
        ("nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml",
         "        <fbc_stats>", "pcie_link", "warn", "GPU 0"),
        # GPU 7, the last of 8 attached, cut in its Temperature: GPU 4's SW Power Cap read whole
        ("nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-later.txt",
         "    Temperature", "throttling", "warn", "GPU 4: sw_power_cap"),
    ],
)  # fmt: skip
def test_a_warning_whose_fail_parts_were_read_above_the_cut_stands(
    name: str, below: str, rule: str, verdict: str, read: str
) -> None:
    """Edit: the real capture cut two lines below the last line that starts with `below` (inside
    the section after those the rule's fail reads, every GPU attached read). Before (round 28)
    unverified, "the part cut ... may hold what fails this check", though that part holds no field
    the rule reads; now the whole output's verdict."""
    text = (REAL / name).read_text(encoding="utf-8")
    assert _rows(text, _probe(name))[rule] == {verdict}
    lines = text.splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if line.startswith(below)) + 2
    facts = parse_facts({_probe(name): ProbeOutput("".join(lines[:at]), "", 0)})
    assert facts.gpu is not None and not facts.gpu.complete
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == rule]
    assert check.verdict == verdict, check
    assert read in check.actual and "of what was read" not in check.actual, check.actual


def test_a_warning_of_a_gpu_cut_before_the_last_attached_is_of_what_was_read() -> None:
    """Edit: the real 8 x RTX 4090 `-q` cut two lines into GPU 4's Temperature: GPU 4's SW Power
    Cap was read whole, but GPUs 5-7 were not read at all: they may hold a slowdown, so the warn
    is of what was read (round 33: it stands, never demoted to unverified: a fault shown)."""
    name = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-later.txt"
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith("    Temperature")][4] + 2
    facts = parse_facts({"nvidia_smi_q": ProbeOutput("".join(lines[:at]), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "throttling"]
    assert check.verdict == "warn" and "(of what was read; " in check.actual, check


@pytest.mark.parametrize(
    ("name", "at", "rule", "read"),
    [
        # GPU 0's `Remapped Rows`: `Uncorrectable Error : 4` read, `Pending : Yes` cut (line 141)
        (A10, 141, "memory_repair", "GPU 0: 4 row(s) remapped after uncorrectable errors"),
        # GPU 2's `SW Power Cap : Active` read, its `HW Power Brake Slowdown : Active` cut
        (H100_BRAKE, 495, "throttling", "GPU 2: sw_power_cap"),
        (H100_BRAKE, 497, "throttling", "GPU 2: sw_power_cap"),
        # the Processes section: dwm.exe (C+G, a desktop's) read; later entries cut
        (RTX2080_WDDM, 243, "foreign_processes", "dwm.exe"),
        (RTX2080_WDDM, 245, "foreign_processes", "dwm.exe"),
    ],
)
def test_a_warning_read_above_a_cut_that_took_a_fail_is_of_what_was_read(
    name: str, at: int, rule: str, read: str
) -> None:
    """Edit: the real capture cut after line `at`. The whole output fails `rule`; the cut one
    warns on what was read above the cut, naming it "of what was read" and saying in its detail
    that the part cut away may hold the fail (round 28 made it unverified; round 33: the warning
    read is a fault shown, which ranks above unverified, so it stands)."""
    whole = _rows((REAL / name).read_text(encoding="utf-8"), _probe(name))
    assert whole[rule] == {"fail"}
    facts = parse_facts({_probe(name): ProbeOutput(_cut_after(name, at), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == rule]
    assert check.verdict == "warn", check
    assert read in check.actual, check.actual
    assert "(of what was read; incomplete probe: " in check.actual or CUT_LIST in check.actual
    assert "; what was read warns, and the part cut from this output" in check.detail, check.detail


def test_a_fail_read_above_a_cut_stays_a_fail() -> None:
    """Edit: the real 8 x H100 power-brake `-q` cut after GPU 2's `HW Power Brake Slowdown :
    Active` (line 498): the fail read is the box's (the part cut away can only add to it)."""
    facts = parse_facts({"nvidia_smi_q": ProbeOutput(_cut_after(H100_BRAKE, 498), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "throttling"]
    assert check.verdict == "fail", check
    assert "hw_power_brake_slowdown" in check.actual


def test_a_warning_of_a_rule_that_only_warns_stays_a_warning() -> None:
    """Edit: the real TITAN V `-q` (persistence mode Disabled: a warn, the worst that rule gives)
    cut right after its `Persistence Mode` line: the warn stands, as the whole output's."""
    name = "nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt"
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("Persistence Mode")) + 1
    whole = _rows("".join(lines), "nvidia_smi_q")
    cut = _rows("".join(lines[:at]), "nvidia_smi_q")
    assert whole["persistence_mode"] == cut["persistence_mode"] == {"warn"}


def test_a_csv_whose_rows_are_gpus_or_samples_keeps_its_warning() -> None:
    """The real unedited `-l 1` CSV of three rows (three GPUs or three samples of one, all 85 C):
    nothing was cut, every row was read: the temperature warn stands (before: unverified, saying
    a part was cut from the output)."""
    name = "nvidia-smi-query-gpu-l1__1gpu-11gb__3-samples__no-index.csv"
    facts = parse_facts({"nvidia_smi_csv": ProbeOutput((REAL / name).read_text(encoding="utf-8"), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "temperature"]
    assert check.verdict == "warn", check
    assert "85 C on CSV row 1" in check.actual


def test_a_warning_of_a_view_of_some_gpus_keeps_the_rules_advice() -> None:
    """The real A16 `-q -i 0` (1 of 4 GPUs, its link x4 Gen1): unverified (3 GPUs unread), its
    detail the rule's own advice first, then that the GPUs not read (not a part cut) may hold the
    fail, then the rerun advice (before: the cut's sentence and the rerun advice only)."""
    name = "nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt"
    facts = parse_facts({"nvidia_smi_q": ProbeOutput((REAL / name).read_text(encoding="utf-8"), "", 0)})
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    assert check.verdict == "warn" and "(of what was read; " in check.actual, check
    assert not check.detail.startswith("what was read warns"), check.detail
    assert "the GPUs this output did not read" in check.detail and "part cut" not in check.detail
    assert "rerun `invoke check`" in check.detail


@pytest.mark.parametrize(("listed", "verdict"), [(True, "warn"), (False, "warn")])
def test_a_view_of_one_gpu_keeps_its_warning_where_a_whole_listing_has_no_other(
    tmp_path: Path, listed: bool, verdict: str
) -> None:
    """A pasted session: `nvidia-smi -L` (one line naming the real H200's UUID, from its `-q`),
    then `nvidia-smi -i 0` printing the real H200 table with GPU 0's `35C` edited to `84C`. The
    view covers every GPU the listing names: the temperature warn stands (before: unverified,
    saying a part was cut). Without the `-L` the box may have GPUs the view left out: the warning
    is of what was read (round 33; before: unverified)."""
    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text(encoding="utf-8")
    table = table.replace("| N/A   35C    P0", "| N/A   84C    P0", 1)
    lines = [
        "root@box:~# nvidia-smi -L",
        "GPU 0: NVIDIA H200 (UUID: GPU-e7c560dc-cf75-7469-658e-ed0adc9be226)",
    ]
    text = "\n".join([*(lines if listed else []), "root@box:~# nvidia-smi -i 0", table, "root@box:~# "])
    (tmp_path / "session.txt").write_text(text, encoding="utf-8")
    facts = parse_facts(offline.load_outputs([str(tmp_path / "session.txt")]))
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "temperature"]
    assert check.verdict == verdict, check
    assert "84 C on GPU 0" in check.actual


def test_a_record_cut_in_one_format_read_whole_by_another_keeps_the_warning(tmp_path: Path) -> None:
    """A folder of the real 2 x A100 table and CSV query, edited: GPU 0's temperature 84 in both
    (table `38C`, CSV `39`), the table cut after `| N/A   37C    P0` in GPU 1's second row. The
    whole CSV read both GPUs' temperatures (84, 37): the warn stands (before: unverified, the
    table's cut counted though the CSV read every GPU whole)."""
    a100 = "a100-pcie-40gb__2gpu__driver555.42.02"
    table = (
        (REAL / f"nvidia-smi__{a100}.txt")
        .read_text(encoding="utf-8")
        .replace("| N/A   38C", "| N/A   84C", 1)
    )
    table = table[: table.index("| N/A   37C    P0") + len("| N/A   37C    P0")]
    csv = (REAL / f"nvidia-smi-query-gpu__{a100}.csv").read_text(encoding="utf-8")
    csv = csv.replace("92.00.25.00.08, 39,", "92.00.25.00.08, 84,", 1)
    (tmp_path / "nvidia-smi.txt").write_text(table, encoding="utf-8")
    (tmp_path / "query.csv").write_text(csv, encoding="utf-8")
    facts = parse_facts(offline.load_outputs([str(tmp_path)]))
    assert facts.gpu is not None and [g.temperature_c for g in facts.gpu.gpus] == [84, 37]
    [check] = [c for c in gpu_health.evaluate(facts) if c.name == "temperature"]
    assert check.verdict == "warn", check
