"""Pure parsers for the output forms of ``nvidia-smi`` (XML, CSV query, table, ``-q`` text).

No I/O here: the probe collects text, these functions turn it into a :class:`GpuReport`.
A form that is not recognised yields a report with empty fields and a warning, never an
exception and never a guess.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "QUERY_FIELDS",
    "GpuInfo",
    "GpuReport",
    "parse_any",
    "parse_query_csv",
    "parse_table",
    "parse_text_q",
    "parse_xml",
]


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as nvidia-smi reports it."""

    index: int
    name: str  # as reported, e.g. "NVIDIA A100-SXM4-80GB" (the table form truncates it)
    uuid: str | None = None
    serial: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    ecc_mode: str | None = None  # "Enabled" / "Disabled" / None when N/A
    persistence_mode: str | None = None  # "Enabled" / "Disabled"
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    temperature_c: int | None = None
    mig_mode: str | None = None  # "Enabled" / "Disabled" / None when N/A


@dataclass(frozen=True)
class GpuReport:
    """Everything one nvidia-smi invocation said about the host's GPUs."""

    source: str  # "xml" | "csv" | "table" | "text" | "unknown"
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None  # as the tool says; may differ from len(gpus) in a partial capture
    gpus: tuple[GpuInfo, ...]
    warnings: tuple[str, ...] = ()


# The --query-gpu list recommended for a fallback probe (when -q -x is unusable):
# `nvidia-smi --query-gpu=<these joined by ,> --format=csv,nounits`.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "serial",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "driver_version",
    "count",
    "persistence_mode",
    "ecc.mode.current",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "temperature.gpu",
    "mig.mode.current",
)

# Values nvidia-smi prints when a field has no value on this GPU/driver.
_MISSING = {
    "",
    "n/a",
    "[n/a]",
    "not supported",
    "[not supported]",
    "unknown error",
    "[unknown error]",
    "requested functionality has been deprecated",
    "[requested functionality has been deprecated]",
    "insufficient permissions",
    "[insufficient permissions]",
}

_LEADING_INT = re.compile(r"^\s*(-?\d+)")
_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_MIB_PER_UNIT = {"": 1.0, "mib": 1.0, "gib": 1024.0, "kib": 1.0 / 1024, "b": 1.0 / 1024 / 1024}


def _clean(value: str | None) -> str | None:
    """Strip a raw value and map nvidia-smi's 'no value' spellings to None."""
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _MISSING:
        return None
    # Any other bracketed value is a status, not data, e.g. "[GPU requires reset]".
    if value.startswith("[") and value.endswith("]"):
        return None
    return value


def _int(value: str | None) -> int | None:
    """Leading integer of a value such as '27 C', '16x', '81920 MiB'; None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _LEADING_INT.match(cleaned)
    return int(match.group(1)) if match else None


def _mib(value: str | None) -> int | None:
    """Memory value in MiB from '81920 MiB' or a bare '81920' (nounits); None when absent."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    match = _NUMBER_UNIT.match(cleaned)
    if not match:
        return None
    factor = _MIB_PER_UNIT.get(match.group(2).lower())
    if factor is None:
        return None
    return round(float(match.group(1)) * factor)


def _on_off(value: str | None) -> str | None:
    """Normalise 'On'/'Off'/'Enabled'/'Disabled' to 'Enabled'/'Disabled'."""
    cleaned = _clean(value)
    if cleaned is None:
        return None
    lowered = cleaned.lower()
    if lowered in ("on", "enabled"):
        return "Enabled"
    if lowered in ("off", "disabled"):
        return "Disabled"
    return cleaned


def _unknown(message: str) -> GpuReport:
    """An empty report that says why it is empty."""
    return GpuReport("unknown", None, None, None, (), (message,))


# ---------------------------------------------------------------- XML (nvidia-smi -q -x)

_DOCTYPE = re.compile(r"<!DOCTYPE[^>\[]*(\[[^\]]*\])?\s*>", re.IGNORECASE)


def _xml_text(node: ET.Element | None, path: str) -> str | None:
    """Text at `path` below `node`, cleaned; None when missing or N/A."""
    if node is None:
        return None
    found = node.find(path)
    return None if found is None else _clean(found.text)


