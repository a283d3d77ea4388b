"""Host outputs cut short (cut sweep 8, classes I, J, K and the unclosed `lsblk -J`), each cut in
the test from a real capture (tests/fixtures/real/SOURCES.md). A cut output is an incomplete
probe: what was cut off is unknown (`unverified`), never a pass and never a hardware claim.
I: an lscpu of a part with two core types (GB10) cut after the first type's block read as 10
cores, a "hyperthreads only" warning where the box has the 20 ordered; J: nproc cut inside its
number (`1` of `16\\n`) failed the order as "1 logical CPUs"; K: a df cut inside its last row's
mount point (`/mnt` of `/mnt/nvme0n1p1`) warned that the ordered mount "lies inside the mount
/mnt"; an unclosed `lsblk -J` read as no block device at all, and nothing said so. Each test
fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts import disks
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import DataDiskSpec, OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.host_rules import rule_cpu, rule_data_disk

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GB10 = "lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt"
NPROC = "nproc__h200-vm.txt"
LSCPU_VM = "lscpu__intel-xeon-16vcpu__h200-vm.txt"
MI300X = "df-h__8gpu-server-mi300x.txt"
DF_VM, LSBLK_VM = "df-P-B1__h200-vm.txt", "lsblk-J-b__h200-vm.json"
# the real plain lscpu captures, whole (not a paste that ended at its last CPU type field)
# (not an s390 lscpu, whose books stand where Socket(s) does: a floor of cores, no exact count;
# facts/test_cpu.py and api/test_host_readers_r35.py judge it)
LSCPU_TEXT = sorted(
    p.name for p in REAL.glob("lscpu__*.txt") if "__paste-ends-at-" not in p.name and "__s390-" not in p.name
)
# the real df captures with sizes, whole (not the one saved cut mid-line, nor `df -i`)
DF_FILES = sorted(
    p.name for p in REAL.glob("df*") if not p.name.startswith("df-i_") and p.read_text().endswith("\n")
)
LSBLK_FILES = sorted(p.name for p in REAL.glob("lsblk-J*.json"))


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def facts_of(**outputs: str) -> Facts:
    return parse_facts({kind: ProbeOutput(text, "", 0) for kind, text in outputs.items()})


def cpu(cores: int, **outputs: str) -> Check:
    return rule_cpu(OrderSpec(cpu_cores=cores), facts_of(**outputs))


def disk(mount: str, size: int, **outputs: str) -> Check:
    return rule_data_disk(OrderSpec(data_disk=DataDiskSpec(mount, size)), facts_of(**outputs), 0.03)


# --- I: lscpu of a part with two core types, cut after the first type's block -----------------


def test_i_lscpu_cut_after_the_first_core_type_is_unverified() -> None:
    text = real(GB10)
    assert cpu(20, lscpu=text).verdict == "pass"  # 10 Cortex-X925 + 10 Cortex-A725
    cut = text[:751]  # the Cortex-X925 block whole (its Flags), the Cortex-A725 one cut off
    assert "Cortex-X925" in cut and "Cortex-A725" not in cut and cut.endswith("\n")
    facts = facts_of(lscpu=cut)
    assert facts.cpu is not None and facts.cpu.physical_cores is None  # not 10: a type is missing
    assert facts.cpu.logical_cpus == 20
    check = rule_cpu(OrderSpec(cpu_cores=20), facts)
    assert check.verdict == "unverified" and "hyperthreads" not in check.detail
    assert check.actual == "? cores / 20 threads (Cortex-X925): the lscpu output is cut short"
    assert "10 of its 20 CPUs" in check.detail and "save the whole `lscpu`" in check.detail
    assert cpu(21, lscpu=cut).verdict == "fail"  # 20 CPUs, hyperthreads included, are read whole


def test_i_every_cut_of_a_real_lscpu_keeps_its_verdict_or_is_unverified() -> None:
    """Every cut of every real plain lscpu (mid-line and at line ends; `CPU(s): 6` of 64 is a
    cut too): the whole's verdict or unverified, for an order met by cores and one met by CPUs
    only. The sign of a cut (the types read hold fewer CPUs than CPU(s), nothing lscpu prints
    after them follows) is in no whole capture: the 36-of-40-offline Xeon, SMT 4 POWER9, ARM
    clusters, zh_CN, JSON; nor in one that lost only its final newline."""
    for name in LSCPU_TEXT:
        text = real(name)
        whole = facts_of(lscpu=text).cpu
        assert whole is not None and whole.logical_cpus and whole.physical_cores, name
        assert not [w for w in whole.warnings if "cut short" in w], name
        assert facts_of(lscpu=text.rstrip("\n")).cpu == whole, name
        for cores in sorted({whole.physical_cores, whole.logical_cpus}):
            order = OrderSpec(cpu_cores=cores)
            verdict = rule_cpu(order, facts_of(lscpu=text)).verdict
            moved = [
                (k, check.verdict, check.actual)
                for k in range(1, len(text))
                if (check := rule_cpu(order, facts_of(lscpu=text[:k]))).verdict not in (verdict, "unverified")
            ]
            assert moved == [], (name, cores, verdict, moved[:3])
    info = facts_of(lscpu=real("lscpu-J__intel-xeon-16vcpu__h200-vm.json")).cpu
    assert info is not None and info.physical_cores == 16


# --- J: nproc cut inside its number --------------------------------------------------------


def test_j_nproc_cut_mid_number_is_not_a_cpu_count() -> None:
    text = real(NPROC)
    assert text == "16\n" and facts_of(nproc=text).nproc == 16
    for cut in (text[:1], text[:2]):  # `1`, and `16` without nproc's newline (it may be `160`)
        facts = facts_of(nproc=cut)
        assert facts.nproc is None
        check = rule_cpu(OrderSpec(cpu_cores=16), facts)
        assert check.verdict == "unverified" and "logical CPUs" not in check.actual
        assert f"the nproc output ({cut}) ends without the newline" in check.detail
        assert "may be cut short" in check.detail


def test_j_a_cut_nproc_with_a_whole_lscpu_is_no_pass_and_no_fail() -> None:
    """nproc only lowers the CPUs this login may use: unread, a pass is not known, and a fail
    it might cause is not known either (whole: 16 of 16 usable, pass)."""
    lscpu, nproc = real(LSCPU_VM), real(NPROC)
    assert cpu(16, lscpu=lscpu, nproc=nproc).verdict == "pass"
    check = cpu(16, lscpu=lscpu, nproc=nproc[:1])
    assert (check.verdict, check.actual) == (
        "unverified",
        "16 cores / 16 threads (Intel(R) Xeon(R) Processor)",
    )
    assert cpu(17, lscpu=lscpu, nproc=nproc[:1]).verdict == "fail"  # 16 CPUs in all: nproc aside


def test_j_a_saved_nproc_file_without_its_newline_is_unverified(tmp_path: Path) -> None:
    (tmp_path / NPROC).write_text(real(NPROC)[:1])
    facts = parse_facts(offline.load_outputs([str(tmp_path / NPROC)]))
    check = next(c for c in offline.judge(facts, OrderSpec(cpu_cores=16)) if c.name == "cpu_cores")
    assert check.verdict == "unverified" and "may be cut short" in check.detail
    (tmp_path / NPROC).write_text(real(NPROC))  # the whole capture: read as before
    assert parse_facts(offline.load_outputs([str(tmp_path / NPROC)])).nproc == 16


# --- K: df cut inside its last row's mount point --------------------------------------------


def test_k_df_cut_inside_the_last_mount_point_is_unverified() -> None:
    text = real(MI300X)
    whole = disk("/mnt/nvme0n1p1", 14 * 10**12, df=text)  # (df -h: 14T is 13-14 TiB)
    assert (whole.verdict, whole.actual) == ("pass", "/dev/nvme2n1p1 at /mnt/nvme0n1p1, 15.4 TB")
    cut = text[:381]  # `/dev/nvme2n1p1 14T 28K 14T 1% /mnt` of `/mnt/nvme0n1p1`
    assert cut.endswith("1% /mnt") and text[381:].startswith("/nvme0n1p1\n")
    check = disk("/mnt/nvme0n1p1", 14 * 10**12, df=cut)
    assert check.verdict == "unverified" and "lies inside" not in check.detail
    assert "(/dev/nvme2n1p1 at /mnt)" in check.actual and "may be cut short" in check.detail
    # a mount on another row than the possibly cut one is judged: its row is whole
    assert disk("/boot/efi", 10**9, df=cut).verdict == disk("/boot/efi", 10**9, df=text).verdict


def _rows(text: str) -> list[tuple[int, str]]:
    """(line number, mount point) of each df row: its text after the `Use%` cell."""
    rows = []
    for i, line in enumerate(text.splitlines()):
        cells = line.split()
        at = next((j for j, c in enumerate(cells) if c.endswith("%") and c[:-1].isdecimal()), None)
        if at is not None and at + 1 < len(cells):
            rows.append((i, " ".join(cells[at + 1 :])))
    return rows


def test_k_every_cut_inside_a_real_df_row_judges_it_or_is_unverified() -> None:
    """Every cut inside a row of every real df (no final newline), for an order of each mount
    point and of a path inside it, cut in each row that holds the order (its own, a mount
    above it, /): the whole's verdict or unverified. (A cut in a row before the order's, with
    the order's row wholly cut off, is the class a cut at a line end shares: df prints no
    trailer, so the absence of those rows cannot be told from the end of a paste that lost its
    newline.) A whole df that lost only its final newline keeps the verdict of a mount at
    exactly the ordered path on another row than the last: only that row's mount point is
    unsure."""
    for name in DF_FILES:
        text = real(name)
        rows = _rows(text)
        lines = text.split("\n")
        starts = [sum(len(line) + 1 for line in lines[:n]) for n in range(len(lines))]
        for _, point in rows:
            for path in (point, point.rstrip("/") + "/sub"):
                verdict = disk(path, 10**9, df=text).verdict
                holding = [n for n, p in rows if path == p or path.startswith(p.rstrip("/") + "/")]
                moved = [
                    (k, check.verdict, check.actual)
                    for n in holding
                    for k in range(starts[n] + 1, starts[n] + len(lines[n]) + 1)
                    if (check := disk(path, 10**9, df=text[:k])).verdict not in (verdict, "unverified")
                ]
                assert moved == [], (name, path, verdict, moved[:3])
        if rows[-1][1] == "/":
            continue  # (the last row read as / decides the system disk of every order)
        for _, point in rows[:-1]:
            if point != "/":
                kept = disk(point, 10**9, df=text.rstrip("\n")).verdict
                assert kept == disk(point, 10**9, df=text).verdict, (name, point)


# --- lsblk -J not closed ------------------------------------------------------------------


def test_an_unclosed_lsblk_json_says_it_could_not_be_read() -> None:
    """Every real `lsblk -J` cut short: the data disk is judged as with no lsblk (df's kernel
    partition names), never from a part of the tree, and the check says the lsblk output could
    not be read and what to save."""
    df = real(DF_VM)
    for name in LSBLK_FILES:
        text = real(name)
        assert disks.parse_lsblk_json(text), name  # whole: its devices
        for keep in (0.1, 0.4, 0.7, 0.99):
            cut = text[: int(len(text) * keep)]
            for path in ("/data", "/dev/shm"):
                alone, check = disk(path, 10**9, df=df), disk(path, 10**9, df=df, lsblk=cut)
                assert (check.verdict, check.actual) == (alone.verdict, alone.actual)
                assert check.detail.startswith(alone.detail)
                assert "the lsblk output could not be read (its JSON is cut short or damaged" in check.detail
                assert "save `lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL`" in check.detail
    assert "lsblk" not in disk("/data", 10**9, df=df, lsblk=real(LSBLK_VM)).detail


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("lsblk-J*.json")))
def test_a_saved_lsblk_json_cut_short_is_refused_naming_the_file(tmp_path: Path, name: str) -> None:
    text = (REAL / name).read_text()
    whole = tmp_path / "whole" / name
    whole.parent.mkdir()
    whole.write_text(text)
    offline.load_outputs([str(whole)])  # the whole capture is read
    cut = tmp_path / name
    cut.write_text(text[: len(text) * 2 // 3])
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(cut)])
    said = str(err.value)
    assert said.startswith(f"{cut}: this lsblk -J output cannot be read (its JSON is cut short or damaged: ")
    assert said.endswith(
        "); the file is cut short or damaged: save `lsblk -J -b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL`"
        " of the box again."
    )
