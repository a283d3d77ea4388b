"""What an nvidia-smi output cut short still proves, section by section and field by field: a
cut after every GPU's record, inside the process list that follows them, keeps the GPU facts
whole (`GpuReport.complete`) and leaves the process lists open (`GpuInfo.processes_open`); a
cut inside a GPU's record marks that record (`GpuInfo.record_cut`), and a field of it is whole
where a whole record of another format read it in a GPU set a whole listing counts
(`GpuReport.set_whole`, `gpu_agree.field_whole`). Real captures, cut at every line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gpuonboard.facts.gpu_agree import field_whole
from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.gpu_merge import merge
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.table import parse_table
from gpuonboard.facts.nvidia_smi.text_q import parse_text_q
from gpuonboard.facts.probe import ProbeOutput

from ..offline_judge import verdicts

if TYPE_CHECKING:
    from gpuonboard.inventory.model import OrderSpec

REAL = Path(__file__).parents[2] / "fixtures" / "real"

# real tables pasted cut inside their Processes table, every GPU row whole (round 26's sweep)
CUT_IN_PROCESSES = [
    "nvidia-smi__geforce-gtx-1080-ti__2gpu__driver440.82__cut-in-processes__nvidia-htop-9.txt",
    "nvidia-smi__geforce-gtx-titan-x__1gpu__driver384.111__cut-in-processes__pai-2001.txt",
    "nvidia-smi__tesla-k80__1gpu__driver384.66__cut-in-processes__nvidia-docker-476.txt",
    "nvidia-smi__tesla-p4__1gpu__driver550.135__cut-in-processes__wyoming-piper-gpu-20.txt",
]
AKASH_LIST = "nvidia-smi-L__quadro-rtx-4000__2gpu__akash-provider-configs-12.txt"
AKASH_TABLE = "nvidia-smi__quadro-rtx-4000__2gpu-cut-in-gpu1__driver535.129.03__akash-provider-configs-12.txt"
# whole real outputs cut at every line below
TABLE_8 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
TEXT_8 = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


@pytest.mark.parametrize("name", CUT_IN_PROCESSES)
def test_a_real_table_cut_in_its_processes_is_whole_in_its_gpu_rows(name: str) -> None:
    """Before: complete False (every GPU rule unverified "incomplete probe" though every GPU row
    was read). Now: complete, no GPU record cut, each GPU's process list unread and open."""
    report = parse_table((REAL / name).read_text())
    assert report.complete
    assert report.gpus and all(g.processes_open and not g.processes_known for g in report.gpus)
    assert not any(g.record_cut for g in report.gpus)
    assert any("every GPU row was read" in w for w in report.warnings)


def _cuts(text: str) -> list[str]:
    """`text` cut after each of its lines (the last one left out: that is the whole text)."""
    lines = text.splitlines(keepends=True)
    return ["".join(lines[:n]) for n in range(1, len(lines))]


def test_a_table_cut_at_every_line_is_whole_only_after_its_gpu_rows() -> None:
    """The real 8 x H100 table cut after each line: complete exactly where the cut is at or
    below the Processes table's top border after the blank line that closes the GPU table (every
    GPU row above it; round 32: it was only from its `Processes:` header on), each of 8 GPUs
    read; above it, never complete, and the last GPU read is the record the cut went through (a
    cut right after the blank line: an empty line a paste may add after any line, no sign)."""
    text = (REAL / TABLE_8).read_text()
    processes_at = next(i for i, line in enumerate(text.splitlines()) if "Processes:" in line)
    for n, cut in enumerate(_cuts(text), start=1):
        report = parse_table(cut)
        if n >= processes_at:
            assert report.complete and len(report.gpus) == 8, n
            assert all(g.processes_known or g.processes_open for g in report.gpus), n
        else:
            assert not report.complete, n
            assert not report.gpus or report.gpus[-1].record_cut, n