def parse_xml(text: str) -> GpuReport:
    """Parse `nvidia-smi -q -x` (DTD v11..v13) into a GpuReport."""
    if "<!ENTITY" in text.upper():
        # nvidia-smi never declares entities; refuse rather than expand them (XML bombs).
        return GpuReport("xml", None, None, None, (), ("XML declares entities; refused to parse",))
    # The DOCTYPE only names an external DTD file; drop it so nothing is ever resolved.
    body = _DOCTYPE.sub("", text, count=1)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        return GpuReport("xml", None, None, None, (), (f"XML not parseable: {exc}",))
    if root.tag != "nvidia_smi_log":
        return GpuReport("xml", None, None, None, (), (f"unexpected XML root <{root.tag}>",))
    warnings: list[str] = []
    gpus: list[GpuInfo] = []
    for position, gpu in enumerate(root.findall("gpu")):
        name = _xml_text(gpu, "product_name")
        if name is None:
            warnings.append(f"<gpu> #{position} has no product_name")
        link = gpu.find("pci/pci_gpu_link_info")
        gpus.append(
            GpuInfo(
                # -q -x has no index element; nvidia-smi lists GPUs in index (PCI) order.
                index=position,
                name=name or "",
                uuid=_xml_text(gpu, "uuid"),
                serial=_xml_text(gpu, "serial"),
                pci_bus_id=_xml_text(gpu, "pci/pci_bus_id") or _clean(gpu.get("id")),
                # fb_memory_usage directly under <gpu>, not the per-MIG-instance ones.
                memory_total_mib=_mib(_xml_text(gpu, "fb_memory_usage/total")),
                memory_used_mib=_mib(_xml_text(gpu, "fb_memory_usage/used")),
                ecc_mode=_on_off(_xml_text(gpu, "ecc_mode/current_ecc")),
                persistence_mode=_on_off(_xml_text(gpu, "persistence_mode")),
                pcie_gen_current=_int(_xml_text(link, "pcie_gen/current_link_gen")),
                pcie_gen_max=_int(_xml_text(link, "pcie_gen/max_link_gen")),
                pcie_width_current=_int(_xml_text(link, "link_widths/current_link_width")),
                pcie_width_max=_int(_xml_text(link, "link_widths/max_link_width")),
                temperature_c=_int(_xml_text(gpu, "temperature/gpu_temp")),
                mig_mode=_on_off(_xml_text(gpu, "mig_mode/current_mig")),
            )
        )
    attached = _int(_xml_text(root, "attached_gpus"))
    if attached is None:
        warnings.append("no <attached_gpus> in XML")
    elif attached != len(gpus):
        warnings.append(f"attached_gpus says {attached} but the XML has {len(gpus)} <gpu> elements")
    return GpuReport(
        "xml",
        _xml_text(root, "driver_version"),
        _xml_text(root, "cuda_version"),
        attached,
        tuple(gpus),
        tuple(warnings),
    )


# ---------------------------------------------------------------- CSV (--query-gpu)

_UNIT_SUFFIX = re.compile(r"\s*\[[^\]]*\]\s*$")
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _header_names(row: Sequence[str]) -> list[str] | None:
    """Field names if `row` is a --format=csv header ('memory.total [MiB]' -> 'memory.total')."""
    names = [_UNIT_SUFFIX.sub("", cell).strip() for cell in row]
    if names and all(_FIELD_NAME.match(name) for name in names):
        return names
    return None


