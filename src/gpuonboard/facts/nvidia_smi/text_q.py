"""The plain-text `nvidia-smi -q` form: :func:`parse_text_q`, the indented `key : value` layout
read into a tree (`text_tree`), one 'GPU <bus id>' section read into a GpuInfo, and a last
record cut off early read as an incomplete report."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuonboard.facts.elision import without_elisions
from gpuonboard.facts.gpu_ids import device_id, subsystem_id
from gpuonboard.facts.nvidia_smi.faults import _field_faults, _may_fault
from gpuonboard.facts.nvidia_smi.model import (
    ClockReadings,
    EngineReadings,
    GpuInfo,
    GpuProcess,
    GpuReport,
    MemoryHealth,
    PcieLink,
    PowerReadings,
    a_sections_view,
)
from gpuonboard.facts.nvidia_smi.reasons import _reasons_from_states
from gpuonboard.facts.nvidia_smi.text_q_end import (
    _BDF_HEAD,
    _OLD_HEAD,
    _capabilities_missing,
    _clocks_closed,
    _cut_in_processes,
    _text_block_cut,
)
from gpuonboard.facts.nvidia_smi.text_tree import (
    _TEXT_LINE,
    _indent,
    _Lines,
    _Section,
    _text_tree,
    _tree_child,
    _tree_first,
    _tree_get,
    _tree_leaves,
    _tree_raw,
    _tree_section,
    _tree_values,
)
from gpuonboard.facts.nvidia_smi.values import (
    EccParts,
    _any_true,
    _clean,
    _compute_mode,
    _ecc_totals,
    _first_deep,
    _float,
    _int,
    _is_na,
    _mib,
    _nvml_status,
    _on_off,
    _pstate,
    _recovery_action,
    _unified,
    _version,
    _yes_no,
    fabric_health,
    read_cuda,
)
from gpuonboard.once import lazy_re

# the vGPU licence's section: R5xx "vGPU Software Licensed Product", R4xx "GRID Licensed Product"
_LICENCE_SECTIONS = ("vGPU Software Licensed Product", "GRID Licensed Product")

_TEXT_PROCESSES = re.compile(r"^(\s*)Processes(?:\s+:\s*(.*?))?\s*$")


def _unit_mib(value: str | None) -> int | None:
    """A memory value of `-q`, which prints its unit (`81920 MiB`): a bare number is one cut
    before its unit (`Total : 14` of 143771 MiB, the text's end), not read, as the table's."""
    cleaned = _clean(value)
    return None if cleaned is None or cleaned.strip().isdigit() else _mib(cleaned)


def _text_gpu_blocks(lines: Iterable[str], read: _Lines) -> list[tuple[str, list[str]]]:
    """(header, body lines) of each 'GPU 00000000:07:00.0' section of `nvidia-smi -q`."""
    blocks: list[tuple[str, list[str]]] = []
    for raw in lines:
        if read[raw].gpu_head:
            blocks.append((raw.strip(), []))
        elif blocks:
            blocks[-1][1].append(raw)
    return blocks


def _wrapped_lines(lines: Sequence[str], read: _Lines) -> dict[int, int]:
    """The lines of a -q text pasted soft-wrapped (at a terminal's, a page's or a chat's width)
    that continue the value above them: inside a GPU record, a line with no ` : ` indented less
    than every `key : value` line of the record, after a line too long for the first word of it
    (the text's longest line is taken as the wrap width). Fragment line -> the line it continues."""
    width = max(map(len, lines), default=0)
    info = [read[line] for line in lines]
    heads = [i for i, line in enumerate(info) if line.gpu_head]
    fragments: dict[int, int] = {}
    # (the lines above the first record, `Driver Version : 580.159.04` wrapped to `580` /
    # `.159.04` at 60 columns, are all `key : value` lines: any other is a fragment)
    for start, end in zip([-1, *heads], [*heads, len(lines)], strict=True):
        keyed = [line.indent for line in info[start + 1 : end] if line.keyed]
        floor = min(keyed, default=0) if start >= 0 else width
        for i in range(max(start + 2, 1), end):
            this = info[i]
            if this.blank or this.keyed or this.indent >= floor:
                continue
            line, prev = lines[i], lines[i - 1]
            if (i - 1 in fragments or info[i - 1].keyed) and len(prev) + 1 + len(line.split()[0]) > width:
                fragments[i] = fragments.get(i - 1, i - 1)
    return fragments


# the units nvidia-smi -q prints after a number, a space between them (`15.65 W`, `1410 MHz`)
_UNIT = lazy_re(r"[KMGT]i?B(?:/s)?|[KMG]?Hz|%|C|W|mW|mV|V|[mun]s|seconds|bank\(s\)")


def _unwrapped(text: str, read: _Lines) -> tuple[str, list[str]]:
    """`text` with each value a paste soft-wrapped joined again (_wrapped_lines), and warnings.
    A fragment is appended as it stands where no character can have been lost: whitespace meets
    at the break, or the text was cut at one column (every line before a fragment is as long as
    the longest, and some fragment starts with the space the cut fell on). Else a word-wrapping
    editor may have dropped the space between two words ('RTX 4080' / 'SUPER'): that value is
    left unread (its label kept, with no value), never read as another one; a fragment with no
    word in it (`=` of an annotation's `<===`), or only a unit after a number (`15.65` / `W`), is
    appended after a space, no word lost."""
    lines = text.split("\n")
    fragments = _wrapped_lines(lines, read)
    if not fragments:
        return text, []
    width = max(len(line) for line in lines)
    # a word wrapper never starts a line with a space (it drops it, or leaves it on the line
    # above): a fragment that does shows the text cut at one column, whatever the words; and
    # it breaks a line at a space, not at the full width but where a space happened to fall
    # above it: so does a text whose every fragment (of two lines or more) follows a line the
    # full width long, a word wrapper leaving each of them so only where a space fell there
    column_cut = all(len(lines[i - 1]) == width for i in fragments) and (
        any(lines[i][:1].isspace() for i in fragments) or len({lines[i - 1] for i in fragments}) >= 2
    )
    out = list(lines)
    unread: dict[int, str] = {}
    for i, owner in sorted(fragments.items()):
        prev, line = lines[i - 1], lines[i]
        if owner in unread:
            continue
        if column_cut or prev[-1:].isspace() or line[:1].isspace():
            out[owner] += line
            continue
        if (
            owner == i - 1
            and _TEXT_LINE.match(prev)
            and not prev.partition(" : ")[2].strip()
            and prev.rstrip().endswith(":")
        ):
            # (the value wholly on the line below its label `Name :`: a word wrap moved it whole,
            # no space of it lost)
            out[owner] = prev.rstrip() + " " + line.strip()
            continue
        if not re.search(r"\w", line) or (re.search(r"\d$", prev) and _UNIT.fullmatch(line.strip())):
            # (a piece with no word, the end of a paste's annotation `<===` cut at 72 columns, or
            # a unit, `15.65` / `W`: a space lost before it loses no word, and nvidia-smi prints one)
            out[owner] += " " + line.strip()
            continue
        label = _TEXT_LINE.match(lines[owner])
        assert label is not None  # (the owner is a `key : value` line)
        out[owner] = f"{label.group(1)}{label.group(2)} :"
        unread[owner] = (
            f"the -q value {label.group(2)!r} was soft-wrapped where a space may have been lost: not read"
        )
    kept = [line for i, line in enumerate(out) if i not in fragments]
    return "\n".join(kept), list(dict.fromkeys(unread.values()))


def _flattened(lines: Sequence[str], read: _Lines) -> bool:
    """Whether a -q GPU record's indentation was lost in a paste (runs of spaces collapsed to
    one, leading whitespace stripped): a section header followed by a line at its own indent,
    where nvidia-smi indents a section's entries under its header. Which section a value
    belongs to cannot be told then; a section's entries read as absent."""
    filled = [line for line in map(read.__getitem__, lines) if not line.blank]
    heads = [at for at, line in enumerate(filled[:-1]) if line.header]
    return any(filled[at + 1].indent == filled[at].indent for at in heads)


# the labels of one process entry under 'Processes' (R418 .. R610 captures)
_PROCESS_KEYS = frozenset(
    {"GPU instance ID", "Compute instance ID", "Process ID", "Type", "Name", "Used GPU Memory"}
)


def _text_processes(lines: Sequence[str]) -> tuple[tuple[GpuProcess, ...], bool]:
    """The 'Processes' section: 'Processes : None', or one 'Process ID' entry per process.
    A 'Processes' header with no entry indented under it is no empty list: the text was cut
    after it, or a paste lost the indentation (runs of spaces collapsed, indents stripped), so
    the entries at the header's own indent are read, and the list is not known to be whole."""
    for i, raw in enumerate(lines):
        match = _TEXT_PROCESSES.match(raw) if "Processes" in raw else None
        if match is None:
            continue
        if match.group(2) is not None:  # "Processes : None" (or N/A)
            return (), match.group(2).strip().lower() == "none"
        indent = _indent(raw)
        rest = [line for line in lines[i + 1 :] if line.strip()]
        nested = bool(rest) and _indent(rest[0]) > indent
        entries: list[dict[str, str]] = []
        for line in rest:
            item = _TEXT_LINE.match(line)
            if item is None or (_indent(line) <= indent if nested else _indent(line) != indent):
                break
            key, value = item.group(2).strip(), (item.group(3) or "").strip()
            if not nested and key not in _PROCESS_KEYS:
                break
            # An entry starts at "GPU instance ID" (R470+) or, without it, at "Process ID".
            starts = key == "GPU instance ID" or (
                key == "Process ID" and (not entries or "Process ID" in entries[-1])
            )
            if starts or not entries:
                entries.append({})
            entries[-1].setdefault(key, value)
        # (a record without its Name and Type lines was cut short: no process, and the list is
        # not whole; `Process ID` with no value read as a compute process "pid None"; a record
        # cut before its Process ID, `GPU instance ID` alone, is no whole list either)
        listed = [e for e in entries if "Process ID" in e]
        whole = [e for e in listed if "Name" in e or "Type" in e]
        processes = tuple(
            GpuProcess(
                pid=_int(entry.get("Process ID")),
                name=_clean(entry.get("Name")) or "",
                type=_clean(entry.get("Type")),
                used_memory_mib=_unit_mib(entry.get("Used GPU Memory")),
            )
            for entry in whole
        )
        return processes, nested and len(whole) == len(entries)
    return (), False


def _entry_cut(lines: Sequence[str]) -> bool:
    """Whether a -q GPU record's process list holds an entry cut short: an entry without its
    Process ID, or without both its Type and Name (`GPU instance ID : N/A` last, the rest of the
    entry cut away). Each entry of a whole list has them; `Processes : None` has no entry."""
    for raw in lines:
        match = _TEXT_PROCESSES.match(raw) if "Processes" in raw else None
        if match is not None:
            return match.group(2) is None and not _text_processes(lines)[1]
    return False


def _processes_closed(lines: Sequence[str]) -> bool:
    """Whether a -q GPU record's process list ends in it: `Processes : None`, or a section of
    the record after the list's entries (`Capabilities`). A record cut in or before its list,
    whatever of it was read, leaves the list open."""
    for i, raw in enumerate(lines):
        match = _TEXT_PROCESSES.match(raw) if "Processes" in raw else None
        if match is None:
            continue
        if match.group(2) is not None:
            return True
        indent = _indent(raw)
        return any(line.strip() and _indent(line) <= indent for line in lines[i + 1 :])
    return False


def _text_ecc(section: Mapping[str, Any], kind: str) -> EccParts:
    """The raw (correctable, uncorrectable) parts under 'ECC Errors' > Volatile|Aggregate: the
    old schema's Single / Double Bit totals, else SRAM and DRAM (values._ecc_totals sums them)."""
    node = _tree_section(section, "ECC Errors")
    node = _tree_section(node, kind)
    if _tree_child(node, "Single Bit") is not None or _tree_child(node, "Double Bit") is not None:  # older
        return (_tree_raw(node, "Single Bit", "Total"),), (_tree_raw(node, "Double Bit", "Total"),)
    sram_unc: tuple[str | None, ...] = (_tree_raw(node, "SRAM Uncorrectable"),)
    if sram_unc[0] is None:
        sram_unc = (
            _tree_raw(node, "SRAM Uncorrectable Parity"),
            _tree_raw(node, "SRAM Uncorrectable SEC-DED"),
        )
    return (
        (_tree_raw(node, "SRAM Correctable"), _tree_raw(node, "DRAM Correctable")),
        (*sram_unc, _tree_raw(node, "DRAM Uncorrectable")),
    )


def _text_pcie(section: Mapping[str, Any]) -> PcieLink:
    """The PCIe link under 'PCI' > 'GPU Link Info': generation and width, current and max."""
    link = ("PCI", "GPU Link Info")
    return PcieLink(
        pcie_gen_current=_int(_tree_get(section, *link, "PCIe Generation", "Current")),
        pcie_gen_max=_int(_tree_get(section, *link, "PCIe Generation", "Max")),
        pcie_gen_device_max=_int(_tree_get(section, *link, "PCIe Generation", "Device Max")),
        pcie_gen_host_max=_int(_tree_get(section, *link, "PCIe Generation", "Host Max")),
        pcie_width_current=_int(_tree_get(section, *link, "Link Width", "Current")),
        pcie_width_max=_int(_tree_get(section, *link, "Link Width", "Max")),
    )


def _text_memory_health(section: Mapping[str, Any]) -> MemoryHealth:
    """ECC totals, retired pages, remapped rows (and their bank histogram) and the memory repair
    state of one -q GPU section."""
    vol_corr, vol_unc, agg_corr, agg_unc = _ecc_totals(
        _text_ecc(section, "Volatile"), _text_ecc(section, "Aggregate")
    )
    retired = _tree_section(section, "Retired Pages")
    remapped = _tree_section(section, "Remapped Rows")
    histogram = "Bank Remap Availability Histogram"
    return MemoryHealth(
        ecc_volatile_correctable=vol_corr,
        ecc_volatile_uncorrectable=vol_unc,
        ecc_aggregate_correctable=agg_corr,
        ecc_aggregate_uncorrectable=agg_unc,
        retired_pages_sbe=_int(_tree_get(retired, "Single Bit ECC")),
        retired_pages_dbe=_int(_tree_get(retired, "Double Bit ECC")),
        retired_pages_pending=_any_true(
            _yes_no(_tree_get(retired, "Pending Page Blacklist")),
            _yes_no(_tree_get(retired, "Pending Page Retirement")),
            _yes_no(_tree_get(retired, "Pending")),
        ),
        remapped_rows_correctable=_int(_tree_get(remapped, "Correctable Error")),
        remapped_rows_uncorrectable=_int(_tree_get(remapped, "Uncorrectable Error")),
        remapped_rows_pending=_yes_no(_tree_get(remapped, "Pending")),
        remapped_rows_failure=_yes_no(_tree_get(remapped, "Remapping Failure Occurred")),
        remap_banks_max=_int(_tree_get(remapped, histogram, "Max")),
        remap_banks_high=_int(_tree_get(remapped, histogram, "High")),
        remap_banks_partial=_int(_tree_get(remapped, histogram, "Partial")),
        remap_banks_low=_int(_tree_get(remapped, histogram, "Low")),
        remap_banks_none=_int(_tree_get(remapped, histogram, "None")),
        sram_threshold_exceeded=_yes_no(
            _tree_get(section, "ECC Errors", "Aggregate", "SRAM Threshold Exceeded")
        ),
        channel_repair_pending=_yes_no(_tree_get(section, "ECC Errors", "Channel Repair Pending")),
        tpc_repair_pending=_yes_no(_tree_get(section, "ECC Errors", "TPC Repair Pending")),
        unrepairable_memory=_yes_no(_tree_get(section, "ECC Errors", "Unrepairable Memory")),
    )


# blocks of the power section that hold other figures under the same labels' words (R610:
# "GPU Base Power" beside "GPU Ceiling Power Limit")
_POWER_OTHER_BLOCKS = frozenset({"gpu base power"})


def _tree_deep(node: Mapping[str, Any], *labels: str) -> str | None:
    """The value of the first of `labels` at any depth of `node` (values._first_deep); blocks of
    _POWER_OTHER_BLOCKS are left out."""

    def children(block: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [
            c for k, c in block.items() if isinstance(c, dict) and k.casefold() not in _POWER_OTHER_BLOCKS
        ]

    return _first_deep([node], labels, _tree_get, children)


def _text_power(section: Mapping[str, Any]) -> PowerReadings:
    """Power draw and limits: 'GPU Power Readings' from R535, 'Power Readings' before; each
    label at any depth of the section (R610 nests the limits one level deeper). Read whole
    (`power_read`) where a section follows it: a record cut inside it is not."""
    power = _tree_section(section, "GPU Power Readings", "Power Readings")
    return PowerReadings(
        power_read=bool(power) and any(v is power for v in list(section.values())[:-1]),
        power_draw_w=_float(
            _tree_deep(
                power,
                "Power Draw",
                "Average Power Draw",
                "Instantaneous Power Draw",
                "Instant Power Draw",
            )
        ),
        power_limit_w=_float(_tree_deep(power, "Enforced Power Limit", "Current Power Limit", "Power Limit")),
        default_power_limit_w=_float(_tree_deep(power, "Default Power Limit")),
        max_power_limit_w=_float(_tree_deep(power, "Max Power Limit")),
        requested_power_limit_w=_float(_tree_deep(power, "Requested Power Limit")),
    )


def _text_clocks(section: Mapping[str, Any]) -> ClockReadings:
    """'Clocks' SM and 'Max Clocks' SM, 'Applications Clocks' and 'Default Applications Clocks'
    Graphics (R580+: "Requested functionality has been deprecated", no value)."""
    return ClockReadings(
        clocks_sm_mhz=_int(_tree_get(section, "Clocks", "SM")),
        clocks_sm_max_mhz=_int(_tree_get(section, "Max Clocks", "SM")),
        clocks_applications_mhz=_int(_tree_get(section, "Applications Clocks", "Graphics")),
        clocks_default_applications_mhz=_int(_tree_get(section, "Default Applications Clocks", "Graphics")),
    )


def _text_engines(section: Mapping[str, Any]) -> EngineReadings:
    """The video / JPEG / optical-flow engines' utilisation and the encoder's active sessions
    ('Utilization' > Encoder, Decoder, JPEG, OFA; 'Encoder Stats' > Active Sessions)."""
    return EngineReadings(
        encoder_util_pct=_float(_tree_get(section, "Utilization", "Encoder")),
        decoder_util_pct=_float(_tree_get(section, "Utilization", "Decoder")),
        jpeg_util_pct=_float(_tree_get(section, "Utilization", "JPEG")),
        ofa_util_pct=_float(_tree_get(section, "Utilization", "OFA")),
        encoder_sessions=_int(_tree_get(section, "Encoder Stats", "Active Sessions")),
    )


def _lines_read_in_last(tree: Mapping[str, Any], newline: bool) -> tuple[str, ...]:
    """The value lines of a cut record's last section that were read whole, as
    'section/line' (casefolded: `gpu virtualization mode/virtualization mode` of a -q cut after
    it): the section may go on in the part cut away, but a rule that reads only such a line
    has it whole; its last line only where the text ends with the newline after it."""
    if not tree:
        return ()
    last = list(tree)[-1]
    section = tree[last]
    if not isinstance(section, Mapping):
        return ()
    labels = list(section)
    whole = labels if newline else labels[:-1]
    return tuple(f"{last}/{label}".casefold() for label in whole if not isinstance(section[label], Mapping))


def _text_gpu(
    key: str, lines: list[str], section: Mapping[str, Any], position: int, warnings: list[str]
) -> GpuInfo:
    """One 'GPU <bus id>' section of `nvidia-smi -q` (its `lines`, read into the tree `section`)."""
    name = _tree_get(section, "Product Name")
    if name is None:
        warnings.append(f"{key}: no Product Name")
    reasons_section = _tree_section(section, "Clocks Event Reasons", "Clocks Throttle Reasons")
    reasons, reasons_known, reasons_read = _reasons_from_states(
        [(label, value) for label, value in reasons_section.items() if isinstance(value, str)],
        key,
        warnings,
    )
    processes, processes_known = _text_processes(lines)
    faults, cell_faults = _text_faults(section)
    # (drivers before R331 print the framebuffer's as `Memory Usage`, 270's in `Mb`: `5375 Mb`)
    framebuffer = _tree_section(section, "FB Memory Usage", "Memory Usage")
    return GpuInfo(
        index=position,
        name=name or "",
        uuid=_tree_get(section, "GPU UUID"),
        serial=_tree_get(section, "Serial Number"),
        minor_number=_int(_tree_get(section, "Minor Number")),
        pci_bus_id=_tree_get(section, "PCI", "Bus Id") or key[4:].strip(),
        pci_device_id=device_id(_tree_get(section, "PCI", "Device Id")),
        pci_subsystem_id=subsystem_id(_tree_get(section, "PCI", "Sub System Id")),
        memory_total_mib=_unit_mib(_tree_get(framebuffer, "Total")),
        memory_used_mib=_unit_mib(_tree_get(framebuffer, "Used")),
        memory_unified=_unified(_tree_raw(section, "FB Memory Usage", "Total")),
        ecc_mode=_on_off(_tree_get(section, "ECC Mode", "Current")),
        ecc_na=_is_na(_tree_raw(section, "ECC Mode", "Current")),
        persistence_mode=_on_off(_tree_get(section, "Persistence Mode")),
        display_active=_on_off(_tree_get(section, "Display Active")),
        driver_model=_tree_get(section, "Driver Model", "Current"),
        **_text_pcie(section),
        # (R304-era `-q` says `Gpu : 49 C`)
        temperature_c=_int(_tree_first(section, ("Temperature", "GPU Current Temp"), ("Temperature", "Gpu"))),
        mig_mode=_on_off(_tree_get(section, "MIG Mode", "Current")),
        mig_na=_is_na(_tree_raw(section, "MIG Mode", "Current")),
        mig_mode_pending=_on_off(_tree_get(section, "MIG Mode", "Pending")),
        # (the tree keeps one of the repeated `MIG Device` records: they are counted by line)
        mig_devices=sum(map("MIG Device".__eq__, map(str.strip, lines))) or None,
        vbios=_tree_get(section, "VBIOS Version"),
        product_brand=_tree_get(section, "Product Brand"),
        product_architecture=_tree_get(section, "Product Architecture"),
        **_text_memory_health(section),
        **_text_power(section),
        **_text_clocks(section),
        clock_event_reasons=reasons,
        clock_event_reasons_known=reasons_known,
        clock_event_reasons_read=reasons_read,
        performance_state=_pstate(_tree_get(section, "Performance State")),
        # "Gpu" up to R535, "GPU" from R580 (the 580.159.04 capture)
        utilization_gpu_pct=_int(_tree_first(section, ("Utilization", "Gpu"), ("Utilization", "GPU"))),
        **_text_engines(section),
        # absolute thresholds only, not the "... T.Limit Temp" margins
        temperature_slowdown_c=_int(_tree_get(section, "Temperature", "GPU Slowdown Temp")),
        temperature_max_c=_int(_tree_get(section, "Temperature", "GPU Shutdown Temp")),
        virtualization_mode=_tree_get(section, "GPU Virtualization Mode", "Virtualization Mode"),
        license_status=_tree_first(section, *((label, "License Status") for label in _LICENCE_SECTIONS)),
        licensed_product=_tree_first(section, *((label, "Product Name") for label in _LICENCE_SECTIONS)),
        compute_mode=_compute_mode(_tree_get(section, "Compute Mode")),
        processes=processes,
        processes_known=processes_known,
        faults=faults,
        cell_faults=cell_faults,
        pcie_replays=_int(_tree_get(section, "PCI", "Replays Since Reset")),
        pcie_replay_rollovers=_int(_tree_get(section, "PCI", "Replay Number Rollovers")),
        board_part_number=_tree_get(section, "Board Part Number"),
        fabric_state=_tree_get(section, "Fabric", "State"),
        fabric_status=_nvml_status(_tree_raw(section, "Fabric", "Status")),
        fabric_health=fabric_health(lambda _key, label: _tree_raw(section, "Fabric", "Health", label)),
        recovery_action=_recovery_action(
            _tree_raw(section, "GPU Recovery Action"),
            _tree_raw(section, "GPU Reset Status", "Reset Required"),
            _tree_raw(section, "GPU Reset Status", "Drain and Reset Recommended"),
        ),
    )


def _text_faults(section: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """_field_faults of a GPU record's tree, its values screened first (_may_fault), with no
    label path built: a record none of whose values holds a fault word or marker has none, and
    _field_faults, which screens a part of those values, would find none (a fault word stands
    within one value, so a part of them holds one only where the whole does)."""
    if not _may_fault(_tree_values(section, [])):
        return (), ()
    return _field_faults(_tree_leaves(section), "Product Name")


TEXT_CUT = "the nvidia-smi -q output ends mid-record: incomplete probe, rerun"
TEXT_FLAT = (
    "the nvidia-smi -q text lost its indentation (a paste that collapsed runs of spaces or stripped"
    " leading ones): which section a value belongs to cannot be told, and a section read as empty"
    " may not be"
)
TEXT_UNJOINED = "a value of the nvidia-smi -q text was soft-wrapped in the paste and could not be rejoined"


TEXT_LISTS_CUT = (
    "the nvidia-smi -q output ends inside or after the last GPU record's Processes: every GPU's"
    " values were read, its process list may go on in the part cut away"
)


_TEXT_ELIDED = "the nvidia-smi -q text has lines left out by hand, marked `...`"
_TEXT_GREPPED = "the nvidia-smi -q text has lines left out by grep, marked `--` between the groups it printed"


# two `label : value` fields on one line (a paste that lost the newline between them: "Persistence
# Mode   : Disabled    Addressing Mode    : HMM"): a value, wide spaces, then a label padded to
# nvidia-smi's colon column. A value never holds a padded " : " of its own.
_JOINED_FIELDS = lazy_re(
    r"(?m)^([ \t]*)(\S[^\n]*?\s+:[ \t]+\S(?:[^\n]*?\S)?)[ \t]{3,}(\S[^\n:]*?\S[ \t]{2,}:(?:[ \t][^\n]*)?)$"
)


def _split_fields(m: re.Match[str]) -> str:
    """The two fields of a joined line, each on its own line at the line's indentation."""
    return f"{m.group(1)}{m.group(2)}\n{m.group(1)}{m.group(3)}"


# a line whose first character other than whitespace is a colon (a match of _JOINED_FIELDS may
# run from a label's line over line breaks to such a line: `\s+:`)
_LEADING_COLON = re.compile(r"\n[^\S\n]*:")
# the longest line _JOINED_FIELDS is matched on (two fields of -q are some 100 characters; its
# lazy parts' work grows faster than a line's length: a 100 KB line of ` : ` took minutes)
_JOINED_LINE_MAX = 1000
# what a line that _JOINED_FIELDS matches holds: two colons, each after a space (its first
# field's `\s+:`, its second's `[ \t]{2,}:`); a bus id's or a clock time's colons are not so
_SPACED_COLONS = re.compile(r"\s:[^\n]*\s:")


def _split_joined_fields(text: str) -> str:
    """`text` with each line of two joined fields (_JOINED_FIELDS) split in two. A match ends at
    the end of the line that holds both its colons, and starts on that line unless that line
    starts with a colon: where no line does, only the lines with two colons, each after a space,
    are matched, each alone (the same result as the whole text matched, at a fraction of the
    regex work)."""
    lines = text.split("\n")
    if _LEADING_COLON.search("\n" + text) and max(map(len, lines)) <= _JOINED_LINE_MAX:
        return _JOINED_FIELDS.sub(_split_fields, text)
    for i, line in enumerate(lines):
        if len(line) <= _JOINED_LINE_MAX and line.count(":") >= 2 and _SPACED_COLONS.search(line):
            lines[i] = _JOINED_FIELDS.sub(_split_fields, line)
    return "\n".join(lines)


# the lines of a GPU's record whose value names the GPU, its card or its firmware: cut at any
# character, what is left reads as another's (`NVIDIA H2`, a UUID or bus id short of its digits)
_NAMING_LINE = lazy_re(
    r"^\s*(Product Name|Product Brand|Product Architecture|Serial Number|GPU UUID|VBIOS Version"
    r"|Board Part Number|GPU Part Number|Bus Id|Device Id|Sub System Id)\s+:\s*\S",
    re.IGNORECASE,
)


def _ends_in_label(lines: Sequence[str]) -> bool:
    """Whether the text's last line is a label with nothing after it (a section's header, or a
    field cut before its colon: `Process ID`): a whole `-q` ends with a value (`Processes : None`,
    `Used GPU Memory : 4 MiB`), so what that label held was cut off."""
    last = next((line for line in reversed(lines) if line.strip()), "")
    match = _TEXT_LINE.match(last)
    return bool(last.startswith((" ", "\t"))) and match is not None and not (match.group(3) or "").strip()


_VERSION_LABELS = ("KMD Version", "Driver Version", "CUDA UMD Version", "CUDA Version")


def _whole_tree(every: Sequence[str], trees: Sequence[_Section], read: _Lines) -> _Section:
    """_text_tree(every, read), its GPU records' sections taken from `trees` (the records' own
    trees, in order) where they are the same: every line of the records below the first head
    indented or with no node (blank, the `=====` banner), so each nests under its head as it
    does in its own tree, and each head a section. Else (a paste that lost its indentation, a
    head such as `GPU 0: `) the whole text is walked again."""
    first = next((i for i, raw in enumerate(every) if read[raw].gpu_head), None)
    if first is None:
        return _text_tree(every, read)
    flush = [read[raw] for raw in every[first:] if raw and not raw[0].isspace()]
    heads = [line.node for line in flush if line.gpu_head]
    if len(heads) != len(trees) or any(
        line.node is not None and not (line.gpu_head and line.node[2] is None) for line in flush
    ):
        return _text_tree(every, read)
    root = _text_tree(every[:first], read)
    for node, section in zip(heads, trees, strict=True):
        assert node is not None  # (a head is a section header: a node with no value)
        root.setdefault(node[1], section)
    return root


def _whole_header(tree: Mapping[str, Any], every: Sequence[str], warnings: list[str]) -> Mapping[str, Any]:
    """The -q header's tree, less a version field on the text's last line: a -q cut inside its
    header (`Driver Version : 590.48.` of 590.48.01) gives no version that may be cut short."""
    last = next((line.split(":", 1)[0].strip() for line in reversed(every) if line.strip()), "")
    if last not in _VERSION_LABELS or last not in tree:
        return tree
    warnings.append(f"the -q text ends on its '{last}' line, which may be cut short: not read")
    return {label: value for label, value in tree.items() if label != last}


_GREP_SEPARATOR = re.compile(r"(?m)^--[ \t]*\n")


def parse_text_q(text: str) -> GpuReport:
    """Parse the plain-text `nvidia-smi -q` form (a paste soft-wrapped joined again; one that
    lost its indentation, or a wrapped value that cannot be rejoined, is an incomplete report,
    and so is one with lines left out by hand: `[...]`, read as no section)."""
    text, elided = without_elisions(text)
    # (grep's `--` between the groups of lines `grep -A/-B` printed: lines left out there, as a
    # paste's `[...]`; read as a section before, it took the record's later fields: the
    # `GPU Virtualization Mode` of a `-q | grep -A 3` under it was not read)
    grouped = _GREP_SEPARATOR.sub("", text)
    grepped = grouped != text
    text = _split_joined_fields(grouped)
    read = _Lines()
    text, unjoined = _unwrapped(text, read)
    warnings = list(unjoined)
    every = text.splitlines()
    blocks = _text_gpu_blocks(every, read)
    trees = [_text_tree(lines, read) for _, lines in blocks]
    tree = _whole_tree(every, trees, read)
    attached = _int(_tree_get(tree, "Attached GPUs"))
    complete = True
    flat = any(_flattened(lines, read) for _, lines in blocks)
    if blocks:
        old = all(_OLD_HEAD.match(key) for key, _ in blocks)
        # (the 270 format's: whether its last record's Clocks section closed it)
        bdf = _clocks_closed(blocks[-1][1]) if all(_BDF_HEAD.match(key) for key, _ in blocks) else None
        if _text_block_cut(trees[0], trees[-1], len(blocks) == 1, old, bdf) or _capabilities_missing(
            tree, trees[-1]
        ):
            complete = False
            if blocks[-1][1] and (not text.endswith("\n") or _NAMING_LINE.match(blocks[-1][1][-1])):
                # the last line itself was cut mid-value ("Product Name : NVIDIA H1"): drop it;
                # a name or identifier last in a record cut short may be cut though a newline
                # follows it (a file saved by an editor ends with one): "NVIDIA H2" of an H200
                blocks[-1] = (blocks[-1][0], blocks[-1][1][:-1])
                trees[-1] = _text_tree(blocks[-1][1], read)
    elif attached != 0:
        # "Attached GPUs : 8" and not one GPU record after it, or a header cut before that line
        complete = False
    if blocks and _ends_in_label(every):
        complete = False  # ("Processes", "Process ID" last: its values cut off)
    elif blocks and not flat and _entry_cut(blocks[-1][1]):
        complete = False  # (the last entry's Process ID, Name and Type not all read: cut off)
    gpus = [
        _text_gpu(key, lines, section, position, warnings)
        for position, ((key, lines), section) in enumerate(zip(blocks, trees, strict=True))
    ]
    # cut inside or after the last record's Processes (nvidia-smi prints it after every other
    # section it reads; `Capabilities` alone follows): each GPU's record whole but that list
    lists_cut = not complete and bool(gpus) and _cut_in_processes(trees, attached)
    if not complete and gpus and not _processes_closed(blocks[-1][1]):
        # the last GPU's block is where the output was cut: its process list may go on there
        # (whole entries read or not: a cut inside an entry leaves the list not known whole)
        gpus[-1] = replace(gpus[-1], processes_open=True)
    if not complete and gpus and not lists_cut:
        # (its values read are whole lines; its sections before the last one it reached closed)
        closed = tuple(label.casefold() for label in list(trees[-1])[:-1])
        closed += _lines_read_in_last(trees[-1], text.endswith("\n"))
        gpus[-1] = replace(gpus[-1], record_cut=True, parts_read=closed)
    complete = complete or lists_cut
    # (a whole record that names no GPU: a `-q -d SECTION` view, which prints only those sections)
    gpus = [
        replace(g, sections_view=tuple(tree))
        if not g.name and not g.record_cut and a_sections_view(tree) and not flat
        else g
        for g, tree in zip(gpus, trees, strict=True)
    ]
    # R610 marks "Driver Version" / "CUDA Version" deprecated for "KMD Version" / "CUDA UMD Version"
    # (a version on the text's last line may be cut inside it, whatever newline an editor added)
    head = _whole_header(tree, every, warnings)
    driver = _version(
        _tree_first(head, ("KMD Version",), ("Driver Version",)), "the -q driver version", warnings
    )
    printed = (_tree_raw(head, "CUDA UMD Version"), _tree_raw(head, "CUDA Version"))
    cuda = read_cuda(printed, "the -q CUDA version", warnings)
    if driver is None and head is tree:
        warnings.append("no 'Driver Version' in nvidia-smi -q text")
    if attached is not None and attached != len(gpus):
        warnings.append(f"Attached GPUs says {attached} but {len(gpus)} GPU sections found")
    # (a cut is said as one unless the paste lost the indentation: that says more)
    gap = TEXT_FLAT if flat else _TEXT_ELIDED if elided else TEXT_UNJOINED if unjoined and complete else ""
    # (grep's `--`: lines of the records left out, as a cut leaves them, no gap in the set: its
    # `Attached GPUs` still says whether every GPU's record was read)
    warnings += [f"{_TEXT_GREPPED}: incomplete report"] if grepped and not gap else []
    elided = elided or grepped
    warnings += [TEXT_CUT] if not complete else [TEXT_LISTS_CUT] if lists_cut else []
    warnings += [f"{gap}: incomplete report"] if gap else []
    complete = complete and not elided
    return GpuReport(
        "text",
        driver,
        cuda,
        attached,
        tuple(gpus),
        tuple(warnings),
        complete=complete and not gap,
        gap=gap,
        gap_spares_names=gap == TEXT_FLAT and _one_record(text, attached, len(gpus), complete),
    )


# a `-q` GPU record's name line, at any indent
_PRODUCT_NAME = re.compile(r"^[^\S\n]*Product Name\s*:", re.M)


def _one_record(text: str, attached: int | None, records: int, whole: bool) -> bool:
    """The -q text holds one GPU's record and says so: one record and one `Product Name` line (no
    other GPU's record, whole or cut, whose values could mix with it), under `Attached GPUs : 1`
    or, in the format before 270, which prints no such line, read `whole` (as its indented
    form's count is read)."""
    said = attached == 1 or (attached is None and whole)
    return said and records == 1 and len(_PRODUCT_NAME.findall(text)) == 1
