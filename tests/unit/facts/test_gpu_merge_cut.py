"""What an nvidia-smi output cut short still proves, section by section and field by field: a
cut after every GPU's record, inside the process list that follows them, keeps the GPU facts
whole (`GpuReport.complete`) and leaves the process lists open (`GpuInfo.processes_open`); a
cut inside a GPU's record marks that record (`GpuInfo.record_cut`), and a field of it is whole
where a whole record of another format read it in a GPU set a whole listing counts
(`GpuReport.set_whole`, `gpu_agree.field_whole`). Real captures, cut at every line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.gpu_agree import field_whole
from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.gpu_merge import merge
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.table import parse_table
from gpuonboard.facts.nvidia_smi.text_q import parse_text_q
from gpuonboard.facts.probe import ProbeOutput

from ..offline_judge import verdicts

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
    below its `Processes:` header (every GPU row above it), each of 8 GPUs read; above it, never
    complete, and the last GPU read is the record the cut went through."""
    text = (REAL / TABLE_8).read_text()
    processes_at = next(i for i, line in enumerate(text.splitlines()) if "Processes:" in line)
    for n, cut in enumerate(_cuts(text), start=1):
        report = parse_table(cut)
        if n > processes_at:
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