def test_a_q_cut_at_every_line_is_whole_only_in_its_last_records_processes() -> None:
    """The real 8 x H100 `-q` cut after each line: complete only from the last record's
    `Processes` on (8 records, as many as attached); above it, where not complete, the last
    record read is the one the cut went through."""
    text = (REAL / TEXT_8).read_text()
    lines = text.splitlines()
    last_processes = max(i for i, line in enumerate(lines) if line.startswith("    Processes"))
    for n, cut in enumerate(_cuts(text), start=1):
        report = parse_text_q(cut)
        if n > last_processes:
            assert report.complete and len(report.gpus) == 8, n
        elif report.complete:
            # cut at a record's end (`Processes : None`): fewer records than attached, read as a
            # view of some GPUs (`-q -i N`, as before: sniff names them by PCI address), or none
            assert len(report.gpus) < 8, n
        else:
            assert not report.gpus or report.gpus[-1].record_cut, n


@pytest.mark.parametrize(
    "name", sorted(p.name for p in REAL.glob("nvidia-smi-q-x__*.xml") if "1of" not in p.name)
)
def test_a_q_x_cut_at_every_line_is_whole_only_from_its_processes(name: str) -> None:
    """Every real `-q -x` of its whole box cut after each line: before the last record's
    <processes> (or <compute_processes>) no GPU record is whole (not complete); from it on the
    record is read, every other element whole, and complete, its process list open until the
    list closed and then read whole (the list's own entries, never from the part cut away).
    Inside the list, each entry that closed is read (before round 27 none was)."""
    text = (REAL / name).read_text()
    whole = parse_any(text)
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() in ("<processes>", "<compute_processes>")]
    ends = [i for i, line in enumerate(lines) if line.strip() in ("</processes>", "</compute_processes>")]
    if not starts or not ends or whole.attached_gpus != len(whole.gpus):
        pytest.skip("no process list of its own lines, or a view of some GPUs")
    for n in range(1, len(lines), max(1, len(lines) // 200)):
        report = parse_any("".join(lines[:n]))
        if n <= starts[-1]:
            assert not report.complete, n
            continue
        assert report.complete and len(report.gpus) == len(whole.gpus), n
        last, was = report.gpus[-1], whole.gpus[-1]
        assert last.temperature_c == was.temperature_c and last.name == was.name, n
        if n <= ends[-1]:
            assert last.processes_open and not last.processes_known, n
            # the entries that closed before the cut are read, each as the whole list has it
            closed = sum(1 for line in lines[starts[-1] : n] if line.strip() == "</process_info>")
            assert last.processes == was.processes[:closed], n
        else:
            assert (last.processes, last.processes_known) == (was.processes, was.processes_known), n


def _akash() -> tuple[str, str]:
    return (REAL / AKASH_LIST).read_text(), (REAL / AKASH_TABLE).read_text()


def test_a_whole_listing_beside_a_table_cut_in_a_gpu_keeps_the_names_whole() -> None:
    """akash-network/provider-configs #12: a whole `nvidia-smi -L` of 2 x Quadro RTX 4000 beside
    the table cut inside GPU 1's second row. The GPU set is whole (the listing's 2, each one of
    the table's), GPU 1's record is cut: its name is whole (from -L), its memory total is not."""
    listing, table = _akash()
    raw = {"nvidia_smi_table": ProbeOutput(table, "", 0), "nvidia_smi_list": ProbeOutput(listing, "", 0)}
    report = merge(raw, parse_any, parse_gpu_list).report
    assert report is not None
    assert not report.complete and report.set_whole
    gpu0, gpu1 = report.gpus
    assert not gpu0.record_cut and gpu1.record_cut
    assert all(field_whole(g, "name") for g in report.gpus)
    assert field_whole(gpu0, "memory_total_mib") and not field_whole(gpu1, "memory_total_mib")
    # the table alone: its GPU 1 is still the record the cut went through, and no whole listing
    # counts the set
    alone = merge({"nvidia_smi_table": ProbeOutput(table, "", 0)}, parse_any, parse_gpu_list).report
    assert alone is not None and not alone.set_whole and alone.gpus[-1].record_cut


# nvidia-smi -L (7 MIG devices on one A100) and then the table, cut by the page below its banner
# (datadog-agent#33120): the table answered the driver and CUDA versions and no GPU row
BANNER_ONLY = "transcript__nvidia-smi-L+nvidia-smi-CUT-below-banner__a100-sxm4-80gb-7mig-datadog-agent.txt"
SESSIONS = REAL.parent / "sessions"


def test_a_banner_beside_a_listing_gives_the_box_its_driver(tmp_path: Path) -> None:
    """The real session, and its two outputs saved as two files of one folder: `-L` prints no
    version and the table cut below its banner lists no GPU, and the banner's driver was dropped
    with the table: `nvidia_driver` said "driver unknown" and asked to save the table's header,
    which was saved. The banner is the box's answer: "driver 535.216.01, CUDA 12.2", a pass (the
    GPU set is `-L`'s, whole)."""
    text = (SESSIONS / BANNER_ONLY).read_text(encoding="utf-8")
    assert verdicts(tmp_path, BANNER_ONLY, text)["nvidia_driver"] == ("pass", "driver 535.216.01, CUDA 12.2")
    listing, table = text.split("\n\n", 1)
    raw = {
        "nvidia_smi_list": ProbeOutput(listing.split("\n", 1)[1] + "\n", "", 0),
        "nvidia_smi_table": ProbeOutput(table.split("\n", 1)[1], "", 0),
    }
    report = merge(raw, parse_any, parse_gpu_list).report
    assert report is not None and (report.driver_version, report.cuda_version) == ("535.216.01", "12.2")
    assert len(report.gpus) == 1 and report.complete


def test_a_banner_of_another_driver_beside_a_listing_disagrees() -> None:
    """The same cut table beside a whole real `-q` of another box (driver 580.159.04): two
    drivers, named with their formats, never the listing's driver kept as the box's only one."""
    table = (SESSIONS / BANNER_ONLY).read_text(encoding="utf-8").split("\n\n", 1)[1].split("\n", 1)[1]
    q = (REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt").read_text(encoding="utf-8")
    raw = {"nvidia_smi_q": ProbeOutput(q, "", 0), "nvidia_smi_table": ProbeOutput(table, "", 0)}
    report = merge(raw, parse_any).report
    assert report is not None and not report.complete
    assert any("driver 580.159.04 in -q, 535.216.01 in the table" in d for d in report.disagreements), report


H200_TABLE = "nvidia-smi__h200__1gpu__driver580.159.04.txt"
H200_Q = "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_LIST = "GPU 0: NVIDIA H200 (UUID: GPU-e7c560dc-cf75-7469-658e-ed0adc9be226)\n"


def _banner_cut_at(text: str, at: str) -> str:
    """`text` (a table) cut right after `at` in its banner line, no line end after it."""
    return text[: text.index(at) + len(at)]


def _h200_cuts() -> dict[str, str]:
    """The real H200 table cut inside its banner after `Driver Version: 580.15`, and with every
    line cut at 57 columns (`cut -c1-57`: the banner ends `Driver Version: 580.1`)."""
    table = (REAL / H200_TABLE).read_text(encoding="utf-8")
    columns = "".join(line[:57] + "\n" for line in table.splitlines())
    return {"banner": _banner_cut_at(table, "Driver Version: 580.15"), "columns": columns}


@pytest.mark.parametrize("cut", ["banner", "columns"])
def test_a_banner_cut_inside_its_version_gives_no_driver(cut: str) -> None:
    """Edits: the real H200 table cut in its banner after `Driver Version: 580.15`, or every line
    cut at 57 columns. Before, the cut value was read as the driver (580.15; 580.1 glued to the
    border line under it), and beside the box's `-L` it was the box's driver: min_driver 580.65
    failed "580.15". A value the cut may have shortened is not read, and the warning says so."""
    table = _h200_cuts()[cut]
    alone = parse_table(table)
    assert alone.driver_version is None, alone
    assert any("banner line is cut short after 'Driver Version: 580.1" in w for w in alone.warnings)
    raw = {"nvidia_smi_list": ProbeOutput(H200_LIST, "", 0), "nvidia_smi_table": ProbeOutput(table, "", 0)}
    report = merge(raw, parse_any, parse_gpu_list).report
    assert report is not None and report.driver_version is None


def test_a_banner_cut_inside_its_version_beside_the_whole_q_is_no_other_driver() -> None:
    """Edit: the real H200 table cut after `Driver Version: 580.15` beside the whole real `-q` of
    the same box. Before: "driver 580.159.04 in -q, 580.15 in the table", every GPU rule
    unverified as two boxes; now the `-q`'s driver, no disagreement."""
    q = (REAL / H200_Q).read_text(encoding="utf-8")
    raw = {
        "nvidia_smi_q": ProbeOutput(q, "", 0),
        "nvidia_smi_table": ProbeOutput(_h200_cuts()["banner"], "", 0),
    }
    report = merge(raw, parse_any).report
    assert report is not None and report.driver_version == "580.159.04"
    assert not report.disagreements, report.disagreements


def test_a_whole_banner_closed_without_its_spaces_is_read() -> None:
    """Edit: the real H200 table's banner with the spaces before its closing `|` removed
    (`CUDA Version: 13.0|`): the value is closed by the line's `|`, read."""
    table = (REAL / H200_TABLE).read_text(encoding="utf-8").replace("13.0     |", "13.0|")
    report = parse_table(table)
    assert (report.driver_version, report.cuda_version) == ("580.159.04", "13.0")


# Every real `-q` and `-q -x` of a whole box (each record whole, as many as attached)
WHOLE_Q = sorted(
    p.name for p in REAL.glob("nvidia-smi-q__*.txt") if "1of" not in p.name and "cut" not in p.name
)
WHOLE_Q_X = sorted(p.name for p in REAL.glob("nvidia-smi-q-x__*.xml") if "1of" not in p.name)
# the field -> (its -q label, its -q -x element); the memory total is the first `Total` under
# `FB Memory Usage` (<total> under <fb_memory_usage>)
_FIELD_LINES = {
    "name": (re.compile(r"^\s+Product Name\s*:"), re.compile(r"^\s*<product_name>")),
    "serial": (re.compile(r"^\s+Serial Number\s*:"), re.compile(r"^\s*<serial>")),
    "uuid": (re.compile(r"^\s+GPU UUID\s*:"), re.compile(r"^\s*<uuid>")),
    "pci_bus_id": (re.compile(r"^\s+Bus Id\s*:"), re.compile(r"^\s*<pci_bus_id>")),
    "memory_total_mib": (re.compile(r"^\s+Total\s*:"), re.compile(r"^\s*<total>")),
}
_RECORD = (re.compile(r"^GPU [0-9A-Fa-f]{4,8}:"), re.compile(r"^\s*<gpu id="))
# the GPU's own memory section, at its record's depth (a MIG device's is deeper)
_FB = ("FB Memory Usage", "<fb_memory_usage>")
# the rules that read what a record holds above a cut: names, count, memory, the driver
_READ_RULES = ("nvidia_driver", "gpu_model", "gpu_count", "vram", "min_driver")


def _field_lines(lines: list[str], xml: bool) -> list[dict[str, int]]:
    """For each GPU record of a whole output, field -> the index of the line that holds it."""
    starts = [i for i, line in enumerate(lines) if _RECORD[xml].match(line)]
    found: list[dict[str, int]] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        depth = lines[start + 1][: len(lines[start + 1]) - len(lines[start + 1].lstrip())]
        fb = next((i for i in range(start, end) if lines[i] == depth + _FB[xml]), end)
        at: dict[str, int] = {}
        for field, patterns in _FIELD_LINES.items():
            first = fb if field == "memory_total_mib" else start
            hit = next((i for i in range(first, end) if patterns[xml].match(lines[i])), None)
            if hit is not None:
                # (the record's own header names its PCI address: `GPU 00000000:07:00.0`)
                at[field] = start if field == "pci_bus_id" else hit
        found.append(at)
    return found


def _judged(text: str, probe: str, spec: OrderSpec) -> dict[str, str]:
    """rule -> verdict of `text` read as the live probe `probe`'s output, judged on `spec`."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    facts = parse_facts({probe: ProbeOutput(text, "", 0)})
    return {c.name: c.verdict for c in offline.judge(facts, spec)}


def _cut_points(at: list[dict[str, int]], total: int) -> tuple[list[int], list[int]]:
    """(the cuts whose fields are checked, the cuts also judged), each a count of lines kept:
    every line of the first and the last record up to its last identity field and a stride
    elsewhere (an 8-GPU `-q` is ~1,600 lines, a `-q -x` up to ~3,000); judged at each identity
    field of the last record, on either side, and a stride."""
    ends = [max(fields.values()) + 2 for fields in at]
    firsts = [min(fields.values()) for fields in at]
    read = sorted({*range(1, ends[0]), *range(firsts[-1], min(ends[-1], total)), *range(1, total, 25)})
    edges = {n for line in at[-1].values() for n in (line, line + 1) if 0 < n < total}
    judged = sorted(edges | set(range(1, total, max(1, total // (40 if len(at) == 1 else 6)))))
    return read, judged


@pytest.mark.parametrize("name", WHOLE_Q + WHOLE_Q_X)
def test_a_q_cut_at_every_line_reads_every_field_above_the_cut(name: str, tmp_path: Path) -> None:
    """Every real `-q` and `-q -x` of a whole box cut after each line up to its first and last
    records' identity fields, and at a stride below them: each
    field whose line is above the cut (name, serial, UUID, PCI bus id, memory total, each
    GPU's) is read as the whole output has it, a field below it is not read (never another
    value); the rules that read those fields never give a verdict the whole output does not,
    and once every record's name (memory total) is above the cut of a box whose `Attached
    GPUs` counts them all, gpu_model (vram) gives the whole output's verdict; a `-q` line that
    names the GPU (its name, serial, UUID, bus id) last in the cut text is read as the whole has
    it or not at all (it may be cut though a newline follows it: round 29). Before round 28 a
    record cut anywhere below its Product Name kept gpu_model unverified, and a `-q -x` record
    cut before its process list was not read at all."""
    from gpuonboard.api import offline

    xml = name.endswith(".xml")
    text = (REAL / name).read_text(encoding="utf-8")
    parse = parse_any if xml else parse_text_q
    whole = parse(text)
    if not whole.complete or whole.attached_gpus != len(whole.gpus):
        pytest.skip("not every GPU of its box, whole")
    lines = text.splitlines(keepends=True)
    at = _field_lines([line.rstrip("\n") for line in lines], xml)
    assert len(at) == len(whole.gpus)
    probe = "nvidia_smi" if xml else "nvidia_smi_q"
    (tmp_path / "order.yml").write_text(
        f"order:\n  gpu_model: '{whole.gpus[0].name}'\n  gpu_count: {len(whole.gpus)}\n  vram: 1GB\n"
        "  min_driver: '300.1'\n"
    )
    order = offline.load_order(str(tmp_path / "order.yml"))
    judged = _judged(text, probe, order)
    last_name = at[-1].get("name", len(lines))
    last_memory = at[-1].get("memory_total_mib", len(lines))
    read, judge_at = _cut_points(at, len(lines))
    for n in read:
        report = parse("".join(lines[:n]))
        for k, fields in enumerate(at):
            for field, line in fields.items():
                value = getattr(report.gpus[k], field) if k < len(report.gpus) else None
                if line == n - 1 and not xml and value in (None, ""):
                    continue  # (a naming line last in a cut record may be cut: not read, round 29)
                if line < n:
                    assert value == getattr(whole.gpus[k], field), (n, k, field)
                else:
                    assert value in (None, ""), (n, k, field)
    for n in judge_at:
        cut = _judged("".join(lines[:n]), probe, order)
        for rule in _READ_RULES:
            assert cut[rule] in (judged[rule], "unverified"), (n, rule)
        if n > last_name + (0 if xml else 1) and judged["gpu_model"] == "pass":
            assert cut["gpu_model"] == "pass", n
        if n > last_memory and judged["vram"] == "pass":
            assert cut["vram"] == "pass", n


H200_CUT_AT = "Virtualization Mode"


def test_a_q_cut_after_its_virtualization_mode_judges_what_it_read(tmp_path: Path) -> None:
    """Edit: the real H200 `-q` (Attached GPUs : 1) cut after its record's `Virtualization
    Mode : Pass-Through` line. Before: gpu_model unverified "incomplete probe" though its
    Product Name was read whole. Now: gpu_model, gpu_count and nvidia_driver pass (read whole,
    the one GPU attached); vram, whose `FB Memory Usage` is below the cut, stays unverified."""
    lines = (REAL / H200_Q).read_text(encoding="utf-8").splitlines(keepends=True)
    cut = "".join(lines[: next(i for i, line in enumerate(lines) if H200_CUT_AT + "  " in line) + 1])
    got = verdicts(
        tmp_path, "nvidia-smi-q.txt", cut, "order:\n  gpu_model: H200\n  gpu_count: 1\n  vram: 140GB\n"
    )
    assert got["gpu_model"] == ("pass", "1 x NVIDIA H200"), got["gpu_model"]
    assert got["gpu_count"][0] == got["nvidia_driver"][0] == "pass"
    assert got["vram"][0] == "unverified" and "incomplete probe" in got["vram"][1]


def test_a_q_x_cut_after_its_memory_total_judges_what_it_read(tmp_path: Path) -> None:
    """Edit: the real H200 `-q -x` cut after its record's `<fb_memory_usage>`'s `<total>` line.
    Before: the record, cut before its process list, was not read: gpu_model and vram
    unverified "no GPU". Now: gpu_model, gpu_count and vram pass (read whole, the one GPU
    attached); temperature, below the cut, stays unverified."""
    lines = (REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text(encoding="utf-8")
    rows = lines.splitlines(keepends=True)
    fb = next(i for i, line in enumerate(rows) if "<fb_memory_usage>" in line)
    total = next(i for i in range(fb, len(rows)) if "<total>" in rows[i])
    order = "order:\n  gpu_model: H200\n  gpu_count: 1\n  vram: 140GB\n"
    got = verdicts(tmp_path, "nvidia-smi-q-x.xml", "".join(rows[: total + 1]), order)
    assert got["gpu_model"] == ("pass", "1 x NVIDIA H200"), got["gpu_model"]
    assert got["gpu_count"][0] == got["vram"][0] == "pass", got
    assert got["temperature"][0] == "unverified"


def test_power_readings_are_read_whole_only_where_the_cut_is_below_them() -> None:
    """Edits: the real H200 `-q -x` and the real idle A10 `-q`, each cut inside its power
    readings (after the draw, before the limit), just after them, and whole. `power_read` (the
    readings printed whole, N/A included: a None draw there is nvidia-smi's, not the cut's) is
    False for the cut inside, True after and whole; before it did not exist and rule_throttle
    said "its power draw cut" of an N/A printed above the cut."""
    xml = (REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()
    start, end = xml.index("<gpu_power_readings>"), xml.index("</gpu_power_readings>")
    inside = xml[: xml.index("\n", xml.index("power_draw", start)) + 1]
    after = xml[: end + len("</gpu_power_readings>") + 1]
    text = (REAL / "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt").read_text()
    heading = text.index("    GPU Power Readings")
    text_inside = text[: text.index("\n", text.index("Power Draw", heading)) + 1]
    text_after = text[: text.index("\n", text.index("    GPU Memory Power Readings")) + 1]
    for cut, whole in ((inside, False), (after, True), (xml, True)):
        g = parse_any(cut).gpus[0]
        assert (g.power_read, g.record_cut) == (whole, cut is not xml), (whole, g)
    for cut, whole in ((text_inside, False), (text_after, True), (text, True)):
        g = parse_text_q(cut).gpus[0]
        assert (g.power_read, g.record_cut) == (whole, cut is not text), (whole, g)
