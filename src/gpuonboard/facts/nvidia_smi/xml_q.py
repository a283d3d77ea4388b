"""The `nvidia-smi -q -x` form (DTD v11..v13): :func:`parse_xml`, one <gpu> element read into a
GpuInfo, and a document cut off before its closing tag read as an incomplete report."""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import replace
from typing import cast

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
from gpuonboard.facts.nvidia_smi.reasons import NO_REASONS, Reasons, _reasons_from_states
from gpuonboard.facts.nvidia_smi.values import (
    FABRIC_HEALTH,
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

_DOCTYPE = lazy_re(r"<!DOCTYPE[^>\[]*(\[[^\]]*\])?\s*>", re.IGNORECASE)


def _xml_text(node: ET.Element | None, path: str) -> str | None:
    """Text at `path` below `node`, cleaned; None when missing or N/A."""
    return _clean(_xml_raw(node, path))


def _xml_raw(node: ET.Element | None, path: str) -> str | None:
    """Text at `path` below `node` as written; None when missing. For the value readers (_int,
    _mib, _yes_no, ...): each cleans its value itself, and a value cleaned twice is the value
    cleaned once, so the second clean of ~50 values a GPU is left out."""
    if node is None:
        return None
    found = _xml_find(node, path)
    return None if found is None else found.text


@functools.lru_cache(maxsize=512)
def _path_tags(path: str) -> tuple[str, ...] | None:
    """The tags of a plain `a/b/c` path, None for any other ElementPath expression."""
    tags = tuple(path.split("/"))
    return tags if all(t and t.replace("_", "a").isalnum() for t in tags) else None


def _xml_find(node: ET.Element, path: str) -> ET.Element | None:
    """node.find(path), the first match in document order, with a plain `a/b/c` path walked by
    the C `find` / `findall` of each tag rather than by ElementPath's Python (~60 lookups a GPU)."""
    tags = _path_tags(path)
    if tags is None or len(tags) == 1:
        return node.find(path)  # (a single tag is looked up by the C find itself)
    if len(tags) == 2:  # (most paths: the first <a>'s <b> looked up here, without further calls)
        parent = node.find(tags[0])
        found = None if parent is None else parent.find(tags[1])
        if parent is None or found is not None:
            return found
    return _xml_find_tags(node, tags, 0)


def _xml_find_tags(node: ET.Element, tags: tuple[str, ...], start: int) -> ET.Element | None:
    """The first element at tags[start:] below `node`, in document order: below the first
    element of tags[start] (nvidia-smi writes each tag once under its parent, so the C `find`
    of that one is nearly always the answer), else below the ones after it, in order."""
    if start == len(tags) - 1:
        return node.find(tags[start])
    first = node.find(tags[start])
    if first is None:
        return None
    found = _xml_find_tags(first, tags, start + 1)
    if found is not None:
        return found
    for child in node.findall(tags[start])[1:]:
        found = _xml_find_tags(child, tags, start + 1)
        if found is not None:
            return found
    return None


# a walk's plan: each tag of a level -> (its path, whether it is looked up, the level below it)
_Trie = dict[str, tuple[str, bool, "_Trie"]]


# a walk's plan and the paths it looks up
_Plan = tuple[_Trie, frozenset[str]]


def _plan(*paths: str) -> _Plan:
    """The walk's plan for `paths` (plain `a/b/c` paths): the elements they pass through."""
    trie: _Trie = {}
    for path in paths:
        level, done = trie, ""
        for tag in path.split("/"):
            done = f"{done}/{tag}" if done else tag
            at, wanted, below = level.get(tag, (done, False, {}))
            level[tag] = (at, wanted or done == path, below)
            level = below
    return trie, frozenset(paths)


def _walk(node: ET.Element, trie: _Trie, found: dict[str, ET.Element]) -> None:
    """Record below `node` the first element, in document order, at each looked-up path of
    `trie`, entering only the elements those paths pass through."""
    for child in node:
        step = trie.get(child.tag)
        if step is None:
            continue
        path, wanted, below = step
        if wanted and path not in found:
            found[path] = child
        if below:
            _walk(child, below, found)


_NOTHING = ET.Element("nothing")  # (no children, and none is ever added)


class _Found:
    """The elements at `paths` below one node, found in one walk (~90 lookups a GPU, each of
    which _xml_find made by a C `find` over the node's ~60 children): `find(path)` is
    _xml_find(node, path), the first match in document order (the walk visits the elements in
    that order and keeps the first at each path); a path not among `paths` is looked up by
    _xml_find itself. raw and text read as _xml_raw and _xml_text do."""

    __slots__ = ("_found", "_node", "_paths")

    def __init__(self, node: ET.Element | None, plan: _Plan) -> None:
        self._node = _NOTHING if node is None else node  # (None: every path reads as missing)
        self._paths = plan[1]
        self._found: dict[str, ET.Element] = {}
        _walk(self._node, plan[0], self._found)

    def find(self, path: str) -> ET.Element | None:
        found = self._found.get(path)  # (an element found is never None)
        if found is None and path not in self._paths:
            return _xml_find(self._node, path)
        return found

    def raw(self, path: str) -> str | None:
        found = self._found.get(path)  # (find's, inline: ~600 calls a host)
        if found is None and path not in self._paths:
            found = _xml_find(self._node, path)
        return None if found is None else found.text

    def text(self, path: str) -> str | None:
        return _clean(self.raw(path))

    def printed(self, path: str) -> str | None:
        """Text at `path` as written, "" for an element printed empty (`<dram_uncorrectable/>`: a
        count not given, where raw says None as of an element not there); None when missing."""
        found = self.find(path)
        return None if found is None else (found.text or "")


# the paths each reader looks up (a path left out of its plan is still read, by _xml_find)
_GPU_PLAN = _plan(
    *("product_name", "product_brand", "product_architecture", "uuid", "serial", "vbios_version"),
    "minor_number",
    *("board_part_number", "persistence_mode", "display_active", "compute_mode", "performance_state"),
    *("pci/pci_bus_id", "pci/pci_device_id", "pci/pci_sub_system_id", "pci/pci_gpu_link_info"),
    *("pci/replay_counter", "pci/replay_rollover_counter", "fb_memory_usage/total", "fb_memory_usage/used"),
    *("ecc_mode/current_ecc", "driver_model/current_dm", "mig_mode/current_mig", "mig_mode/pending_mig"),
    *("temperature/gpu_temp", "temperature/gpu_temp_slow_threshold", "temperature/gpu_temp_max_threshold"),
    *("utilization/gpu_util", "utilization/encoder_util", "utilization/decoder_util"),
    *("utilization/jpeg_util", "utilization/ofa_util", "encoder_stats/session_count"),
    *("gpu_virtualization_mode/virtualization_mode", "vgpu_software_licensed_product/license_status"),
    "vgpu_software_licensed_product/licensed_product_name",
    *("fabric/state", "fabric/status", *(f"fabric/health/{key}" for key, _label in FABRIC_HEALTH)),
    *(
        "gpu_recovery_action",
        "gpu_reset_status/reset_required",
        "gpu_reset_status/drain_and_reset_recommended",
    ),
    *("ecc_errors/volatile", "ecc_errors/aggregate", "ecc_errors/aggregate/sram_threshold_exceeded"),
    *("ecc_errors/channel_repair_pending", "ecc_errors/tpc_repair_pending", "ecc_errors/unrepairable_memory"),
    *("retired_pages", "remapped_rows", "gpu_power_readings", "power_readings"),
    *("clocks_event_reasons", "clocks_throttle_reasons", "clocks/sm_clock", "max_clocks/sm_clock"),
    *("applications_clocks/graphics_clock", "default_applications_clocks/graphics_clock"),
)
_ECC_PLAN = _plan(
    *("single_bit", "double_bit", "single_bit/total", "double_bit/total", "sram_correctable"),
    *("dram_correctable", "sram_uncorrectable", "sram_uncorrectable_parity", "sram_uncorrectable_secded"),
    "dram_uncorrectable",
)
_LINK_PLAN = _plan(
    *("pcie_gen/current_link_gen", "pcie_gen/max_link_gen", "pcie_gen/max_device_link_gen"),
    *("pcie_gen/max_host_link_gen", "link_widths/current_link_width", "link_widths/max_link_width"),
)
_RETIRED_PLAN = _plan(
    *("multiple_single_bit_retirement/retired_count", "double_bit_retirement/retired_count"),
    *("pending_blacklist", "pending_retirement"),
)
_REMAPPED_PLAN = _plan(
    *("remapped_row_corr", "remapped_row_unc", "remapped_row_pending", "remapped_row_failure"),
    *(
        f"row_remapper_histogram/row_remapper_histogram_{n}"
        for n in ("max", "high", "partial", "low", "none")
    ),
)


def _xml_first(node: ET.Element | None, *paths: str) -> str | None:
    """The first of `paths` below `node` that has a value."""
    for path in paths:
        value = _xml_text(node, path)
        if value is not None:
            return value
    return None


def _xml_ecc(gpu: _Found, kind: str) -> EccParts:
    """The raw (correctable, uncorrectable) parts of <ecc_errors><volatile|aggregate>, every
    schema (values._ecc_totals sums them)."""
    node = gpu.find(f"ecc_errors/{kind}")
    if node is None:
        return (), ()
    section = _Found(node, _ECC_PLAN)
    if section.find("single_bit") is not None or section.find("double_bit") is not None:
        # old schema: single_bit/double_bit with per-location counts and a total
        return (section.printed("single_bit/total"),), (section.printed("double_bit/total"),)
    sram_unc: tuple[str | None, ...] = (section.printed("sram_uncorrectable"),)
    if sram_unc[0] is None:  # v13 (and Hopper v12) split SRAM uncorrectable by detector
        sram_unc = (
            section.printed("sram_uncorrectable_parity"),
            section.printed("sram_uncorrectable_secded"),
        )
    return (
        (section.printed("sram_correctable"), section.printed("dram_correctable")),
        (*sram_unc, section.printed("dram_uncorrectable")),
    )


# the process list: <processes> (DTD v7 on), <compute_processes> (v6 and older: driver 340's,
# compute processes only, no <type>)
_PROCESS_TAGS = ("processes", "compute_processes")


def _xml_processes(gpu: ET.Element) -> tuple[tuple[GpuProcess, ...], bool]:
    """(<processes>, known); unknown when the element is missing or says N/A."""
    node = next((n for tag in _PROCESS_TAGS if (n := gpu.find(tag)) is not None), None)
    if node is None:
        return (), False
    old_list = node.tag == "compute_processes"
    infos = node.findall("process_info")
    if not infos and node.text is not None and _clean(node.text) is None and node.text.strip():
        return (), False  # <processes>N/A</processes>
    processes = tuple(
        GpuProcess(
            pid=_int(_xml_raw(info, "pid")),
            name=_xml_text(info, "process_name") or "",
            type=_xml_text(info, "type") or ("C" if old_list else None),
            used_memory_mib=_mib(_xml_raw(info, "used_memory")),
        )
        for info in infos
    )
    return processes, True


def _xml_pcie(gpu: _Found) -> PcieLink:
    """The PCIe link of <pci><pci_gpu_link_info>: generation and width, current and max."""
    link = _Found(gpu.find("pci/pci_gpu_link_info"), _LINK_PLAN)
    return PcieLink(
        pcie_gen_current=_int(link.raw("pcie_gen/current_link_gen")),
        pcie_gen_max=_int(link.raw("pcie_gen/max_link_gen")),
        pcie_gen_device_max=_int(link.raw("pcie_gen/max_device_link_gen")),
        pcie_gen_host_max=_int(link.raw("pcie_gen/max_host_link_gen")),
        pcie_width_current=_int(link.raw("link_widths/current_link_width")),
        pcie_width_max=_int(link.raw("link_widths/max_link_width")),
    )


def _xml_memory_health(gpu: _Found) -> MemoryHealth:
    """ECC totals, retired pages, remapped rows (and their bank histogram) and the memory repair
    state of one <gpu>."""
    vol_corr, vol_unc, agg_corr, agg_unc = _ecc_totals(_xml_ecc(gpu, "volatile"), _xml_ecc(gpu, "aggregate"))
    retired = _Found(gpu.find("retired_pages"), _RETIRED_PLAN)
    remapped = _Found(gpu.find("remapped_rows"), _REMAPPED_PLAN)
    return MemoryHealth(
        ecc_volatile_correctable=vol_corr,
        ecc_volatile_uncorrectable=vol_unc,
        ecc_aggregate_correctable=agg_corr,
        ecc_aggregate_uncorrectable=agg_unc,
        retired_pages_sbe=_int(retired.raw("multiple_single_bit_retirement/retired_count")),
        retired_pages_dbe=_int(retired.raw("double_bit_retirement/retired_count")),
        retired_pages_pending=_any_true(
            _yes_no(retired.raw("pending_blacklist")),
            _yes_no(retired.raw("pending_retirement")),
        ),
        # <remapped_rows>N/A</remapped_rows> has no children: every value stays None.
        remapped_rows_correctable=_int(remapped.raw("remapped_row_corr")),
        remapped_rows_uncorrectable=_int(remapped.raw("remapped_row_unc")),
        remapped_rows_pending=_yes_no(remapped.raw("remapped_row_pending")),
        remapped_rows_failure=_yes_no(remapped.raw("remapped_row_failure")),
        remap_banks_max=_int(remapped.raw("row_remapper_histogram/row_remapper_histogram_max")),
        remap_banks_high=_int(remapped.raw("row_remapper_histogram/row_remapper_histogram_high")),
        remap_banks_partial=_int(remapped.raw("row_remapper_histogram/row_remapper_histogram_partial")),
        remap_banks_low=_int(remapped.raw("row_remapper_histogram/row_remapper_histogram_low")),
        remap_banks_none=_int(remapped.raw("row_remapper_histogram/row_remapper_histogram_none")),
        # Absent before DTD v13; N/A where the GPU does not support them (the RTX 4000 Ada).
        sram_threshold_exceeded=_yes_no(gpu.raw("ecc_errors/aggregate/sram_threshold_exceeded")),
        channel_repair_pending=_yes_no(gpu.raw("ecc_errors/channel_repair_pending")),
        tpc_repair_pending=_yes_no(gpu.raw("ecc_errors/tpc_repair_pending")),
        unrepairable_memory=_yes_no(gpu.raw("ecc_errors/unrepairable_memory")),
    )


def _xml_deep(node: ET.Element | None, *tags: str) -> str | None:
    """The text of the first of `tags` with a value at any depth of `node` (values._first_deep;
    R610's `-q` nests the power limits one level deeper, under a ceiling block beside a "base
    power" one; its XML is expected to follow). Blocks whose tag names base power are left out."""

    def children(block: ET.Element) -> list[ET.Element]:
        return [c for c in block if len(c) and "base_power" not in c.tag]

    return _first_deep([] if node is None else [node], tags, _xml_text, children)


def _xml_power(gpu: _Found) -> PowerReadings:
    """Power draw and limits: <gpu_power_readings> from R535 (v12), <power_readings> before;
    each element at any depth of the section."""
    power = gpu.find("gpu_power_readings")
    if power is None:
        power = gpu.find("power_readings")
    return PowerReadings(
        # (a cut document's open element keeps its closed part, marked: not read whole)
        power_read=power is not None and OPEN_MARK not in power.attrib,
        # v13 has only average/instant draw; <power_draw> (older) is the average too.
        power_draw_w=_float(_xml_deep(power, "power_draw", "average_power_draw", "instant_power_draw")),
        power_limit_w=_float(_xml_deep(power, "enforced_power_limit", "current_power_limit", "power_limit")),
        default_power_limit_w=_float(_xml_deep(power, "default_power_limit")),
        max_power_limit_w=_float(_xml_deep(power, "max_power_limit")),
        requested_power_limit_w=_float(_xml_deep(power, "requested_power_limit")),
    )


def _xml_clocks(gpu: _Found) -> ClockReadings:
    """<clocks> and <max_clocks> sm_clock, <applications_clocks> and
    <default_applications_clocks> graphics_clock."""
    return ClockReadings(
        clocks_sm_mhz=_int(gpu.raw("clocks/sm_clock")),
        clocks_sm_max_mhz=_int(gpu.raw("max_clocks/sm_clock")),
        clocks_applications_mhz=_int(gpu.raw("applications_clocks/graphics_clock")),
        clocks_default_applications_mhz=_int(gpu.raw("default_applications_clocks/graphics_clock")),
    )


def _xml_engines(gpu: _Found) -> EngineReadings:
    """<utilization> encoder / decoder / JPEG / OFA and <encoder_stats><session_count>."""
    return EngineReadings(
        encoder_util_pct=_float(gpu.raw("utilization/encoder_util")),
        decoder_util_pct=_float(gpu.raw("utilization/decoder_util")),
        jpeg_util_pct=_float(gpu.raw("utilization/jpeg_util")),
        ofa_util_pct=_float(gpu.raw("utilization/ofa_util")),
        encoder_sessions=_int(gpu.raw("encoder_stats/session_count")),
    )


def _xml_reasons(gpu: _Found, position: int, warnings: list[str]) -> Reasons:
    """The clock event reasons: <clocks_event_reasons> from R535, else the
    <clocks_throttle_reasons> of older drivers; unknown when neither is there."""
    reasons_node = gpu.find("clocks_event_reasons")  # R535+
    if reasons_node is None:
        reasons_node = gpu.find("clocks_throttle_reasons")
    if reasons_node is None:
        return NO_REASONS
    return _reasons_from_states(
        [(child.tag, child.text) for child in reasons_node], f"<gpu> #{position}", warnings
    )


def _xml_gpu(gpu: ET.Element, position: int, warnings: list[str], may_fault: bool = True) -> GpuInfo:
    """One <gpu> element, any DTD version (`may_fault` False: the document holds no fault word,
    so none of this GPU's values is looked at for one)."""
    at = _Found(gpu, _GPU_PLAN)
    name = at.text("product_name")
    if name is None:
        warnings.append(f"<gpu> #{position} has no product_name")
    reasons, reasons_known, reasons_read = _xml_reasons(at, position, warnings)
    processes, processes_known = _xml_processes(gpu)
    # (the leaves' paths, costly to build for ~1,000 elements a GPU, only when a value may be a fault)
    faults, cell_faults = (
        _field_faults(_xml_leaves(gpu), "product_name")
        if may_fault and _may_fault(_xml_values(gpu))
        else ((), ())
    )
    return GpuInfo(
        # -q -x has no index element; nvidia-smi lists GPUs in index (PCI) order.
        index=position,
        name=name or "",
        uuid=at.text("uuid"),
        serial=at.text("serial"),
        minor_number=_int(at.raw("minor_number")),
        pci_bus_id=at.text("pci/pci_bus_id") or _clean(gpu.get("id")),
        pci_device_id=device_id(at.raw("pci/pci_device_id")),
        pci_subsystem_id=subsystem_id(at.raw("pci/pci_sub_system_id")),
        # fb_memory_usage directly under <gpu>, not the per-MIG-instance ones.
        memory_total_mib=_mib(at.raw("fb_memory_usage/total")),
        memory_used_mib=_mib(at.raw("fb_memory_usage/used")),
        memory_unified=_unified(at.raw("fb_memory_usage/total")),
        ecc_mode=_on_off(at.raw("ecc_mode/current_ecc")),
        ecc_na=_is_na(at.raw("ecc_mode/current_ecc")),
        persistence_mode=_on_off(at.raw("persistence_mode")),
        display_active=_on_off(at.raw("display_active")),
        driver_model=at.text("driver_model/current_dm"),
        **_xml_pcie(at),
        temperature_c=_int(at.raw("temperature/gpu_temp")),
        mig_mode=_on_off(at.raw("mig_mode/current_mig")),
        mig_na=_is_na(at.raw("mig_mode/current_mig")),
        mig_mode_pending=_on_off(at.raw("mig_mode/pending_mig")),
        mig_devices=len(gpu.findall("mig_devices/mig_device")) or None,
        vbios=at.text("vbios_version"),
        product_brand=at.text("product_brand"),
        product_architecture=at.text("product_architecture"),
        **_xml_memory_health(at),
        **_xml_power(at),
        **_xml_clocks(at),
        clock_event_reasons=reasons,
        clock_event_reasons_known=reasons_known,
        clock_event_reasons_read=reasons_read,
        performance_state=_pstate(at.raw("performance_state")),
        utilization_gpu_pct=_int(at.raw("utilization/gpu_util")),
        **_xml_engines(at),
        # Absolute thresholds only; the *_tlimit_threshold elements (Ada/Hopper, R535+) are
        # margins relative to T.Limit ("-2 C"), not temperatures.
        temperature_slowdown_c=_int(at.raw("temperature/gpu_temp_slow_threshold")),
        temperature_max_c=_int(at.raw("temperature/gpu_temp_max_threshold")),
        virtualization_mode=at.text("gpu_virtualization_mode/virtualization_mode"),
        license_status=at.text("vgpu_software_licensed_product/license_status"),
        licensed_product=at.text("vgpu_software_licensed_product/licensed_product_name"),
        compute_mode=_compute_mode(at.raw("compute_mode")),
        processes=processes,
        processes_known=processes_known,
        faults=faults,
        cell_faults=cell_faults,
        pcie_replays=_int(at.raw("pci/replay_counter")),
        pcie_replay_rollovers=_int(at.raw("pci/replay_rollover_counter")),
        board_part_number=at.text("board_part_number"),
        fabric_state=at.text("fabric/state"),
        fabric_status=_nvml_status(at.raw("fabric/status")),
        fabric_health=fabric_health(lambda key, _label: at.raw(f"fabric/health/{key}")),
        recovery_action=_recovery_action(
            at.raw("gpu_recovery_action"),
            at.raw("gpu_reset_status/reset_required"),
            at.raw("gpu_reset_status/drain_and_reset_recommended"),
        ),
    )


def _xml_leaves(node: ET.Element, prefix: str = "") -> Iterable[tuple[str, str]]:
    """(path, text) of every element with text below `node`, the process list left out (a
    process name is free text)."""
    for child in node:
        if child.tag in _PROCESS_TAGS:
            continue
        path = f"{prefix}{child.tag}"
        if child.text is not None and child.text.strip():
            yield path, child.text.strip()
        yield from _xml_leaves(child, f"{path}/")


def _xml_values(node: ET.Element) -> list[str]:
    """The texts _xml_leaves yields, in any order and without their paths."""
    skipped = {id(e) for tag in _PROCESS_TAGS for p in node.iter(tag) if p is not node for e in p.iter()}
    return [
        text
        for e in node.iter()
        if e is not node and e.text is not None and id(e) not in skipped and (text := e.text.strip())
    ]


def _xml_versions(root: ET.Element, warnings: list[str]) -> tuple[str | None, str | None]:
    """(driver, CUDA): the KMD / CUDA UMD versions where given (R610 deprecates the old
    elements' values), each read as its version number."""
    return (
        _version(_xml_first(root, "kmd_version", "driver_version"), "the XML driver version", warnings),
        read_cuda(
            (_xml_raw(root, "cuda_umd_version"), _xml_raw(root, "cuda_version")),
            "the XML CUDA version",
            warnings,
        ),
    )


_XML_END = "</nvidia_smi_log>"
_BETWEEN_TAGS = re.compile(r">\s+<")


def _compact(body: str) -> str:
    """The document without the indentation between its tags (~30 % of an 8-GPU `-q -x`, which
    expat would hand over as ~4,000 whitespace texts): every value this module reads is
    stripped, so a whitespace-only text reads as no text. Left whole where a CDATA section could
    hold such a run (nvidia-smi writes none); a `<` is in no attribute value or text."""
    return body if "<![CDATA[" in body else _BETWEEN_TAGS.sub("><", body)


def _texts_may_fault(root: ET.Element) -> bool:
    """Whether any text of the parsed document may hold a fault word: every value a GPU's fault
    reading looks at (_xml_values, _xml_leaves) is one of these texts, stripped, and a word found
    in a stripped text is in the text itself with the same neighbours or white space beside it, so
    False here is False for each GPU. Reads the ~15 KB of texts, not the ~120 KB of markup around
    them, and the texts as parsed (character references already read)."""
    return _may_fault(root.itertext())


def _declares_entity(text: str) -> bool:
    """Whether `text.upper()` holds "<!ENTITY", without upper-casing the whole document (~0.3 ms
    for an 8-GPU one): no character but "<" and "!" themselves upper-cases to anything holding
    a "<" or a "!", so each such "<!" is one of the text's own, and six characters after it are
    enough (each upper-cases to one character or more) to tell whether "ENTITY" follows. Each
    "<!" is found from its "!" (a document has a few, where it has ~7,000 "<")."""
    bang = text.find("!")
    while bang >= 0:
        if bang and text[bang - 1] == "<" and text[bang + 1 : bang + 7].upper().startswith("ENTITY"):
            return True
        bang = text.find("!", bang + 1)
    return False


# the XML declaration nvidia-smi prints first (`<?xml version="1.0" ?>`), after white space alone
_LEADING_DECLARATION = lazy_re(r"\A(\s*)<\?xml[ \t][^<>]*\?>")


def _declaration_dropped(text: str) -> str:
    """The document without its XML declaration where white space stands before it: a paste's
    blank line, a line's indent or a `\\r` above `<?xml` (GitHub needs a blank line after a
    `<details>` section's `</summary>`, a session's output may start with one), where XML allows
    none. Read as nvidia-smi printed it (the declaration says only the version, and the text is
    decoded already); the white space is kept, so the parser's line numbers stay the file's.
    Before, any such paste was refused as an XML "cut short or damaged"."""
    m = _LEADING_DECLARATION.match(text)
    return text if m is None or not m.group(1) else m.group(1) + text[m.end() :]


def parse_xml(text: str) -> GpuReport:
    """Parse `nvidia-smi -q -x` (DTD v11..v13) into a GpuReport."""
    if _declares_entity(text):
        # nvidia-smi never declares entities; refuse rather than expand them (XML bombs).
        return GpuReport("xml", None, None, None, (), ("XML declares entities; refused to parse",))
    # The DOCTYPE only names an external DTD file; drop it so nothing is ever resolved.
    body = _DOCTYPE.sub("", _declaration_dropped(text), count=1)
    # what follows the document: the probe's fallback calls' output when `-q -x` printed its XML
    # (the GPUs it could read) but exited non-zero, e.g. with a GPU fallen off the bus
    end = body.find(_XML_END)
    if end < 0:
        return _xml_cut(body)
    body = body[: end + len(_XML_END)]
    compact = _compact(body)
    try:
        root = ET.fromstring(compact)
    except ET.ParseError:
        try:  # (the error as the document itself has it: its line and column)
            root = ET.fromstring(body)
        except ET.ParseError as exc:
            return GpuReport("xml", None, None, None, (), (f"XML not parseable: {exc}",))
    if root.tag != "nvidia_smi_log":
        return GpuReport("xml", None, None, None, (), (f"unexpected XML root <{root.tag}>",))
    warnings: list[str] = []
    may_fault = _texts_may_fault(root)
    gpus = [_xml_gpu(gpu, position, warnings, may_fault) for position, gpu in enumerate(root.findall("gpu"))]
    # (a whole <gpu> with no <product_name>: a `-q -x -d SECTION` view, only those elements printed)
    gpus = [
        replace(g, sections_view=tuple(dict.fromkeys(c.tag for c in gpu)))
        if not g.name and a_sections_view(c.tag for c in gpu)
        else g
        for g, gpu in zip(gpus, root.findall("gpu"), strict=True)
    ]
    attached = _int(_xml_raw(root, "attached_gpus"))
    if attached is None:
        warnings.append("no <attached_gpus> in XML")
    elif attached != len(gpus):
        warnings.append(f"attached_gpus says {attached} but the XML has {len(gpus)} <gpu> elements")
    return GpuReport(
        "xml",
        *_xml_versions(root, warnings),
        attached,
        tuple(gpus),
        tuple(warnings),
    )


XML_CUT = "the nvidia-smi -q -x output ends before </nvidia_smi_log> (mid-record): incomplete probe, rerun"
XML_CUT_AFTER = (
    "the nvidia-smi -q -x output ends before </nvidia_smi_log>, after the values of every GPU"
    " attached: each GPU's values read whole, a process list it cut left open"
)


def _xml_cut(body: str) -> GpuReport:
    """A `-q -x` document cut off before its closing tag: the <gpu> records that closed are
    read, and a record cut inside or after its <processes> (every element nvidia-smi prints
    before the list closed) is read with the entries of the list that closed, the list open
    (`processes_open`: the rest may be in the part cut away); one cut before its <processes> is
    read up to the cut, each element that closed (`record_cut`: an element the cut went through
    is not read, what follows it may be in the part cut away). Whole in its GPU facts where as
    many records were read as attached, the last one to its process list, else incomplete."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    stack: list[ET.Element] = []
    closed: list[ET.Element] = []
    listed: dict[int, bool] = {}  # id of an open <gpu> -> whether its process list closed
    entries: set[int] = set()  # ids of the <process_info> entries that closed
    ended: set[int] = set()  # ids of the elements that closed
    try:
        parser.feed(body)
        for pair in parser.read_events():
            event, element = cast(tuple[str, ET.Element], pair)
            if event == "start":
                stack.append(element)
            else:
                stack.pop()
                ended.add(id(element))
            record = stack[1] if len(stack) > 1 and stack[1].tag == "gpu" else None
            if event == "end" and element.tag == "gpu" and len(stack) == 1:
                closed.append(element)
            elif record is not None and element.tag in _PROCESS_TAGS and element in list(record):
                listed[id(record)] = event == "end"
            elif event == "end" and element.tag == "process_info":
                entries.add(id(element))
    except ET.ParseError as exc:
        return GpuReport("xml", None, None, None, (), (f"XML not parseable: {exc}", XML_CUT), complete=False)
    root = stack[0] if stack else None
    if root is None or root.tag != "nvidia_smi_log":
        return GpuReport("xml", None, None, None, (), (XML_CUT,), complete=False)
    attached = _int(_xml_raw(root, "attached_gpus"))
    warnings: list[str] = []
    gpus = [_xml_gpu(gpu, position, warnings) for position, gpu in enumerate(closed)]
    cut = stack[1] if len(stack) > 1 and stack[1].tag == "gpu" else None
    if cut is not None and id(cut) in listed:
        gpus.append(_xml_open_record(cut, listed[id(cut)], entries, len(gpus), warnings))
    elif cut is not None:
        # (cut before its process list: the elements that closed are whole, the rest unread)
        part = _closed_part(cut, ended)
        read = _xml_gpu(part, len(gpus), warnings)
        whole = tuple(child.tag for child in part if OPEN_MARK not in child.attrib)
        gpus.append(
            replace(read, record_cut=True, processes_open=True, processes_known=False, parts_read=whole)
        )
    # cut after (or inside the process list of) the last record of as many as attached
    after_gpus = bool(gpus) and attached == len(gpus) and not gpus[-1].record_cut
    return GpuReport(
        "xml",
        *_xml_versions(root, warnings),
        attached,
        tuple(gpus),
        (XML_CUT_AFTER if after_gpus else XML_CUT, *warnings),
        complete=after_gpus,
    )


# the attribute that marks an element a cut went through (_closed_part): its children that
# closed are whole, what followed them in it is not read
OPEN_MARK = "gpuonboard-open"


def _closed_part(element: ET.Element, ended: set[int]) -> ET.Element:
    """A copy of the open `element` holding its children that closed (`ended`), whole, and its
    open child's own closed part where it has one: what a document cut inside `element` read
    whole. The open elements' text, which the cut may have shortened, is left out."""
    part = ET.Element(element.tag, element.attrib)
    for child in element:
        if id(child) in ended:
            part.append(child)
        elif len(opened := _closed_part(child, ended)):
            opened.set(OPEN_MARK, "")
            part.append(opened)
    return part


def _xml_open_record(
    gpu: ET.Element, listed: bool, entries: set[int], position: int, warnings: list[str]
) -> GpuInfo:
    """The <gpu> record a cut went through inside or after its process list: its elements up to
    the list (the list too where it closed); where it did not, the list's entries that closed
    (`entries`, as the -q text reader keeps its whole entries), the list open and not known
    whole."""
    whole = ET.Element(gpu.tag, gpu.attrib)
    for child in list(gpu):
        if child.tag in _PROCESS_TAGS:
            if not listed:
                read = ET.SubElement(whole, child.tag, child.attrib)
                read.extend(e for e in child if id(e) in entries)
            else:
                whole.append(child)
            break
        whole.append(child)
    record = _xml_gpu(whole, position, warnings)
    return record if listed else replace(record, processes_open=True, processes_known=False)
