"""`nvidia-smi -L` and the `--query-gpu` CSV cut short or soft-wrapped (cut sweep 8, classes E and
H; paste sweep 8, finding 8): the real captures of tests/fixtures/real, cut in the test at a
character count or wrapped at a fixed width, are never read as other GPUs.

- `-L` cut mid-line: `GPU 0: NVIDIA L40` (of an L40S) failed gpu_model as a wrong card, `GPU 0:
  NVIDIA A` passed mig_mode "no MIG on this model", a MIG line or a UUID cut short failed
  gpu_count "missing". The listing is now incomplete (GpuList.complete, carried into the merged
  GpuReport) and a GPU whose name was cut is nameless, never another model.
- CSV: a last row cut after a comma or inside `[Unknown Error]` kept the header's cell count and
  was read whole; a CSV wrapped at a page's width read a piece of its header as a GPU
  (`gpu_model FAIL (1 x inforom.pwr)`). A cut row is now incomplete; a CSV with broken lines is
  read as no GPU (every rule unverified).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.nvidia_smi import parse_query_csv
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory.model import OrderSpec

from ..offline_judge import column_wrapped

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (not several pods' views of one GPU, refused whole: api/test_offline_list_pods_mig.py)
LISTINGS = sorted(p.name for p in REAL.glob("nvidia-smi-L__*") if "-listed-5-times-" not in p.name)
# every real CSV offline judging reads (the header-less sampler needs its field list)
# (not the one-column CSVs of a field no rule reads: noted, not judged, api/test_offline_unjudged.py)
CSVS = sorted(
    p.name
    for p in REAL.glob("nvidia-smi-query-gpu*")
    if "sampler" not in p.name
    and "-only__" not in p.name
    and "noheader-na" not in p.name
    # (rows among another program's lines: refused naming them, api/test_offline_csv_among.py)
    and "-among-" not in p.name
    # (two CSV outputs in one file: refused naming both, api tests of round 40)
    and "two-blocks" not in p.name
    # (known limit, round 35: its rows end in `compute_cap`, and a cut inside that last cell,
    # `8.0` to `8.`, leaves a row of as many cells as the header, read whole: gpu_count fails on
    # the rows above the cut where unverified is due; the one capture of that column last)
    and "heading-line-above-header" not in p.name
    and "pbs-env-md" not in p.name  # (the same: `compute_cap` last, round 37)
)
L40S = "nvidia-smi-L__l40s__1gpu__driver595.80.txt"
A100_MIG = "nvidia-smi-L__a100-80gb-pcie__1gpu-1mig-2g.20gb__go-dcgm.txt"
TELEGRAF = "nvidia-smi-L__a100-sxm4-80gb__4gpu-1mig-4x1g.20gb__telegraf.txt"
JOINED = "nvidia-smi-L__geforce-rtx-2080-ti__4gpu__lines-joined-by-issue-form.txt"
PAREN_LOST = "nvidia-smi-L__geforce-gtx-1660-ti__1gpu__closing-paren-lost__driver430.64.txt"
A6000 = "nvidia-smi-query-gpu__rtx-a6000__2gpu__indented.csv"
UNKNOWN_ERROR = (
    "nvidia-smi-query-gpu-nounits__geforce-rtx-2080-ti__1gpu__driver442.19__unknown-error-cell.csv"
)
A100_CSV = "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv"
H100_CSV = "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
L40S_CSV = "nvidia-smi-query-gpu__l40s__1gpu__driver595.80__nvenc-load.csv"
WIDTHS = (40, 60, 80, 100, 120, 160, 200, 300)
_WHOLE_UUID = re.compile(r"(?:GPU|MIG)-[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}$")


def read(name: str) -> str:
    return (REAL / name).read_text()


def facts_of(name: str, text: str) -> Facts:
    """The facts of one output, read as the probe of its kind."""
    probe = "nvidia_smi_list" if name.startswith("nvidia-smi-L__") else "nvidia_smi_csv"
    return parse_facts({probe: ProbeOutput(text, "", 0)})


def saved(folder: Path, name: str, text: str) -> Facts | None:
    """The facts of one saved output judged offline (`invoke facts FILE`) under its real file
    name; None where offline judging refuses the file with a sentence (a few characters left)."""
    path = folder / name
    path.write_text(text)
    try:
        return parse_facts(offline.load_outputs([str(path)]))
    except UsageError:
        return None


def order_of(facts: Facts) -> OrderSpec:
    """The order the whole capture meets: its GPUs, shortest name, smallest memory, driver."""
    assert facts.gpu is not None and facts.gpu.gpus
    gpus = facts.gpu.gpus
    names = [g.name for g in gpus if g.name]
    memory = [g.memory_total_mib for g in gpus if g.memory_total_mib]
    driver = facts.gpu.driver_version
    return OrderSpec(
        gpu_model=min(names, key=len) if names else None,
        gpu_count=len(gpus),
        vram_bytes=min(memory) * 2**20 // 10**9 * 10**9 if memory else None,
        min_driver=driver.split(".")[0] if driver else None,
    )


def verdicts(facts: Facts, order: OrderSpec) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, order)}


def moved(whole: dict[str, tuple[str, str]], part: dict[str, tuple[str, str]], facts: Facts) -> list[str]:
    """The rules a damaged copy judges otherwise than the whole capture and not 'unverified': a
    fail or warn the whole has not, a pass the whole has not, or (where the copy still reads as
    whole) a fail or warn of the whole gone."""
    out = []
    for rule, (verdict, actual) in part.items():
        was = whole.get(rule, ("(no row)", ""))[0]
        new_fault = verdict in ("fail", "warn") and was not in ("fail", verdict)
        if new_fault or (verdict == "pass" and was != "pass"):
            out.append(f"{rule}: {was} -> {verdict} ({actual[:90]})")
    if facts.gpu is not None and facts.gpu.gpus and facts.gpu.complete:
        gone = [rule for rule, (v, _) in whole.items() if v in ("fail", "warn") and rule not in part]
        out += [f"{rule}: {whole[rule][0]} -> gone" for rule in gone]
    return out


def cut_points(text: str, step: int = 1, offset: int = 0) -> Iterator[int]:
    """Where to cut: every `step`th character of a short capture and next to each of its commas,
    `[` and `(`; of a long one (a wide CSV's 4,000-character rows) every 211th character and next
    to every 9th of those marks in its last row. Not a clean cut between lines or between joined
    `-L` entries, nor right before a whole UUID's `)`: those leave a shorter output no sign tells
    from a whole one. `offset` shifts the every-`step`th cuts (each capture its own share)."""
    long = len(text) > 1500
    first, stride, every = (text.rstrip("\n").rfind("\n") + 1, 211, 9) if long else (0, step, 1)
    marks = [i for i, ch in enumerate(text[first:], first) if ch in ",[("]
    points = set(range(1 + offset % stride, len(text), stride)) | {
        i + d for i in marks[::every] for d in (0, 1, 2)
    }
    for at in sorted(p for p in points if 0 < p < len(text)):
        head = text[:at]
        boundary = text[at] == "\n" or not head.rsplit("\n", 1)[-1].strip()
        if not boundary and not head.rstrip(" ,").endswith(")") and not _WHOLE_UUID.search(head):
            yield at


def sweep(folder: Path, names: list[str], damaged: dict[str, list[tuple[str, str]]]) -> list[str]:
    """Each capture's damaged copies judged offline against the whole, with the whole's order."""
    found = []
    for name in names:
        whole_facts = saved(folder, name, read(name))
        assert whole_facts is not None
        order = order_of(whole_facts)
        whole = verdicts(whole_facts, order)
        for label, text in damaged[name]:
            facts = saved(folder, name, text)
            if facts is not None:
                found += [f"{name} {label}: {m}" for m in moved(whole, verdicts(facts, order), facts)]
    return found


# --- nvidia-smi -L ----------------------------------------------------------------------------


def test_a_name_cut_at_the_end_is_no_name_and_the_listing_is_incomplete() -> None:
    for name, at in ((L40S, 17), (A100_MIG, 15)):  # 'GPU 0: NVIDIA L40', 'GPU 0: NVIDIA A'
        listing = parse_gpu_list(read(name)[:at])
        assert not listing.complete
        assert [(g.index, g.name, g.uuid) for g in listing.gpus] == [(0, "", None)]
        assert any("ends mid-entry" in w for w in listing.warnings)


def test_a_uuid_or_mig_line_cut_short_leaves_the_listing_incomplete() -> None:
    cut = parse_gpu_list(read(JOINED)[:132])  # '... GPU 1: NVIDIA GeForce RTX 2080 Ti (UUID: GPU-3e34'
    assert not cut.complete
    assert [(g.name, g.uuid is None) for g in cut.gpus] == [("NVIDIA GeForce RTX 2080 Ti", False)] + [
        ("NVIDIA GeForce RTX 2080 Ti", True)
    ]
    mig = parse_gpu_list(read(TELEGRAF)[:370])  # inside 'MIG 1g.20gb Device 3: (UUID: MIG-930574a9-d43a-5d2b'
    assert not mig.complete
    (gpu,) = mig.gpus
    assert gpu.name == "NVIDIA A100-SXM4-80GB" and len(gpu.mig_devices) == 4
    assert gpu.mig_devices[3].uuid is None and gpu.mig_devices[2].uuid is not None


@pytest.mark.parametrize("name", LISTINGS)
def test_every_whole_listing_stays_whole(name: str) -> None:
    listing = parse_gpu_list(read(name))
    assert listing.complete and listing.gpus and all(g.name and g.uuid for g in listing.gpus)


def test_the_closing_paren_lost_capture_reads_as_today_with_or_without_its_newline() -> None:
    text = read(PAREN_LOST)
    for variant in (text, text.rstrip("\n")):
        listing = parse_gpu_list(variant)
        assert listing.complete
        assert [(g.name, g.uuid) for g in listing.gpus] == [
            ("GeForce GTX 1660 Ti", "GPU-e18afb8d-1627-f8ff-2ba3-c05c5a8e9e67")
        ]


def test_a_cut_listing_is_never_another_model_a_missing_gpu_or_no_mig() -> None:
    """Repro E1-E4: each rule that judged the cut listing is unverified now."""
    l40s = verdicts(facts_of(L40S, read(L40S)[:17]), OrderSpec(gpu_model="NVIDIA L40S", gpu_count=1))
    assert l40s["gpu_model"][0] == "unverified", l40s["gpu_model"]
    a100 = verdicts(facts_of(A100_MIG, read(A100_MIG)[:15]), OrderSpec(gpu_model="NVIDIA A100 80GB PCIe"))
    assert a100["gpu_model"][0] == "unverified", a100["gpu_model"]
    assert a100["mig_mode"][0] == "unverified", a100["mig_mode"]
    assert a100["ecc_uncorrectable"][0] != "pass", a100["ecc_uncorrectable"]
    for name, at in ((TELEGRAF, 370), (JOINED, 132)):
        got = verdicts(facts_of(name, read(name)[:at]), OrderSpec(gpu_count=4))
        assert got["gpu_count"][0] == "unverified", (name, got["gpu_count"])


def test_a_cut_listing_is_incomplete_alone_and_leaves_a_whole_format_whole() -> None:
    """The cut `-L` alone is an incomplete probe; next to the whole CSV of the same box, the
    CSV's GPU set stands, whole, with its name (the cut one is never taken)."""
    alone = facts_of(L40S, read(L40S)[:17]).gpu
    assert alone is not None and not alone.complete and [g.name for g in alone.gpus] == [""]
    facts = parse_facts(
        {
            "nvidia_smi_csv": ProbeOutput(read(L40S_CSV), "", 0),
            "nvidia_smi_list": ProbeOutput(read(L40S)[:17], "", 0),
        }
    )
    assert facts.gpu is not None and facts.gpu.complete
    assert [g.name for g in facts.gpu.gpus] == ["NVIDIA L40S"]


# the -L past a lost GPU (round 36) cut before its first listed GPU's name: what is left is the lost
# GPU's message alone (or with a header `GPU 1:` no sign tells from words), read as nvidia-smi
# failing on that GPU: nvidia_driver FAIL, a true fault (the whole fails gpu_count on the same lost
# GPU), not a claim the text lacks. The whole keeps nvidia_driver unverified (-L prints no driver
# version), as the table with a lost GPU passes it: a lost GPU is the GPU's fault, not the driver's.
# Cut inside or after that GPU's name it is read as the listing, incomplete
# (api/saved_kinds `_listing_past_lost`).
LOST = "nvidia-smi-L__geforce-rtx-4090__2gpu-gpu0-no-device-handle__env-line__incident-notes.txt"


def _judged_cut(name: str, at: int) -> bool:
    """The cut is one the sweep holds to the whole's verdicts (not LOST's lost-GPU message alone)."""
    return name != LOST or at > read(name).index("\nGPU 1: ") + len("\nGPU 1: ")


@pytest.mark.parametrize("name", LISTINGS)
def test_no_cut_listing_is_judged_otherwise_than_the_whole(tmp_path: Path, name: str) -> None:
    damaged = {
        name: [(f"cut {at}", read(name)[:at]) for at in cut_points(read(name)) if _judged_cut(name, at)]
    }
    found = sweep(tmp_path, [name], damaged)
    assert not found, f"{len(found)} moved verdicts, e.g. " + "\n".join(found[:12])


# --- the --query-gpu CSV ----------------------------------------------------------------------


def test_a_last_row_cut_after_its_comma_is_incomplete() -> None:
    """Repro H1: `0, NVIDIA RTX A6000, 49140 MiB, 35 MiB, 48507 MiB,` has the header's 6 cells."""
    report = parse_query_csv(read(A6000)[:149], ())
    assert not report.complete
    (gpu,) = report.gpus
    assert gpu.name == "NVIDIA RTX A6000" and gpu.utilization_gpu_pct is None
    got = verdicts(facts_of(A6000, read(A6000)[:149]), OrderSpec(gpu_count=2))
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]


