"""Which nvidia-smi form a text is: :func:`parse_any` recognises it and hands it to its parser
(an unrecognised text yields an empty report that says so, never a guess)."""

from __future__ import annotations

import dataclasses
import re

from gpuonboard.facts.csvtext import first_csv_row
from gpuonboard.facts.nvidia_smi.faults import without_inforom_lines
from gpuonboard.facts.nvidia_smi.model import GpuReport, _unknown
from gpuonboard.facts.nvidia_smi.query_csv import QUERY_FIELDS, _header_names, parse_query_csv
from gpuonboard.facts.nvidia_smi.table import looks_like_table, parse_table
from gpuonboard.facts.nvidia_smi.text_q import TEXT_CUT, TEXT_FLAT, TEXT_UNJOINED, parse_text_q
from gpuonboard.facts.nvidia_smi.xml_q import parse_xml

# a `-q` record's head (`GPU 00000000:17:00.0`) with its `Product Name` a few lines under it: an
# excerpt of `nvidia-smi -q` from a GPU's record on, no header above it (a post's example)
Q_RECORD = re.compile(
    r"^[^\S\n]*GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f][^\S\n]*\n"
    r"(?:[^\n]*\n){0,8}?[^\S\n]*Product Name\s+:",
    re.M,
)
Q_EXCERPT = (
    "an excerpt of `nvidia-smi -q` from a GPU's record on, without its header (no driver version, no"
    " `Attached GPUs`): the GPUs it shows are read, the box's others are not known"
)


def parse_any(text: str) -> GpuReport:
    """Recognise which nvidia-smi output form `text` is and parse it (nvidia-smi's infoROM
    warnings beside it are no part of it: the merge reads them)."""
    text = without_inforom_lines(text)
    head = text.lstrip()
    if not head:
        return _unknown("empty nvidia-smi output")
    if (
        head.startswith("<?xml")
        or head.startswith("<!DOCTYPE nvidia_smi_log")
        or head.startswith("<nvidia_smi_log")
    ):
        return _named_by_address(parse_xml(text))
    if "NVSMI LOG" in head[:200] or re.search(r"(?m)^Attached GPUs\s+:", text):
        return _named_by_address(parse_text_q(text))
    if Q_RECORD.match(head):  # (no header: its GPUs read, never all the box's)
        report = _named_by_address(parse_text_q(text))
        # (an excerpt, its indentation lost or not: never the box's one GPU, as a whole flattened
        # -q of one record is read)
        return dataclasses.replace(
            report, complete=False, gap_spares_names=False, warnings=(*report.warnings, Q_EXCERPT)
        )
    if looks_like_table(text):
        return parse_table(text)
    if "NVIDIA-SMI" not in text and (part := parse_table(text)).gpus:
        return part  # (GPU rows without the banner: a part of the table, its driver and count unread)
    first_line = head.splitlines()[0]
    if "," in first_line and _header_names(first_csv_row(first_line)):
        return parse_query_csv(text, ())
    if first_line.strip() in QUERY_FIELDS:  # (one field's CSV: `name`, a GPU's name a line)
        return parse_query_csv(text, ())
    if (versions := _versions(text)) is not None:
        return versions
    return _unknown(UNRECOGNISED)


# the one warning of a text read as no nvidia-smi form (a file of prose, another tool's output):
# nothing shows that nvidia-smi answered
UNRECOGNISED = "output not recognised as any nvidia-smi format"


# `nvidia-smi --version` (driver R525 and later): `NVIDIA-SMI version  : 550.76.01`, `NVML version
# : 550.76`, `DRIVER version : 552.22` (on WSL 2 the Windows driver's), `CUDA Version : 12.4`
_VERSION_LINE = re.compile(r"(NVIDIA-SMI|NVML|DRIVER|CUDA) [Vv]ersion[ \t]*:[ \t]*(\S+)[ \t]*")
VERSION_ONLY = (
    "an `nvidia-smi --version` output, which prints the versions of nvidia-smi, NVML, the driver and"
    " CUDA and no GPU list"
)


def _versions(text: str) -> GpuReport | None:
    """`nvidia-smi --version`: the driver's and CUDA's versions, no GPU (said so); None for any
    other text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [m for line in lines if (m := _VERSION_LINE.fullmatch(line)) is not None]
    named = {m.group(1): m.group(2) for m in found}
    if len(found) != len(lines) or "DRIVER" not in named:
        return None
    return GpuReport("unknown", named["DRIVER"], named.get("CUDA"), None, (), (VERSION_ONLY,))


def _named_by_address(report: GpuReport) -> GpuReport:
    """A `-q` / `-q -x` of some of the GPUs attached (`-i 4`, `-d ECC -i 52:00.0`) numbers its
    records from 0 by their place: a record with a PCI address is named by it (`unplaced`), so no
    rule blames GPU 0 for the GPU at 52:00.0. A -q a paste damaged (a value soft-wrapped that
    could not be rejoined, its indentation lost) lists the GPUs it listed all the same: only a
    cut, or lines left out by hand, may leave its first GPUs in order (before, an `-i 0` view of
    the GPU at 13:00.0 of 4, wrapped at 80 columns, named it "GPU 0")."""
    damaged = report.gap in (TEXT_UNJOINED, TEXT_FLAT) and TEXT_CUT not in report.warnings
    cut = not report.complete and not damaged
    if report.attached_gpus is None or report.attached_gpus <= len(report.gpus) or cut:
        return report  # (a -q cut short lists its first GPUs in order: their places are their numbers)
    gpus = tuple(dataclasses.replace(g, unplaced=True) if g.pci_bus_id else g for g in report.gpus)
    return dataclasses.replace(report, gpus=gpus)
