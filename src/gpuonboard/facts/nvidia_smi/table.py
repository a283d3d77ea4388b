"""The plain `nvidia-smi` table (the default output): :func:`parse_table`, its GPU rows (a fault
marker read as its cell's fault, or the whole GPU's), its process table, and a table cut off
before its end."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gpuonboard.facts.nvidia_smi.faults import _cell_fault, _faults, _gpu_faults, most_of_row
from gpuonboard.facts.nvidia_smi.htop_processes import WRAPPER_PROCESSES, htop_processes
from gpuonboard.facts.nvidia_smi.model import GpuInfo, GpuProcess, GpuReport, MigSlice
from gpuonboard.facts.nvidia_smi.table_cut_rows import closed_cells as _closed_cells
from gpuonboard.facts.nvidia_smi.table_cut_rows import second_row as _second_row
from gpuonboard.facts.nvidia_smi.table_frames import FRAMES_READ, carry_frames, table_frames
from gpuonboard.facts.nvidia_smi.table_joined import rows_apart
from gpuonboard.facts.nvidia_smi.values import (
    _clean,
    _compute_mode,
    _cuda_version,
    _float,
    _int,
    _is_na,
    _mib,
    _on_off,
    _pstate,
    _unified,
    _version,
)
from gpuonboard.facts.nvidia_smi.version_skew import with_version_skew
from gpuonboard.facts.wrapped import join_wrap, wrap_width
from gpuonboard.once import lazy_re

# the header's "<label> Version: <value>" pairs: "Driver Version: 580.65.06  CUDA Version: 13.0"
# up to R590, "KMD Version: 610.57.04  CUDA UMD Version: 13.3" from R610
# (a value is one word, or nvidia-smi's two for no CUDA driver: "CUDA Version: Not Found", or a
# fault marker of several, as its cells print them: "[Unknown Error]", "Unknown Error"); a label
# of one to four words, from a word's start (a label of any length, tried at each letter, took
# time growing as the square of a long line's length)
_TABLE_VERSION_PAIR = lazy_re(
    r"(?<![A-Za-z])([A-Za-z]+(?: [A-Za-z]+){0,3})\s+Version:"
    r"\s*((?i:not found\b)|\[[^\]|]+\]|Unknown Error\b|\S+)"
)
# label -> what it names, the preferred spelling first
_TABLE_VERSION_LABELS = {"driver": ("kmd", "driver"), "cuda": ("cuda umd", "cuda")}
# the box's header rule under the column titles ("|=====+=====|"): the table's shape, whatever
# its version labels say
_TABLE_DRIVER_LABEL = lazy_re(r"\b(?:Driver|KMD) Version:")
_TABLE_RULE = lazy_re(r"(?m)^[^\S\n]*\|=+[=+|]*\|?\s*$")
# the same rule as a box-drawn paste's `╞═══╪═══╡` reads once normalised (`+===+===+`)
_ANY_RULE = lazy_re(r"^[^\S\n]*[|+]=+[=+|]*[|+]?\s*$")
# the first column's right cell: persistence mode on Linux, the driver model on Windows
# (or a fault marker in that cell: `[N/A]`, `[Unknown Error]`: the GPU's row all the same)
_MARKER = r"ERR!|\[[^\]|]+\]|Unknown Error"
_TABLE_NAME_CELL = lazy_re(rf"^\s*(\d+)\s+(.*?)\s+(On|Off|N/A|WDDM|TCC|MCDM|WDM|{_MARKER})\s*$")
# the name cell of the table before R304 (`Nb.  Name`, no persistence column: driver 290.10's
# `| 0.  GeForce 8500 GT  |`, a Markdown page's `0\.`): its index with a dot, then the name
_OLD_NAME_CELL = lazy_re(r"^\s*(\d+)\\?\.\s+(\S.*?)\s*$")
# an integrated GPU (Jetson Orin: "Orin (nvgpu)") has no PCI address: its Bus-Id reads N/A; a
# fault marker there is that cell's fault, the row still a GPU's (never dropped from the count)
# a bus id its poster redacted (telegraf#6258's `xxxxxxxxxxxxxxxx`; `XXXX`, `****`,
# `0000:XX:00.0`, `<redacted>`, `[REDACTED]`; DCGM#152's `00000000:`, the address cut to its
# domain): the row is a GPU's, its address unread (never matched to another format's GPU by it)
_REDACTED_BUS = (
    r"(?=[0-9A-Fa-f:.]*[xX*]{2})[0-9A-Fa-fxX*:.]{4,}|[0-9A-Fa-f]{4,8}:"
    r"|<[A-Za-z _-]{0,20}>|\[?(?i:redacted|hidden|removed|masked)\]?"
)
_TABLE_BUS_CELL = lazy_re(
    rf"^\s*([0-9A-Fa-f]{{4,8}}:[0-9A-Fa-f]{{2}}:[0-9A-Fa-f]{{2}}\.[0-9A-Fa-f]|N/A|{_MARKER}"
    rf"|(?P<redacted>{_REDACTED_BUS}))(?=\s|$)"
)
# (`62 C` with a blank before R304)
_TABLE_TEMP = lazy_re(r"(\d+) ?C\b")
# MiB; "MB" before R331 (the same binary unit)
_TABLE_MEMORY = lazy_re(r"(\d+)\s*(MiB|MB|GiB)\s*/\s*(\d+)\s*(MiB|MB|GiB)")
_TABLE_PERF = lazy_re(r"\b(P\d{1,2})\b")
_TABLE_POWER = lazy_re(r"(\S+)\s*/\s*(\S+)\s*$")
_TABLE_UTIL = lazy_re(r"^\s*(\d+%|N/A)\s+(.*?)\s*$")
# "|    0    2    1    12249      C   /root/tools/memhog     2194MiB |" (GI/CI columns from R470)
_TABLE_PROCESS = lazy_re(
    r"^\s*(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+|N/A)\s+([CGM](?:\+[CGM])*)\s+(.*?)\s+(\d+(?:MiB|MB)|N/A|\d+(?:\.\.\.|…))\s*$"
)
# (a memory cell nvidia-smi shortened to the terminal's width, `12724...` under `watch`: the
# entry's GPU, PID, type and name are read, its memory not)
_TABLE_UNIT = lazy_re(r"(?<=\d)(?=[A-Za-z])")
# "Processes:", "Compute processes:" (before R331)
_TABLE_PROCESSES = lazy_re(r"\bprocesses:", re.IGNORECASE)
# the process table's "none" line of every generation: "No running processes found", before
# R331 "No running compute processes found" (under "Compute processes:")
_TABLE_NO_PROCESSES = lazy_re(r"\bNo running (?:compute |graphics )?processes found\b", re.IGNORECASE)


def looks_like_table(text: str) -> bool:
    """Whether `text` is the default table: NVIDIA-SMI's header and the box's header rule (or,
    for a table cut before its rule, a version label of its header)."""
    if "NVIDIA-SMI" not in text:
        return False
    return _TABLE_RULE.search(text) is not None or _TABLE_DRIVER_LABEL.search(text) is not None


def _table_versions(text: str, warnings: list[str], ended: bool = False) -> tuple[str | None, str | None]:
    """(driver, CUDA) from the header's version pairs, each label by its aliases. A value that
    may be cut is not read, and said: one that ends the output's last line, no closing `|` after
    it (a paste cut at `Driver Version: 580.15`), or one that runs into the border line under it
    (every line cut at a column, glued back). A banner that lost its `|` above the rest of the
    table (a paste that collapsed its spaces) is whole; so is one pasted without its borders
    (`NVIDIA-SMI 470.129.06   Driver Version: 470.129.06   CUDA Version: 11.4`, no `|` before
    `NVIDIA-SMI`) whose line ends (`ended`: a line end after it, the text's or a line's below):
    only a text that stops on its last value with no line end may have cut it."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if "NVIDIA-SMI" in line), None)
    header = lines[at] if at is not None else text
    last = at is not None and not any(line.strip() for line in lines[at + 1 :])
    unbordered = "|" not in header.split("NVIDIA-SMI", 1)[0]
    last = last and not (unbordered and (ended or (at is not None and at + 1 < len(lines))))
    pairs: dict[str, str] = {}
    for match in _TABLE_VERSION_PAIR.finditer(header):
        label, value = match.group(1).casefold(), match.group(2)
        if _cut_value(value, header[match.end() :] if last else "|"):
            name = next((n for n, labels in _TABLE_VERSION_LABELS.items() if label in labels), label)
            shown = f"{match.group(1)} Version: {re.sub(r'[-+=|]+$', '', value)}"
            warnings.append(
                f"the table's banner line is cut short after '{shown}': its {name} version"
                " is not read (it may go on in the part cut away)"
            )
            continue
        pairs[label] = value
    found: dict[str, str | None] = {}
    for name, labels in _TABLE_VERSION_LABELS.items():
        raw = next((pairs[label] for label in labels if label in pairs), None)
        read = _cuda_version if name == "cuda" else _version
        found[name] = read(raw, f"the table's {name} version", warnings)
    return found["driver"], found["cuda"]