def test_a_last_cell_cut_inside_its_brackets_or_its_unit_is_incomplete() -> None:
    """Repro H2 (`..., 1560, 6800, [Unkn`), and a unit cut off (`765 MHz, 1215 M`, `12`)."""
    assert not parse_query_csv(read(UNKNOWN_ERROR)[:272], ()).complete
    text = read(A100_CSV).rstrip("\n")
    for drop in (2, 5):  # '... 1215 M', '... 12'
        report = parse_query_csv(text[:-drop], ())
        assert not report.complete and len(report.gpus) == 2
    assert parse_query_csv(text, ()).complete  # whole, its final newline lost
    # the real P100 capture ends without a newline, its values without units: whole as before
    report = parse_query_csv(read("nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv"), ())
    assert report.complete and [g.name for g in report.gpus] == ["Tesla P100-PCIE-16GB"]


def test_a_wrapped_csv_reads_no_piece_of_its_header_as_a_gpu() -> None:
    """Paste finding 8: the H100 CSV wrapped at 120 columns failed gpu_model as '1 x inforom.pwr'.
    The GH200 log's own `...  (idle for ~33 seconds)` line is rows left out of a log of one GPU,
    not a broken line: one GPU, whole, as before."""
    text = column_wrapped(read(H100_CSV), 120)
    report = parse_query_csv(text, ())
    assert report.gpus == () and not report.complete
    assert any("lines are broken" in w for w in report.warnings)
    got = verdicts(facts_of(H100_CSV, text), OrderSpec(gpu_model="NVIDIA H100 80GB HBM3", gpu_count=1))
    assert got["gpu_model"][0] == "unverified" and got["gpu_count"][0] == "unverified", got
    elided = parse_query_csv(read("nvidia-smi-query-gpu-l1__gh200__1gpu__5-samples__elided.csv"), ())
    assert elided.complete and len(elided.gpus) == 1