def parse_query_csv(text: str, fields: Sequence[str]) -> GpuReport:
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`."""
    rows = [
        [cell.strip() for cell in row]
        for row in csv.reader(io.StringIO(text), skipinitialspace=True)
        if any(cell.strip() for cell in row)
    ]
    if not rows:
        return GpuReport("csv", None, None, None, (), ("empty CSV output",))
    warnings: list[str] = []
    header = _header_names(rows[0])
    expected = [field.strip() for field in fields]
    if header is not None and (not expected or header == expected or set(header) & set(expected)):
        if expected and header != expected:
            warnings.append("CSV header differs from the requested fields; using the header")
        names, data = header, rows[1:]
    elif expected:
        names, data = expected, rows
    else:
        return GpuReport("csv", None, None, None, (), ("CSV without header and no field list",))
    gpus: list[GpuInfo] = []
    driver: str | None = None
    count: int | None = None
    for position, row in enumerate(data):
        if len(row) != len(names):
            warnings.append(f"CSV row {position} has {len(row)} cells, expected {len(names)}")
            continue
        cells: Mapping[str, str] = dict(zip(names, row, strict=True))
        driver = driver or _clean(cells.get("driver_version"))
        count = count if count is not None else _int(cells.get("count"))
        index = _int(cells.get("index"))
        gpus.append(
            GpuInfo(
                index=position if index is None else index,
                name=_clean(cells.get("name")) or "",
                uuid=_clean(cells.get("uuid")),
                serial=_clean(cells.get("serial")),
                pci_bus_id=_clean(cells.get("pci.bus_id")),
                memory_total_mib=_mib(cells.get("memory.total")),
                memory_used_mib=_mib(cells.get("memory.used")),
                ecc_mode=_on_off(cells.get("ecc.mode.current")),
                persistence_mode=_on_off(cells.get("persistence_mode")),
                pcie_gen_current=_int(cells.get("pcie.link.gen.current")),
                pcie_gen_max=_int(cells.get("pcie.link.gen.max")),
                pcie_width_current=_int(cells.get("pcie.link.width.current")),
                pcie_width_max=_int(cells.get("pcie.link.width.max")),
                temperature_c=_int(cells.get("temperature.gpu")),
                mig_mode=_on_off(cells.get("mig.mode.current")),
            )
        )
    if "name" not in names:
        warnings.append("CSV has no 'name' field")
    return GpuReport("csv", driver, None, count, tuple(gpus), tuple(warnings))


# ---------------------------------------------------------------- table (plain nvidia-smi)

_TABLE_DRIVER = re.compile(r"Driver Version:\s*(\S+)")
_TABLE_CUDA = re.compile(r"CUDA Version:\s*(\S+)")
_TABLE_NAME_CELL = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off|N/A)\s*$")
_TABLE_BUS_CELL = re.compile(r"^\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\b")
_TABLE_TEMP = re.compile(r"(\d+)C\b")
_TABLE_MEMORY = re.compile(r"(\d+)MiB\s*/\s*(\d+)MiB")


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
    if cleaned.isdigit():
        return "Enabled"
    return _on_off(cleaned)


def parse_table(text: str) -> GpuReport:
    """Parse the plain `nvidia-smi` table (names may be truncated, as printed)."""
    driver_match = _TABLE_DRIVER.search(text)
    cuda_match = _TABLE_CUDA.search(text)
    lines = text.splitlines()
    gpus: list[GpuInfo] = []
    warnings: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "Processes:" in line or "MIG devices:" in line:
            break  # later tables list processes / MIG instances, not GPUs
        cells = _cells(line)
        name_cell = _TABLE_NAME_CELL.match(cells[0]) if len(cells) == 3 else None
        bus_cell = _TABLE_BUS_CELL.match(cells[1]) if name_cell else None
        if not (name_cell and bus_cell):
            i += 1
            continue
        second = _cells(lines[i + 1]) if i + 1 < len(lines) else []
        third = _cells(lines[i + 2]) if i + 2 < len(lines) else []
        temp = _TABLE_TEMP.search(second[0]) if len(second) == 3 else None
        memory = _TABLE_MEMORY.search(second[1]) if len(second) == 3 else None
        if memory is None:
            warnings.append(f"GPU {name_cell.group(1)}: memory column not found")
        gpus.append(
            GpuInfo(
                index=int(name_cell.group(1)),
                name=name_cell.group(2).strip(),
                pci_bus_id=bus_cell.group(1),
                memory_total_mib=int(memory.group(2)) if memory else None,
                memory_used_mib=int(memory.group(1)) if memory else None,
                ecc_mode=_table_ecc(cells[2]),
                persistence_mode=_on_off(name_cell.group(3)),
                temperature_c=int(temp.group(1)) if temp else None,
                mig_mode=_on_off(third[2]) if len(third) == 3 else None,
            )
        )
        i += 3
    if driver_match is None:
        warnings.append("no 'Driver Version:' in nvidia-smi table")
    if not gpus:
        warnings.append("no GPU rows found in nvidia-smi table")
    return GpuReport(
        "table",
        driver_match.group(1) if driver_match else None,
        _clean(cuda_match.group(1)) if cuda_match else None,
        None,  # the table does not state a count
        tuple(gpus),
        tuple(warnings),
    )


# ---------------------------------------------------------------- text (nvidia-smi -q)

# "Key   : value"; the separator is whitespace + colon, so "GPU 00000000:07:00.0" is a header.
_TEXT_LINE = re.compile(r"^(\s*)(\S.*?)(?:\s+:(?:\s(.*)|$))?\s*$")


def _text_tree(text: str) -> dict[str, Any]:
    """Nested dict from the indented `key : value` layout of `nvidia-smi -q`."""
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.strip().startswith("====="):
            continue
        match = _TEXT_LINE.match(raw)
        if match is None:
            continue
        indent, key, value = len(match.group(1).expandtabs()), match.group(2), match.group(3)
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None:  # a section header such as "FB Memory Usage"
            section: dict[str, Any] = {}
            parent.setdefault(key, section)
            stack.append((indent, section))
        else:
            parent.setdefault(key, value.strip())
    return root


def _tree_get(tree: Mapping[str, Any], *path: str) -> str | None:
    """Value at `path` in a text tree; None when missing or N/A."""
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return _clean(node) if isinstance(node, str) else None


def parse_text_q(text: str) -> GpuReport:
    """Parse the plain-text `nvidia-smi -q` form."""
    tree = _text_tree(text)
    warnings: list[str] = []
    gpus: list[GpuInfo] = []
    for position, (key, section) in enumerate(
        (k, v) for k, v in tree.items() if k.startswith("GPU ") and isinstance(v, dict)
    ):
        name = _tree_get(section, "Product Name")
        if name is None:
            warnings.append(f"{key}: no Product Name")
        link = ("PCI", "GPU Link Info")
        gpus.append(
            GpuInfo(
                index=position,
                name=name or "",
                uuid=_tree_get(section, "GPU UUID"),
                serial=_tree_get(section, "Serial Number"),
                pci_bus_id=_tree_get(section, "PCI", "Bus Id") or key[4:].strip(),
                memory_total_mib=_mib(_tree_get(section, "FB Memory Usage", "Total")),
                memory_used_mib=_mib(_tree_get(section, "FB Memory Usage", "Used")),
                ecc_mode=_on_off(_tree_get(section, "ECC Mode", "Current")),
                persistence_mode=_on_off(_tree_get(section, "Persistence Mode")),
                pcie_gen_current=_int(_tree_get(section, *link, "PCIe Generation", "Current")),
                pcie_gen_max=_int(_tree_get(section, *link, "PCIe Generation", "Max")),
                pcie_width_current=_int(_tree_get(section, *link, "Link Width", "Current")),
                pcie_width_max=_int(_tree_get(section, *link, "Link Width", "Max")),
                temperature_c=_int(_tree_get(section, "Temperature", "GPU Current Temp")),
                mig_mode=_on_off(_tree_get(section, "MIG Mode", "Current")),
            )
        )
    driver = _tree_get(tree, "Driver Version")
    attached = _int(_tree_get(tree, "Attached GPUs"))
    if driver is None:
        warnings.append("no 'Driver Version' in nvidia-smi -q text")
    if attached is not None and attached != len(gpus):
        warnings.append(f"Attached GPUs says {attached} but {len(gpus)} GPU sections found")
    return GpuReport("text", driver, _tree_get(tree, "CUDA Version"), attached, tuple(gpus), tuple(warnings))


# ---------------------------------------------------------------- sniffing


def parse_any(text: str) -> GpuReport:
    """Recognise which nvidia-smi output form `text` is and parse it."""
    head = text.lstrip()
    if not head:
        return _unknown("empty nvidia-smi output")
    if (
        head.startswith("<?xml")
        or head.startswith("<!DOCTYPE nvidia_smi_log")
        or head.startswith("<nvidia_smi_log")
    ):
        return parse_xml(text)
    if "NVSMI LOG" in head[:200] or re.search(r"(?m)^Attached GPUs\s+:", text):
        return parse_text_q(text)
    if "NVIDIA-SMI" in text and "Driver Version:" in text:
        return parse_table(text)
    first_line = head.splitlines()[0]
    if "," in first_line and _header_names(next(csv.reader([first_line], skipinitialspace=True))):
        return parse_query_csv(text, ())
    return _unknown("output not recognised as any nvidia-smi format")