# a banner value glued to the border line under it where a cut line was joined to the next
# (`580.1+-----+----|`): a version, then border characters
_GLUED_VALUE = lazy_re(r"[\d.]+[-+=|]*[-+=][-+=|]*")
# a banner's last value closed by the line's `|` (spaces collapsed: `CUDA Version: 13.0|`)
_CLOSED_VALUE = lazy_re(rf"(?:\d+(?:\.\d+)*|N/A|{_MARKER})\|")


def _cut_value(value: str, rest: str) -> bool:
    """Whether a banner value may be cut: it ends the output (`rest`, the banner line after it,
    holds nothing) with no closing `|` (a paste cut at `Driver Version: 580.15`), or it runs
    into the border line under it (every line cut at a column, glued back: `580.1+-----|`)."""
    if _GLUED_VALUE.fullmatch(value):
        return True
    return not rest.strip() and _CLOSED_VALUE.fullmatch(value) is None


def _cells(line: str) -> list[str]:
    """Cells of one box-drawn table line: '| a | b |' -> [' a ', ' b ']."""
    stripped = line.strip()
    if not stripped.startswith("|"):
        return []
    return stripped.strip("|").split("|")


def _table_ecc(value: str) -> str | None:
    """ECC mode from the 'Volatile Uncorr. ECC' cell: a count means ECC is on."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    if cleaned.isdecimal():
        return "Enabled"
    return _on_off(cleaned)


def _old_ecc(value: str) -> str:
    """The table before R304's `Volatile ECC SB / DB` cell as the later `Volatile Uncorr. ECC`
    one: its double-bit (uncorrectable) count, or `N/A` where both are (no ECC)."""
    counts = value.split()
    return counts[1] if len(counts) == 2 and (counts[1].isdecimal() or counts == ["N/A", "N/A"]) else value


def _table_watts(value: str) -> float | None:
    """'52W' -> 52.0; None for N/A."""
    return _float(value.strip().rstrip("W"))


def _table_processes(
    lines: Sequence[str], warnings: list[str]
) -> tuple[dict[int, list[GpuProcess]], bool, bool]:
    """Processes per GPU index from the 'Processes:' table, whether the table said, and whether
    it said of every GPU: a table cut inside its process rows (its box not closed) said only of
    the GPUs whose rows were read; the rows of the others may be in the part cut away."""
    start = next((i for i, line in enumerate(lines) if _TABLE_PROCESSES.search(line)), None)
    if start is None:
        return {}, False, False
    by_gpu: dict[int, list[GpuProcess]] = {}
    said_none = unsupported = False
    # (newer drivers print an empty table on one line: `| Processes:  No running processes found |`)
    for line in lines[start:]:
        if _TABLE_NO_PROCESSES.search(line):
            said_none = True
            continue
        # old drivers on GeForce cards: `|    0   Not Supported   |` where the processes go
        unsupported = unsupported or "Not Supported" in line
        cells = _cells(line)
        if len(cells) != 1:
            continue
        match = _TABLE_PROCESS.match(cells[0])
        if match is None:
            continue
        process = GpuProcess(
            pid=_int(match.group(4)),
            name=match.group(6).strip(),
            type=match.group(5),
            used_memory_mib=None
            if match.group(7).endswith(("...", "…"))
            else _mib(_TABLE_UNIT.sub(" ", match.group(7))),
            memory_cut=match.group(7) if match.group(7).endswith(("...", "…")) else None,
        )
        by_gpu.setdefault(int(match.group(1)), []).append(process)
    if unsupported and not by_gpu:
        warnings.append("process table says Not Supported: this driver does not list this card's processes")
        return {}, False, False
    if not by_gpu and not said_none:
        # nvidia-smi inside a container (no host PID namespace) prints an empty table.
        if _table_complete(lines):  # (a table cut there: the cut says so)
            warnings.append("process table is empty: processes not visible (container?)")
        return {}, False, False
    # ("No running processes found" says of every GPU, wherever the output was cut after it)
    return by_gpu, True, said_none or _table_complete(lines)


# a bracketed marker is one token ("[Unknown Error]", "[GPU is lost]"), as is NVML's bare string
_TABLE_TOKEN = lazy_re(r"\[[^\]|]+\]|Unknown Error|\S+")
# a box's closing border, `+-----+` (a header rule, `|=====|`, closes nothing: a box-drawn paste's
# `╞═══╡` reads as `+=====+`, the Processes table's header rule of a table cut under it)
_TABLE_BORDER = lazy_re(r"^\s*\+-[-+]*\+\s*$")
_TABLE_CUT = (
    "the nvidia-smi table output is cut short before the end of its GPU rows or of its Processes"
    " table: incomplete probe, rerun"
)
_TABLE_LISTS_CUT = (
    "the nvidia-smi table output is cut short after its GPU rows, before its Processes table closes:"
    " every GPU row was read, the process lists may go on in the part cut away"
)


# a MIG device's first row in the `MIG devices:` table: `|  7   13   0   0  |  3MiB / 4864MiB |`
# (GPU, GPU instance, compute instance, MIG device); its other rows hold no such first cell
_TABLE_MIG_ROW = lazy_re(r"^(\d+)\s+(\d+|N/A)\s+(?:\d+|N/A)\s+\d+$")


def _table_mig_devices(lines: Sequence[str]) -> dict[int, list[MigSlice]]:
    """MIG devices per GPU index from the `MIG devices:` table, where it was read to its end (a
    later table's header follows it): a count of a table cut inside it would be too low. Each
    with its memory used / total and its volatile uncorrectable ECC count (`| 32      0 |`: SM
    count, then the count)."""
    start = next((i for i, line in enumerate(lines) if "MIG devices:" in line), None)
    if start is None:
        return {}
    slices: dict[int, list[MigSlice]] = {}
    for line in lines[start + 1 :]:
        if _TABLE_PROCESSES.search(line):
            return slices
        cells = _cells(line)
        match = _TABLE_MIG_ROW.match(cells[0].strip()) if len(cells) > 1 else None
        if match:
            slices.setdefault(int(match.group(1)), []).append(_mig_slice(match.group(2), cells))
    return {}


def _no_mig_devices(lines: Sequence[str]) -> bool:
    """Whether the `MIG devices:` table was read to its closing border on its one row, `No MIG
    devices found`: a whole table that lists no MIG device."""
    start = next((i for i, line in enumerate(lines) if "MIG devices:" in line), None)
    if start is None:
        return False
    rest = [line.strip() for line in lines[start + 1 :]]
    at = next((i for i, line in enumerate(rest) if "No MIG devices found" in line), None)
    return at is not None and at + 1 < len(rest) and rest[at + 1].startswith("+")


def _mig_slice(instance: str, cells: list[str]) -> MigSlice:
    """One MIG device's first row read: `|  0    5   0   0  |  29MiB / 33280MiB  | 32      0 |`."""
    memory = _TABLE_MEMORY.search(cells[1])
    used = total = None
    if memory and memory.group(2) == memory.group(4) != "GiB":
        used, total = int(memory.group(1)), int(memory.group(3))
    sm_ecc = cells[2].split() if len(cells) > 2 else []
    unc = int(sm_ecc[1]) if len(sm_ecc) == 2 and sm_ecc[1].isdigit() else None
    return MigSlice(int(instance) if instance.isdigit() else None, used, total, unc)


def _table_cell(value: str, name: str, cell_faults: list[str]) -> str:
    """`value` stripped; a fault marker there is recorded as that cell's fault and read as no
    value (""), never as nvidia-smi's N/A: a MIG or ECC cell that read ERR! says nothing of
    whether the GPU has MIG or ECC (`mig_na`, `ecc_na` are what nvidia-smi said)."""
    marker = _cell_fault(value)
    if marker is None:
        return value.strip()
    cell_faults.append(f"{name} reads {marker}")
    return ""


def _table_sensors(
    row: str, cell_faults: list[str]
) -> tuple[int | None, str | None, float | None, float | None]:
    """(temperature, P-state, draw, cap) of the "Fan  Temp  Perf  Pwr:Usage/Cap" cell; a fault
    marker there is its cell's fault (recorded in `cell_faults`, in cell order)."""
    tokens = _TABLE_TOKEN.findall(row)
    temp: int | None = None
    perf: str | None = None
    draw: float | None = None
    cap: float | None = None
    if len(tokens) == 6 and tokens[4] == "/":
        _table_cell(tokens[0], "fan sensor", cell_faults)
        temp_raw = _table_cell(tokens[1], "temperature sensor", cell_faults)
        temp = _int(temp_raw.rstrip("C")) if temp_raw.endswith("C") else None
        perf = _pstate(_table_cell(tokens[2], "performance state", cell_faults))
        draw = _table_watts(_table_cell(tokens[3], "power draw", cell_faults))
        cap = _table_watts(_table_cell(tokens[5], "power cap", cell_faults))
    else:  # an unusual layout: read what is recognisable, as before
        temp_match = _TABLE_TEMP.search(row)
        perf_match = _TABLE_PERF.search(row)
        power = _TABLE_POWER.search(row)
        temp = int(temp_match.group(1)) if temp_match else None
        perf = _pstate(perf_match.group(1)) if perf_match else None
        if power:
            draw = _table_watts(_table_cell(power.group(1), "power draw", cell_faults))
            cap = _table_watts(_table_cell(power.group(2), "power cap", cell_faults))
    return temp, perf, draw, cap


def _table_row_faults(name: str, cell_faults: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """(faults, cell_faults) of one GPU's rows, the whole-row judgement, as the other formats
    judge a GPU's record (faults._field_faults): a word that speaks for the whole GPU in any cell
    or as its name ("[GPU is lost]", "[GPU requires reset]"), a fault marker as its name (ERR!,
    an NVML error string), or markers in most of its cells make the GPU unreadable (and its
    cell faults are dropped)."""
    markers = [cell.rsplit(" reads ", 1)[1] for cell in cell_faults]
    name_marker = _cell_fault(name)
    whole = _gpu_faults([name_marker, *markers])
    if not whole and name_marker is None and not most_of_row(len(markers)):
        return (), cell_faults
    found = [name_marker] if name_marker is not None else markers
    return whole or _faults(found) or tuple(dict.fromkeys(found)), []


# a MIG mode cell's `*` (`Disabled*`): the mode changes to the other at the next GPU reset
_FLIPPED = {"Enabled": "Disabled", "Disabled": "Enabled"}


def _name_cell(cell: str) -> tuple[int, str, str | None] | None:
    """(index, name, persistence mode or driver model) of a GPU's first cell; the last None in
    the table before R304, which has no such column (_OLD_NAME_CELL)."""
    if (found := _TABLE_NAME_CELL.match(cell)) is not None:
        return int(found.group(1)), found.group(2).strip(), found.group(3)
    if (old := _OLD_NAME_CELL.match(cell)) is not None:
        return int(old.group(1)), old.group(2).strip(), None
    return None


def _gpu_row(cells: Sequence[str]) -> bool:
    """Whether a table line's cells are a GPU's first row: index, name and persistence mode (or
    driver model; before R304 the index with a dot and the name), then its PCI bus id."""
    name_cell = _name_cell(cells[0]) if len(cells) == 3 else None
    return bool(name_cell and _TABLE_BUS_CELL.match(cells[1]))


# The Windows driver models nvidia-smi prints in the cell Linux prints the persistence mode in
# (Windows has none): read as the driver model whether or not the header rows that name the
# column (`Driver-Model`, `TCC/WDDM`) were kept (a post that dropped them: the real RTX 5080's
# `|   0  NVIDIA GeForce RTX 5080     WDDM   |`)
_WINDOWS_DRIVER_MODELS = frozenset({"WDDM", "TCC", "MCDM", "WDM"})


def _windows_driver_model(cell: str | None) -> bool:
    """The name cell's right-hand value is a Windows driver model."""
    return (cell or "").strip().upper() in _WINDOWS_DRIVER_MODELS


def _cut_first_row(
    cells: Sequence[str], line: str, driver_model_column: bool, after_rows: bool = False
) -> GpuInfo | None:
    """A GPU listed on the output's last line, its first row cut after its whole name cell
    (`|   0  GeForce RTX 208...  Off  |`, or the bus id cut: `... Off  | 00000000:0`): its index,
    name and persistence mode are read; the rest of the GPU went with the cut (record_cut).
    `after_rows`: GPU rows of three cells were read above it, so a row that ends after a whole
    bus cell (`|   3  GeForce RTX 208...  Off  | 00000000:4E:00.0  On |`) is one the cut went
    through too (its third cell cut away), not a table of two columns."""
    if not 1 <= len(cells) <= 2 or (len(cells) == 1 and not line.rstrip().endswith("|")):
        return None
    if len(cells) == 2 and _TABLE_BUS_CELL.match(cells[1]) and line.rstrip().endswith("|") and not after_rows:
        return None  # (a whole bus cell: a row of two cells, no cut first row)
    name_cell = _name_cell(cells[0])
    if name_cell is None:
        return None
    faults: list[str] = []
    index, name, said = name_cell
    driver_model_column = driver_model_column or _windows_driver_model(said)
    right = _table_cell(said or "", "driver model" if driver_model_column else "persistence mode", faults)
    return GpuInfo(
        index=index,
        name=_clean(name) or "",
        persistence_mode=None if driver_model_column else _on_off(right),
        driver_model=_clean(right) if driver_model_column else None,
        record_cut=True,
        cell_faults=tuple(faults),
    )


def _table_gpu(
    cells: Sequence[str],
    second: Sequence[str],
    third: Sequence[str],
    warnings: list[str],
    driver_model_column: bool = False,
) -> GpuInfo:
    """One GPU's 2 or 3 table rows; a fault marker belongs to its cell, unless it is the GPU's
    name or most of its cells (then the GPU is unreadable: GpuInfo.faults). The first column's
    right cell is the driver model where the header says "Driver-Model" (Windows), else the
    persistence mode."""
    name_cell = _name_cell(cells[0])
    bus_cell = _TABLE_BUS_CELL.match(cells[1])
    assert name_cell is not None and bus_cell is not None  # the caller matched them
    index, name, said = name_cell
    cell_faults: list[str] = []
    driver_model_column = driver_model_column or _windows_driver_model(said)
    first_right = _table_cell(
        said or "", "driver model" if driver_model_column else "persistence mode", cell_faults
    )
    persistence = "N/A" if driver_model_column else first_right
    # (a redacted bus id is no address and no fault of the GPU: unread)
    bus = "N/A" if bus_cell.group("redacted") else _table_cell(bus_cell.group(1), "PCI bus id", cell_faults)
    display = bus_cell.string[bus_cell.end() :].strip()
    if display:
        _table_cell(display, "display (Disp.A)", cell_faults)
    ecc_raw = _table_cell(cells[2] if said is not None else _old_ecc(cells[2]), "ECC", cell_faults)
    # "Fan  Temp  Perf  Pwr:Usage/Cap": fan, temperature, P-state, draw / cap
    temp, perf, draw, cap = _table_sensors(second[0], cell_faults)
    faults_before = len(cell_faults)
    memory_raw = _table_cell(second[1], "memory usage", cell_faults)
    # (a cell read as N/A for its fault marker says nothing of the GPU's memory)
    memory_said = len(cell_faults) == faults_before
    memory = _TABLE_MEMORY.search(memory_raw)
    # "GPU-Util  Compute M.": utilization, then the compute mode
    util_tokens = _TABLE_TOKEN.findall(second[2])
    util: int | None = None
    compute: str | None = None
    if util_tokens:
        util = _int(_table_cell(util_tokens[0], "utilization", cell_faults).rstrip("%"))
        if len(util_tokens) > 1:
            compute = _compute_mode(_table_cell(" ".join(util_tokens[1:]), "compute mode", cell_faults))
    mig = _table_cell(third[2], "MIG mode", cell_faults) if len(third) == 3 else None
    mig_now = _on_off(mig.rstrip("*")) if mig is not None else None
    faults, cell_faults = _table_row_faults(name, cell_faults)
    if memory is None and _clean(memory_raw) is not None:
        # (a cell the driver says it cannot fill, "Not Supported" on the GB10's unified memory,
        # is no value, not a column we failed to find)
        warnings.append(f"GPU {index}: memory column not found")
    return GpuInfo(
        index=index,
        # a name nvidia-smi could not give ("N/A", "[Not Supported]", a fault marker) is no
        # model: the GPU is listed nameless (its model unverified) or unreadable (its faults)
        name=_clean(name) or "",
        pci_bus_id=_clean(bus),
        memory_total_mib=_mib(f"{memory.group(3)} {memory.group(4)}") if memory else None,
        memory_used_mib=_mib(f"{memory.group(1)} {memory.group(2)}") if memory else None,
        memory_unified=False if memory else (_unified(memory_raw) if memory_said else None),
        ecc_mode=_table_ecc(ecc_raw),
        ecc_na=_is_na(ecc_raw),
        persistence_mode=_on_off(persistence),
        display_active=_on_off(display) if display else None,
        driver_model=_clean(first_right) if driver_model_column else None,
        temperature_c=temp,
        mig_mode=mig_now,
        mig_na=_is_na(mig),
        # `Disabled*`: the star marks a change pending the next GPU reset (to the other mode)
        mig_mode_pending=_FLIPPED.get(mig_now or "") if mig and mig.endswith("*") else None,
        # "Volatile Uncorr. ECC": a count when ECC is on (On/Off/N/A otherwise)
        ecc_volatile_uncorrectable=int(ecc_raw) if ecc_raw.isdecimal() else None,
        # "Pwr:Usage/Cap": the cap is the enforced limit
        power_draw_w=draw,
        power_limit_w=cap,
        performance_state=perf,
        utilization_gpu_pct=util,
        compute_mode=compute,
        faults=faults,
        cell_faults=tuple(cell_faults),
    )


def _in_mig_mode(gpu: GpuInfo) -> bool:
    """`gpu` is in MIG mode by its `MIG M.` cell, or, that cell not read (a table cut inside the
    GPU's rows), by its `Volatile Uncorr. ECC` cell's `On`: the table's cell of a GPU in MIG mode,
    whose counts are its slices' (every real table with `On` there reads `Enabled` below it;
    measure40a 16, an H100 cut in its second row)."""
    if gpu.mig_mode is not None:
        return gpu.mig_mode == "Enabled"
    return gpu.ecc_mode == "Enabled" and gpu.ecc_volatile_uncorrectable is None and not gpu.ecc_na


def _table_complete(lines: Sequence[str]) -> bool:
    """Whether the table output ran to its end: the default output always closes with the
    Processes table, and its last box line is a whole closing border. A cut inside a GPU row,
    between GPU rows or inside the process list fails one of the two."""
    if not any(_TABLE_PROCESSES.search(line) for line in lines):
        return False
    box = [line for line in lines if line.strip().startswith(("|", "+"))]
    return bool(box) and _TABLE_BORDER.match(box[-1]) is not None


_BORDER = lazy_re(r"^\+-{20,}\+$")
_ROW_BORDER = lazy_re(r"^\+-[-+]{20,}\+$")
# a GPU's first row the cut went through inside its name cell (`| 6 NVIDIA GeForce RTX 4`, after
# a border): its index is read, nothing else of the GPU; the report's warning names it, and the
# sentence of the cut counts it (steps/checks/missing_facts.py `row_begun`)
TABLE_ROW_BEGUN = "the nvidia-smi table is cut inside the first row of GPU "
_ROW_BEGUN = lazy_re(r"^\s*\|\s*(\d+)\s+\S[^|]*$")


def _row_begun(lines: Sequence[str], gpus: Sequence[GpuInfo]) -> int | None:
    """The index of a GPU whose first row the output's last line begins, right under a border
    closing the rows of the GPUs read (a higher index than theirs), cut inside its name cell."""
    text = [line for line in lines if line.strip()]
    match = _ROW_BEGUN.match(text[-1]) if len(text) > 1 and gpus else None
    if match is None or not _TABLE_BORDER.match(text[-2]):
        return None
    index = int(match.group(1))
    return index if index > max(g.index for g in gpus) else None


def _first_row_begun(lines: Sequence[str]) -> str:
    """Where no GPU row was read and the output's last line begins the first GPU's row right
    under the header rule (or a border), cut inside its name cell (`|   0  GRID P40-24Q`, no
    persistence cell after it): the TABLE_ROW_BEGUN warning naming its index and the name cell
    as far as it goes (the name, or the start of it); "" otherwise."""
    text = [line for line in lines if line.strip()]
    match = _ROW_BEGUN.match(text[-1]) if len(text) > 1 else None
    if match is None or not (_TABLE_BORDER.match(text[-2]) or _ANY_RULE.match(text[-2])):
        return ""
    shown = text[-1].strip()[1:].strip()[len(match.group(1)) :].strip()
    return f"{TABLE_ROW_BEGUN}{match.group(1)} (its index read; its name cell cut after '{shown}')"


def _unjoined(lines: list[str]) -> list[str]:
    """The table's lines with those a paste joined (a lost newline: `+----+----+|   7  NVIDIA
    H100 ...|`) apart again: every table line is as wide as its border (`+-----+`), so a line
    starting `|` or `+` that holds one such line's width and then another's is two."""
    width = next((len(line) for line in lines if _BORDER.match(line.rstrip())), 0)
    # (a table whose top border was cut away: its GPU rows' borders, `+----+----+`, the narrowest
    # of them, as two joined are twice as wide)
    width = width or min((len(r) for line in lines if _ROW_BORDER.match(r := line.rstrip())), default=0)
    if not width:
        return lines
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        while len(line) > width and line[0] in "|+" and line[width - 1] in "|+" and line[width] in "|+":
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return out


def _rewrapped(lines: list[str]) -> list[str]:
    """The table's lines with those a paste wrapped at its width (a ticket's or a mail's 80
    columns, the 91-column table of R525+) whole again: nvidia-smi draws every box line as wide
    as its border and ends it with `|` or `+`, so a box line that does not end so, or is
    narrower than the border and followed by a line that is no box line, is continued by the
    lines after it: glued where that makes the border's width, else joined as facts/wrapped.py
    joins a wrap's pieces (glued where a terminal cut at its column, else after a blank).
    Before, no GPU row of such a paste was read: every rule unverified."""
    border = max(
        (len(line) for line in map("".join, _pieces(lines, 0)) if _BORDER.match(line.strip())), default=0
    )
    groups = _pieces(lines, border)
    if all(len(group) == 1 for group in groups):
        return lines
    # (a line the border's width when glued was cut at a column; of the others, the pieces'
    # lengths tell a terminal's cut from a word wrap's: a table re-spaced narrower than its border)
    whole = [len("".join(group).rstrip()) == border for group in groups]
    ends = [len(piece) for group, w in zip(groups, whole, strict=True) if not w for piece in group[:-1]]
    width = wrap_width(ends) if ends else 0
    return [
        "".join(group).rstrip() if w else join_wrap("\0".join(group), width).rstrip()
        for group, w in zip(groups, whole, strict=True)
    ]


def _pieces(lines: list[str], border: int) -> list[list[str]]:
    """`lines` in groups, each a box line and the pieces of it a wrap put on the lines after it:
    while it does not end in `|` / `+`, or (where the `border`'s width is known) it is narrower
    and the next line is no box line. A line that is a box line of its own (from `|` / `+` to `|` /
    `+`, and too wide to be the rest of the line before) is never a piece: the line before lost
    its closing `|` (a paste), and gluing would hide the GPU or process row after it. A lone
    `|` / `+` is a piece: the closing edge of a table one column wider than the wrap (an
    indented 79-column table wrapped at 80; before, every line of it was read cut)."""
    groups: list[list[str]] = []
    for line in lines:
        whole = "".join(groups[-1]).rstrip() if groups else ""
        box = whole.lstrip()[:1] in ("|", "+")
        short = border and len(whole) < border and line.lstrip()[:1] not in ("|", "+")
        # (a lone `|` / `+` is no box line of its own: the closing edge a wrap put on a line)
        own = len(line.strip()) > 1 and line.strip()[0] in "|+" and line.strip()[-1] in "|+"
        own = own and (not border or len(whole) + len(line.strip()) > border + 1)
        if box and line.strip() and not own and (whole[-1:] not in ("|", "+") or short):
            groups[-1].append(line)
        else:
            groups.append([line])
    return groups


def _table_closed(lines: Sequence[str], i: int) -> bool:
    """Whether `lines[i]`, a blank line right under a table border, is nvidia-smi's own line
    between its GPU table and the next (MIG devices, Processes): a line of spaces as wide as the
    border (what nvidia-smi prints there), or any blank line with the next table's border after
    it. GPU rows are parted by borders only, so every GPU row is above it. A bare empty line at
    the end of the text is not enough: a paste or a code fence adds one after any line (a poster
    who copied GPU 0's rows of a larger table leaves the same text)."""
    if i == 0 or lines[i].strip() or not _TABLE_BORDER.match(lines[i - 1]):
        return False
    if lines[i] and len(lines[i]) == len(lines[i - 1].rstrip()):
        return True
    after = next((line for line in lines[i + 1 :] if line.strip()), "")
    return after.lstrip().startswith("+-")


def _later_table(line: str) -> bool:
    """`line` heads a table nvidia-smi prints after its GPU rows (Processes, MIG devices)."""
    return bool(_TABLE_PROCESSES.search(line)) or "MIG devices:" in line


def _table_gpus(
    lines: list[str], warnings: list[str], driver_model_column: bool
) -> tuple[list[GpuInfo], bool]:
    """The GPU table's GPUs, each from its row and the (up to two) rows after it; and whether the
    GPU table closed: a later table's header was reached (nvidia-smi prints every GPU's rows
    before its MIG devices and Processes tables), so a cut after it took no GPU row."""
    gpus: list[GpuInfo] = []
    i = 0
    rows_whole = False
    last = max((n for n, row in enumerate(lines) if row.strip()), default=-1)  # (where a cut ends)
    tail = lines[last] if last >= 0 else ""
    cut_row = last if tail and _cut_first_row(_cells(tail), tail, driver_model_column, True) else -1
    while i < len(lines):
        line = lines[i]
        if _later_table(line) or (gpus and _table_closed(lines, i)):
            rows_whole = True
            break  # later tables list processes / MIG instances, not GPUs
        cells = _cells(line)
        cut = _cut_first_row(cells, line, driver_model_column, bool(gpus)) if i == last else None
        if cut is not None:
            gpus.append(cut)
            break
        if not _gpu_row(cells):
            i += 1
            continue
        # (the GPU's next rows, up to the next GPU's row: a paste or a `grep -v` that dropped the
        # table's border lines puts one GPU's rows right after another's, and that row is no
        # third row of this GPU's, nor skipped with it)
        cells = _closed_cells(cells, line, i == last)
        rows = [
            _closed_cells(_cells(row), row, i + 1 + n == last) for n, row in enumerate(lines[i + 1 : i + 3])
        ]
        # (nor the last line where it is a GPU's first row the cut went through, `|   3  ...  Off
        # | 00000000:4E:00.0  On |`: that GPU's own)
        # (nor a later table's header, `| Processes: |`, where a post dropped the GPU's third row
        # and the border below it: the real RTX 5080 diagnosis report's)
        ends = (
            n
            for n, row in enumerate(rows)
            if _gpu_row(row) or i + 1 + n == cut_row or _later_table(lines[i + 1 + n])
        )
        rows = rows[: next(ends, len(rows))]
        second = _second_row(rows[0], i + 1 == last) if rows else ["", "", ""]
        third = rows[1] if len(rows) > 1 else []
        gpus.append(_table_gpu(cells, second, third, warnings, driver_model_column))
        i += 1 + len(rows)
    return gpus, rows_whole


def parse_table(text: str) -> GpuReport:
    """Parse the plain `nvidia-smi` table (names may be truncated, as printed); of several
    tables one after another (`nvidia-smi -l`, `watch`: table_frames), the newest whole one,
    else the newest with GPU rows read."""
    # (its lines apart where a page joined them into one: table_joined)
    lines = _unjoined(_rewrapped(rows_apart(text.splitlines())))
    head, frames = table_frames(lines)
    if len(frames) == 1 and not head:
        return _parse_frame(lines, text.endswith("\n"))
    ended = text.endswith("\n")  # (only the last frame may end the text without a line end)
    reports = [_parse_frame(frame, ended or n < len(frames) - 1) for n, frame in enumerate(frames)]
    # (whole to its Processes table's end; else whole in its GPU rows; else with GPU rows read)
    read = [n for n, report in enumerate(reports) if report.gpus]
    rows = [n for n in read if reports[n].complete]
    whole = [n for n in rows if _TABLE_LISTS_CUT not in reports[n].warnings]
    pick = (whole or rows or read or [len(reports) - 1])[-1]
    said = FRAMES_READ.format(count=len(frames)) if len(frames) > 1 else ""
    if len(frames) > 1:
        kind = "whole one" if whole else "one with whole GPU rows" if rows else "one"
        said += f"the last {kind} is read (table {pick + 1} of {len(frames)})"
    # (the process rows of an earlier frame's list above the first table, its header cut or not)
    orphan = _table_processes(head if any(map(_TABLE_PROCESSES.search, head)) else ["Processes:", *head], [])[
        0
    ]
    if head:
        said += ("; " if said else "") + (
            "the lines before its first table (the end of an earlier one, its process list) are read"
            " for its process rows"
        )
    report = replace(reports[pick], warnings=(*reports[pick].warnings, said))
    return carry_frames(report, [r for n, r in enumerate(reports) if n != pick], orphan)


def _parse_frame(lines: list[str], ended: bool = True) -> GpuReport:
    """One table's GPU report from its lines (`ended`: the text ended in a line end)."""
    warnings: list[str] = []
    driver, cuda = _table_versions("\n".join(lines), warnings, ended)
    # the Windows driver model (WDDM / TCC) in the cell Linux prints persistence mode in: the
    # header says `Driver-Model` (R610+) or `TCC/WDDM` (older drivers)
    driver_model_column = any("Driver-Model" in line or "TCC/WDDM" in line for line in lines[:12])
    gpus, rows_whole = _table_gpus(lines, warnings, driver_model_column)
    processes, processes_known, of_every_gpu = _table_processes(lines, warnings)
    htop = None if processes_known else htop_processes(lines)
    if htop is not None:  # (nvidia-htop's table in place of nvidia-smi's own)
        processes, processes_known, of_every_gpu = htop[0], htop[2], htop[2]
        warnings.append(WRAPPER_PROCESSES)
    slices = _table_mig_devices(lines)
    whole = (_table_complete(lines) or (htop is not None and htop[1])) and bool(gpus)
    # cut after the GPU table closed, inside the MIG devices or Processes table: every GPU row
    # is whole, only the process lists may go on in the part cut away
    lists_cut = not whole and rows_whole and bool(gpus)
    # (cut after the GPU rows, before the Processes table began: the `MIG devices:` table, printed
    # between, was cut; a table cut or left short otherwise says so of every rule it shortens)
    # (a `MIG devices:` table that closed on its `No MIG devices found` row was read whole: no
    # slice row is in the part cut away, review N F2)
    # (or cut inside the GPU rows, after a GPU's MIG cell read `Enabled`: its slices' rows come
    # after every GPU's, in the part cut away; measure39a 22, the A800's ECC counts)
    slices_cut = (
        not whole
        and bool(gpus)
        and not any(map(_TABLE_PROCESSES.search, lines))
        and not _no_mig_devices(lines)
    )
    gpus = [
        replace(
            gpu,
            processes=tuple(processes.get(gpu.index, ())),
            # a GPU with no row in a list cut short: its rows may be in the part cut away, its
            # list unread, never "none" (a busy GPU read as listing no process failed)
            processes_known=processes_known and (of_every_gpu or gpu.index in processes),
            # (a table cut anywhere before its process list closed: the list comes after every
            # GPU row, so it is in the part cut away; one cut at a GPU's closing border is no
            # table of GPU rows alone, measure40a 10's desktop read as "no process listed")
            processes_open=(processes_known and gpu.index in processes or not whole) and not of_every_gpu,
            mig_devices=len(slices[gpu.index]) if gpu.index in slices else None,
            mig_slices=tuple(slices.get(gpu.index, ())),
            mig_slices_cut=slices_cut and _in_mig_mode(gpu) and gpu.index not in slices,
        )
        for gpu in gpus
    ]
    if gpus and not whole and not rows_whole:
        # the last GPU read is the one the cut went through: its rows' values read are whole (a
        # cut row is not read), what its rows held after the cut is not
        gpus[-1] = replace(gpus[-1], record_cut=True)
        if (begun := _row_begun(lines, gpus)) is not None:
            warnings.append(f"{TABLE_ROW_BEGUN}{begun} (its index read, nothing else of it)")
    for index in sorted(set(processes) - {gpu.index for gpu in gpus}):
        warnings.append(f"process table lists GPU {index}, which the GPU table does not have")
    if driver is None and not any("banner line is cut short" in w for w in warnings):
        warnings.append("no driver version ('Driver Version:' / 'KMD Version:') in nvidia-smi table")
    if not gpus:
        warnings.append("no GPU rows found in nvidia-smi table")
        if begun_first := _first_row_begun(lines):
            warnings.append(begun_first)
    # (nvidia-smi draws no table of no GPU, it says "No devices were found": a table whose rows
    # none could be read, its `|` lost in a paste, is mangled, never a whole answer)
    complete = whole or lists_cut
    if lists_cut:
        warnings.append(_TABLE_LISTS_CUT)
    elif not complete:
        warnings.append(_TABLE_CUT)
    report = GpuReport(
        "table",
        driver,
        cuda,
        None,  # the table does not state a count
        tuple(gpus),
        tuple(warnings),
        complete=complete,
    )
    # (an nvidia-smi newer than its driver reads the fields the driver lacks as ERR!)
    return with_version_skew(report, "\n".join(lines))