@pytest.mark.parametrize("name", CSVS)
def test_no_cut_csv_is_judged_otherwise_than_the_whole(tmp_path: Path, name: str) -> None:
    """Every third character of each capture (its own third: by a crc32 of its name, so the
    captures together cut at every offset) and next to each mark (round 40: the suite's time)."""
    text = read(name)
    cuts = cut_points(text, 3, zlib.crc32(name.encode()))
    found = sweep(tmp_path, [name], {name: [(f"cut {at}", text[:at]) for at in cuts]})
    assert not found, f"{len(found)} moved verdicts, e.g. " + "\n".join(found[:12])


def test_no_wrapped_csv_is_judged_otherwise_than_the_whole(tmp_path: Path) -> None:
    damaged = {name: [(f"wrapped at {w}", column_wrapped(read(name), w)) for w in WIDTHS] for name in CSVS}
    found = sweep(tmp_path, CSVS, damaged)
    assert not found, f"{len(found)} moved verdicts, e.g. " + "\n".join(found[:12])


def test_a_csv_no_gpu_is_read_from_is_no_failed_nvidia_smi() -> None:
    # the CSV answered (exit 0); its lines were wrapped: nothing read, and never "nvidia-smi
    # failed (<the CSV's header line>)", which quoted the header as nvidia-smi's failure
    from gpuonboard.steps.checks.gpu_rules import rule_driver

    facts = parse_facts({"nvidia_smi_csv": ProbeOutput(column_wrapped(read(H100_CSV), 120), "", 0)})
    check = rule_driver(facts)
    assert check.verdict == "unverified"
    assert check.actual.startswith("nvidia-smi answered but listed no GPU"), check.actual
