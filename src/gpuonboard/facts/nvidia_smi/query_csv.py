"""The `nvidia-smi --query-gpu=... --format=csv` form: :data:`QUERY_FIELDS` (the field list of
the fallback probe, accepted by every supported driver) and :func:`parse_query_csv`, with or
without header and units.

A CSV cut short is not whole (`complete` False): a last row with fewer cells than the header, or
one cut inside its last cell (an empty last cell, an unclosed `[Unkn`, a number without the unit
its column is printed with) where the text ends without its newline. A CSV whose lines are broken
(a paste wrapped at a fixed width: a row of another cell count than the header's, or a row of
field names, a piece of the header) is read as no GPU at all: any row may be a piece of one."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpuonboard.facts.csvtext import csv_rows, first_csv_row
from gpuonboard.facts.elision import ELISION
from gpuonboard.facts.gpu_ids import all_names_by_id, device_id, is_product_name, subsystem_id
from gpuonboard.facts.nvidia_smi.faults import _field_faults
from gpuonboard.facts.nvidia_smi.model import GpuInfo, GpuReport
from gpuonboard.facts.nvidia_smi.reasons import Reasons, _reasons_from_mask, _reasons_from_states
from gpuonboard.facts.nvidia_smi.values import (
    _clean,
    _compute_mode,
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
)
from gpuonboard.once import lazy_re

# The --query-gpu list recommended for a fallback probe (when -q -x is unusable):
# `nvidia-smi --query-gpu=<these joined by ,> --format=csv,nounits`.
#
# nvidia-smi rejects the WHOLE query when one field name is unknown to that driver, so every
# name here must be accepted from R450 upward (the oldest driver branch this tool supports):
# - `clocks_throttle_reasons.active`, not `clocks_event_reasons.active`: the event name only
#   exists from R535; newer drivers (the 590 captures) still accept the throttle name as a
#   deprecated alias, and both print the same hex bitmask.
# - `mig.mode.current` is accepted from R450 (values are [N/A] on GPUs without MIG).
# - no `remapped_rows.*`: not in the --query-gpu list of the early R450 releases (row remapping
#   was queried with --query-remapped-rows there); read them from `-q -x`, which always has them.
#   parse_query_csv still reads them (and every other field it knows) when present.
# - no `temperature.gpu.tlimit`, `power.draw.average`, `pcie.link.gen.gpucurrent` etc.: R525+.
# Fields that do not apply to a GPU print [N/A], which the parser maps to None.
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
    "vbios_version",
    "pstate",
    "utilization.gpu",
    "compute_mode",
    "clocks_throttle_reasons.active",
    "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.aggregate.total",
    "ecc.errors.uncorrected.aggregate.total",
    "retired_pages.single_bit_ecc.count",
    "retired_pages.double_bit.count",
    "retired_pages.pending",
    "power.draw",
    "enforced.power.limit",
    "power.default_limit",
    "power.max_limit",
)


_UNIT_SUFFIX = lazy_re(r"\s*\[[^\]]*\]\s*$")
_FIELD_NAME = lazy_re(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _header_names(row: Sequence[str]) -> list[str] | None:
    """Field names if `row` is a --format=csv header ('memory.total [MiB]' -> 'memory.total')."""
    names = [_UNIT_SUFFIX.sub("", cell).strip() for cell in row]
    if names and all(_FIELD_NAME.match(name) for name in names):
        return names
    return None


NO_NAME = "CSV has no 'name' field"


def query_fields(text: str) -> tuple[str, ...] | None:
    """The field names of a `--query-gpu` CSV's header (its first line with text), None where
    it has none (`--format=csv,noheader`) or is no CSV."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    names = _header_names(first_csv_row(first)) if is_query_header(first) else None
    return tuple(names) if names is not None else None


# the --query-gpu fields whose names have no dot (`nvidia-smi --help-query-gpu`; `gpu_*` are the
# aliases it lists): a header of these alone (`timestamp, driver_version`) is a query's too
_UNDOTTED_FIELDS = frozenset(
    (
        "timestamp",
        "driver_version",
        "count",
        "name",
        "gpu_name",
        "serial",
        "gpu_serial",
        "uuid",
        "gpu_uuid",
        "index",
        "gpu_bus_id",
        "persistence_mode",
        "display_mode",
        "display_active",
        "vbios_version",
        "pstate",
        "compute_mode",
        "compute_cap",
        "addressing_mode",
    )
)


# the fields --query-gpu shares with --query-compute-apps, --query-accounted-apps and
# --query-retired-pages (`nvidia-smi --help-query-compute-apps` ...): a header of these alone is
# any of those queries', whose rows are processes or retired pages, never GPUs
_SHARED_FIELDS = frozenset(("timestamp", "gpu_name", "gpu_bus_id", "gpu_serial", "gpu_uuid"))
# fields only those other queries have: a header with one is theirs -> what its rows are
_OTHER_QUERY_FIELDS = {  # (most telling first: accounted apps has a pid too)
    "--query-retired-pages": ("retired pages", ("retired_pages.address", "retired_pages.cause")),
    "--query-accounted-apps": (
        "processes",
        ("vgpu_instance", "gpu_utilization", "mem_utilization", "max_memory_usage", "time", "is_running"),
    ),
    "--query-compute-apps": ("processes", ("pid", "process_name", "used_gpu_memory", "used_memory")),
}
# the --query-gpu names of the `gpu_*` aliases it accepts (`nvidia-smi --help-query-gpu`)
_ALIASES = {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "gpu_serial": "serial", "gpu_uuid": "uuid"}


def _other_query(names: Sequence[str]) -> tuple[str, str] | None:
    """(the query, what its rows list) where field names are another query's than --query-gpu:
    one of its own fields among them, or only the fields all of them share; None otherwise."""
    for query, (rows, fields) in _OTHER_QUERY_FIELDS.items():
        if any(name in fields for name in names):
            return query, rows
    if names and all(name in _SHARED_FIELDS for name in names):
        return (
            "--query-compute-apps, --query-accounted-apps or --query-retired-pages",
            "processes or retired pages",
        )
    return None


def is_query_header(line: str) -> bool:
    """Whether a line is a `--query-gpu ... --format=csv` header: comma-separated field names
    with their units (`utilization.gpu [%], power.draw [W]`), a dotted field among them, or
    only fields nvidia-smi names without a dot (nvidia_gpu_exporter#67's `timestamp,
    driver_version`: it was refused as a CSV without its header row); never the header of a
    query whose rows are no GPUs (:func:`other_query_refusal`)."""
    if "," not in line:
        return False
    names = _header_names(first_csv_row(line))
    return (
        names is not None
        and (any("." in name for name in names) or all(name in _UNDOTTED_FIELDS for name in names))
        and _other_query(names) is None
    )


def other_query_refusal(text: str) -> str | None:
    """Why a CSV whose header is that of `--query-compute-apps`, `--query-accounted-apps` or
    `--query-retired-pages` (their fields, or only the `timestamp, gpu_name, gpu_bus_id,
    gpu_serial, gpu_uuid` they share with --query-gpu) tells no GPU count: its rows are
    processes or retired pages, one GPU's listed once per row; None for any other text."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    names = _header_names(first_csv_row(first)) if "," in first else None
    other = _other_query(names) if names is not None else None
    if other is None:
        return None
    query, rows = other
    return (
        f"a {query} CSV lists {rows}, not GPUs (a GPU once per row), so it tells no GPU count or"
        f" model: save `nvidia-smi --query-gpu={','.join(QUERY_FIELDS)} --format=csv`."
    )


def _csv_first(cells: Mapping[str, str], *names: str) -> str | None:
    """The first of the fields `names` that is present and has a value."""
    for name in names:
        value = _clean(cells.get(name))
        if value is not None:
            return value
    return None


def _csv_reasons(cells: Mapping[str, str], where: str, warnings: list[str]) -> Reasons:
    """Active clock event reasons from the bitmask field, else from the per-reason fields."""
    for prefix in ("clocks_event_reasons", "clocks_throttle_reasons"):
        from_mask = _reasons_from_mask(cells.get(f"{prefix}.active"), where, warnings)
        if from_mask is not None:
            return from_mask
    states = [
        (name.split(".", 1)[1], value)
        for name, value in cells.items()
        if name.startswith(("clocks_event_reasons.", "clocks_throttle_reasons."))
        and name.split(".", 1)[1] not in ("supported", "active")
    ]
    return _reasons_from_states(states, where, warnings)


def _csv_gpu(cells: Mapping[str, str], position: int, warnings: list[str]) -> GpuInfo:
    """One CSV row; fields the query did not ask for stay None."""
    index = _int(cells.get("index"))
    reasons, reasons_known, reasons_read = _csv_reasons(cells, f"CSV row {position}", warnings)
    faults, cell_faults = _field_faults(cells.items(), "name")
    return GpuInfo(
        index=position if index is None else index,
        name=_clean(cells.get("name")) or "",
        uuid=_clean(cells.get("uuid")),
        serial=_clean(cells.get("serial")),
        pci_bus_id=_clean(cells.get("pci.bus_id")),
        pci_device_id=device_id(cells.get("pci.device_id")),
        pci_subsystem_id=subsystem_id(cells.get("pci.sub_device_id")),
        memory_total_mib=_mib(cells.get("memory.total")),
        memory_used_mib=_mib(cells.get("memory.used")),
        memory_unified=_unified(cells.get("memory.total")),
        # R570+ `gpu_recovery_action`; before it, R5xx's `reset_status.*` (--help-query-gpu: "Either
        # of these being 'Yes' indicates that an unrecoverable error has occurred")
        recovery_action=_recovery_action(
            cells.get("gpu_recovery_action"),
            cells.get("reset_status.reset_required"),
            cells.get("reset_status.drain_and_reset_recommended"),
        ),
        fabric_state=_clean(cells.get("fabric.state")),
        fabric_status=_nvml_status(cells.get("fabric.status")),
        fabric_health=fabric_health(lambda key, _label: cells.get(f"fabric.health.{key}")),
        ecc_mode=_on_off(cells.get("ecc.mode.current")),
        ecc_na=_is_na(cells.get("ecc.mode.current")),
        persistence_mode=_on_off(cells.get("persistence_mode")),
        display_active=_on_off(cells.get("display_active")),
        driver_model=_clean(cells.get("driver_model.current")),
        pcie_gen_current=_int(cells.get("pcie.link.gen.current")),
        pcie_gen_max=_int(cells.get("pcie.link.gen.max")),
        pcie_width_current=_int(cells.get("pcie.link.width.current")),
        pcie_width_max=_int(cells.get("pcie.link.width.max")),
        temperature_c=_int(cells.get("temperature.gpu")),
        mig_mode=_on_off(cells.get("mig.mode.current")),
        mig_na=_is_na(cells.get("mig.mode.current")),
        mig_mode_pending=_on_off(cells.get("mig.mode.pending")),
        vbios=_clean(cells.get("vbios_version")),
        # no --query-gpu field for product brand / architecture
        **_csv_errors_and_power(cells),
        clock_event_reasons=reasons,
        clock_event_reasons_known=reasons_known,
        clock_event_reasons_read=reasons_read,
        performance_state=_pstate(cells.get("pstate")),
        **_csv_clocks(cells),
        utilization_gpu_pct=_int(cells.get("utilization.gpu")),
        encoder_util_pct=_float(cells.get("utilization.encoder")),
        decoder_util_pct=_float(cells.get("utilization.decoder")),
        jpeg_util_pct=_float(cells.get("utilization.jpeg")),
        ofa_util_pct=_float(cells.get("utilization.ofa")),
        encoder_sessions=_int(cells.get("encoder.stats.sessionCount")),
        # no --query-gpu field for the absolute slowdown / shutdown temperatures
        virtualization_mode=_clean(cells.get("virtualization_mode")),
        compute_mode=_compute_mode(cells.get("compute_mode")),
        processes_known=False,  # --query-gpu cannot list processes
        faults=faults,
        cell_faults=cell_faults,
    )


def _csv_errors_and_power(cells: Mapping[str, str]) -> dict[str, Any]:
    """A CSV row's memory error counts (ECC, retired pages, remapped rows) and power fields."""
    return {
        "ecc_volatile_correctable": _int(cells.get("ecc.errors.corrected.volatile.total")),
        "ecc_volatile_uncorrectable": _int(cells.get("ecc.errors.uncorrected.volatile.total")),
        "ecc_aggregate_correctable": _int(cells.get("ecc.errors.corrected.aggregate.total")),
        "ecc_aggregate_uncorrectable": _int(cells.get("ecc.errors.uncorrected.aggregate.total")),
        "retired_pages_sbe": _int(
            _csv_first(cells, "retired_pages.single_bit_ecc.count", "retired_pages.sbe")
        ),
        "retired_pages_dbe": _int(_csv_first(cells, "retired_pages.double_bit.count", "retired_pages.dbe")),
        "retired_pages_pending": _yes_no(cells.get("retired_pages.pending")),
        "remapped_rows_correctable": _int(cells.get("remapped_rows.correctable")),
        "remapped_rows_uncorrectable": _int(cells.get("remapped_rows.uncorrectable")),
        "remapped_rows_pending": _yes_no(cells.get("remapped_rows.pending")),
        "remapped_rows_failure": _yes_no(cells.get("remapped_rows.failure")),
        "power_draw_w": _float(_csv_first(cells, "power.draw", "power.draw.average", "power.draw.instant")),
        "power_limit_w": _float(_csv_first(cells, "enforced.power.limit", "power.limit")),
        "default_power_limit_w": _float(cells.get("power.default_limit")),
        "max_power_limit_w": _float(cells.get("power.max_limit")),
        # (`power.limit` is the software limit, the requested one, where the enforced is given too)
        "requested_power_limit_w": _float(cells.get("power.limit"))
        if "enforced.power.limit" in cells
        else None,
        "power_limit_requested": _csv_first(cells, "enforced.power.limit") is None
        and _csv_first(cells, "power.limit") is not None,
    }


def _csv_clocks(cells: Mapping[str, str]) -> dict[str, Any]:
    """A CSV row's SM clocks (now, max) and application clocks (set, default)."""
    return {
        "clocks_sm_mhz": _int(_csv_first(cells, "clocks.current.sm", "clocks.sm")),
        "clocks_sm_max_mhz": _int(_csv_first(cells, "clocks.max.sm", "clocks.max.sm_clock")),
        "clocks_applications_mhz": _int(
            _csv_first(cells, "clocks.applications.graphics", "clocks.applications.gr")
        ),
        "clocks_default_applications_mhz": _int(
            _csv_first(cells, "clocks.default_applications.graphics", "clocks.default_applications.gr")
        ),
    }


def parse_query_csv(text: str, fields: Sequence[str]) -> GpuReport:
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]`."""
    read = csv_rows(text)
    if read is None:
        return GpuReport("csv", None, None, None, (), ("not readable as CSV",))
    rows = [[cell.strip() for cell in row] for row in read if any(cell.strip() for cell in row)]
    if not rows:
        return GpuReport("csv", None, None, None, (), ("empty CSV output",))
    warnings: list[str] = []
    header = _header_names(rows[0])
    expected = [field.strip() for field in fields]
    if header is not None and (not expected or header == expected or set(header) & set(expected)):
        if expected and header != expected:
            warnings.append("CSV header differs from the requested fields; using the header")
        names, data, head = header, rows[1:], rows[0]
    elif expected:
        names, data, head = expected, rows, None
    else:
        return GpuReport("csv", None, None, None, (), ("CSV without header and no field list",))
    names = [_ALIASES.get(name, name) for name in names]  # (`gpu_name` is --query-gpu's `name`)
    shape = _Shape(names, head, data, open_end=bool(text.rsplit("\n", 1)[-1].strip()))
    gpus: list[GpuInfo] = []
    stamps: list[str | None] = []
    driver: str | None = None
    count: int | None = None
    cut = damaged = ""
    elided = False
    for position, row in enumerate(data):
        kind, why = shape.row(row, last=position == len(data) - 1)
        if why:
            warnings.append(f"CSV row {position}: {why}")
        cut = cut or (why if kind in ("cut", "cut cell") else "")
        damaged = damaged or (why if kind == "damaged" else "")
        elided = elided or kind == "elided"
        if kind in ("cut cell", "open cell"):
            row = [*row[:-1], ""]  # the row is read, its cut last cell as not reported
        elif kind != "row":
            continue
        cells: Mapping[str, str] = dict(zip(names, row, strict=True))
        driver = driver or _version(
            _csv_first(cells, "kmd_version", "driver_version"), "the CSV driver_version", warnings
        )
        count = count if count is not None else _int(cells.get("count"))
        gpu = _csv_gpu(cells, position, warnings)
        # (a row read with its cut last cell as not reported: that GPU's record was cut short)
        gpus.append(dataclasses.replace(gpu, record_cut=True) if kind != "row" else gpu)
        stamps.append(_clean(cells.get("timestamp")))
    if "name" not in names:
        warnings.append(NO_NAME)
    if damaged:
        # a row of another shape among the rows (a paste wrapped at a fixed width leaves header
        # fragments and pieces of rows, some with the header's cell count): no row is a GPU
        warnings.append(_DAMAGED)
        return GpuReport("csv", None, None, None, (), tuple(warnings), complete=False, gap=_DAMAGED_GAP)
    if cut:
        # the last line cut short: the output stopped mid-row, not a GPU gone
        warnings.append("the nvidia-smi --query-gpu output ends mid-row: incomplete probe, rerun")
    rows_read = len(gpus)
    gpus, gap = _one_row_per_gpu(gpus, "index" in names, stamps, warnings)
    if elided and not gap and len(gpus) == rows_read:
        # rows left out ('...') of one query, not samples of the GPUs listed: GPUs may be among them
        gap = "rows of the CSV were left out ('...' in their place)"
    return GpuReport(
        "csv", driver, None, count, tuple(gpus), tuple(warnings), complete=not cut and not gap, gap=gap
    )


_DAMAGED = (
    "the nvidia-smi --query-gpu CSV's lines are broken (rows that are no row of its header: a paste"
    " wrapped at a fixed width?): no row is read as a GPU; save the output as nvidia-smi printed it"
)
_DAMAGED_GAP = "the CSV's lines are broken (a paste wrapped at a fixed width?): no row is read as a GPU"
# a unit in a header cell ('memory.total [MiB]'); a value that begins as a number ('9941 MiB')
_HEADER_UNIT = lazy_re(r"\[([^\]]+)\]\s*$")
_NUMBER = lazy_re(r"^[0-9.]+(?:\s|$)")


class _Shape:
    """What a CSV row is, by the header's shape: a GPU's row, or a row cut, elided or damaged."""

    def __init__(
        self, names: Sequence[str], head: Sequence[str] | None, data: Sequence[Sequence[str]], open_end: bool
    ) -> None:
        self.names, self.head, self.open_end = list(names), list(head) if head else None, open_end
        units = [(m.group(1) if (m := _HEADER_UNIT.search(c)) else None) for c in head or ()]
        self.units = units or [None] * len(names)
        # --format=csv prints each value with its header's unit ('9941 MiB'); nounits does not
        # (told by every value but the text's last, which may be the one cut)
        cells = [
            (cell, unit)
            for row in data
            if len(row) == len(self.names)
            for cell, unit in zip(row, self.units, strict=True)
        ]
        self.printed = any(unit and _NUMBER.match(cell) and cell.endswith(unit) for cell, unit in cells[:-1])
        # the last column's values in the rows above the last (what its last cell may be cut from)
        self.above = [row[-1] for row in data[:-1] if len(row) == len(self.names)]

    def row(self, row: Sequence[str], last: bool) -> tuple[str, str]:
        """('row', ''), or why it is no whole row: ('repeat' | 'elided' | 'cut' | 'cut cell' |
        'damaged', why); 'cut cell': the last row, whole but for its last cell."""
        if self.head is not None and list(row) == self.head:
            return "repeat", "the header again"
        if _field_names(row, self.names):
            return "damaged", "a row of field names (a header broken onto lines of its own?)"
        if len(row) != len(self.names):
            if len(row) == 1 and (row[0].startswith(("...", "\u2026")) or ELISION.match(row[0])):
                return "elided", f"rows left out ({row[0][:40]!r})"
            if last and len(row) < len(self.names):
                shown = f"{len(row)} of its {len(self.names)} cells"
                return "cut", f"the output ends inside it, cut short ({shown})"
            return "damaged", f"has {len(row)} cells, expected {len(self.names)}"
        unclosed = [j for j, cell in enumerate(row) if cell.startswith("[") and not cell.endswith("]")]
        end = self._open_end_cell(row[-1]) if last and self.open_end and not unclosed else ""
        if (last and unclosed == [len(row) - 1]) or end == "cut":
            return "cut cell", f"its last cell {row[-1]!r} is cut short"
        if last and not unclosed and (why := self._short_value(row)):
            return "cut cell", f"its last cell {row[-1]!r} may be cut short ({why}): not read"
        if end == "open":
            # (the text ends without its newline: '33' may be '33', or '87' cut to '8')
            return "open cell", f"its last cell {row[-1]!r} may be cut short (no newline after it): not read"
        if unclosed:
            return "damaged", "a cell's '[' is not closed ([N/A], [Unknown Error] are)"
        return "row", ""

    def _short_value(self, row: Sequence[str]) -> str:
        """Why the text's last cell, newline or not (an editor ends a file with one), may be a
        value cut short: a value of a fixed shape (a UUID, a PCI address, a driver version) short
        of it, or a word shorter than, and the start of, the value the column has in a row above
        ('NVIDIA H2' under 'NVIDIA H200'; a number is not judged so: 9 % is no cut 95 %, nor a
        whole product name NVIDIA's driver prints, `_whole_name`: 'NVIDIA L40' under 'NVIDIA
        L40S' is an L40 of a mixed box). '' where it shows nothing of the kind."""
        cell = row[-1]
        shape = _FULL_SHAPE.get(self.names[-1]) if self.names else None
        if not cell or cell.startswith("["):
            return ""
        if shape is not None and not shape.match(cell):
            return f"short of a full {self.names[-1]}"
        if _NUMBER.match(cell) or self._whole_name(row):
            return ""
        if any(len(v) > len(cell) and v.startswith(cell) for v in self.above):
            return f"the start of {self.names[-1]} in a row above"
        return ""

    def _whole_name(self, row: Sequence[str]) -> bool:
        """The row's last cell is its GPU's whole name: a product name NVIDIA's driver prints
        ('NVIDIA L40', 'NVIDIA A10') that the row's own PCI device id names ('NVIDIA L40' under
        an L40's 26B5; under an A100's id 'NVIDIA A10' is a name cut short), or that a row above
        gives whole. Without either, a name that starts a longer one above is what a cut leaves
        ('NVIDIA A10' of 'NVIDIA A100-SXM4-80GB'): not read, never another model (review HHH)."""
        if not self.names or self.names[-1] != "name" or not is_product_name(row[-1]):
            return False
        if row[-1] in self.above:
            return True
        at = self.names.index("pci.device_id") if "pci.device_id" in self.names else None
        names = all_names_by_id(device_id(row[at])) if at is not None else ()
        return row[-1].casefold() in (n.casefold() for n in names)

    def _open_end_cell(self, cell: str) -> str:
        """What the last cell of a text that ends without its newline is: "cut" where it stops
        mid-value (empty: a row cut after its comma, nvidia-smi prints [N/A] for a value it
        lacks; or a number without the unit the CSV's other values are printed with, '9941 MiB'
        cut to '99'); "" where it shows its own end (a closed `[N/A]`, a value with that unit);
        "open" otherwise (a bare number or word: '33', or '87' cut to '8')."""
        unit = self.units[-1] if self.units else None
        if not cell:
            return "cut"
        if cell.endswith("]") or (self.printed and unit and cell.endswith(unit)):
            return ""
        return "cut" if self.printed and unit and _NUMBER.match(cell) else "open"


def _field_names(row: Sequence[str], known: Sequence[str]) -> bool:
    """Whether every cell of `row` is a field name (a header, or a piece of one a paste's wrap put
    on a line of its own: `inforom.img, inforom.oem, ...`), never a GPU's values: all read as names
    and one of them a query's (a dotted name, a known one, or one with a unit)."""
    names = _header_names(row)
    return names is not None and any(
        "." in name or name in known or "[" in cell for name, cell in zip(names, row, strict=True)
    )


# the whole shape of a field whose values all have it: a value short of it is cut (a UUID of
# MIG-... names a MIG device; a bus id's domain is 4 or 8 digits; a driver version 3 parts or 2,
# of every real capture: 550.54.14, 536.40, 580.00, 319.37, Jetson's 540.4.0, its minor and patch
# one digit each, never a Linux driver's minor: 550.5 is a cut)
_DRIVER_SHAPE = re.compile(r"^\d{2,3}\.(?:\d{2,3}(?:\.\d{2})?|\d\.\d)$")
_FULL_SHAPE = {
    "uuid": re.compile(r"^(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I),
    "pci.bus_id": re.compile(r"^([0-9a-f]{4}|[0-9a-f]{8}):[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$", re.I),
    "driver_version": _DRIVER_SHAPE,
    "kmd_version": _DRIVER_SHAPE,
}
# a redacted identifier (GPU-00000000-0000-..., a serial of zeros): the same for every GPU
_PLACEHOLDER = lazy_re(r"^(?:GPU-)?[0-]+$", re.IGNORECASE)


def _identity(gpu: GpuInfo, has_index: bool) -> tuple[str, ...]:
    """What tells this row's GPU from the others: its readable UUID (not a redacted one), PCI
    address and (where the query has one) index, all of them; () when the row has none. (Not
    the serial: the GPUs of one board, a K80's or an A16's, share it.)"""
    parts = []
    if gpu.uuid and not _PLACEHOLDER.match(gpu.uuid):
        parts.append(f"uuid {gpu.uuid}")
    if gpu.pci_bus_id:
        parts.append(f"pci {gpu.pci_bus_id.lower()}")
    if has_index:
        parts.append(f"index {gpu.index}")
    return tuple(parts)


def _one_row_per_gpu(
    gpus: list[GpuInfo], has_index: bool, stamps: Sequence[str | None], warnings: list[str]
) -> tuple[list[GpuInfo], str]:
    """One GpuInfo per GPU from a query that may be a log of samples: `--query-gpu ... -l N`
    prints every GPU's row again at each sample under one header, so the rows' identities (UUID,
    PCI address, index) repeat in whole cycles; each GPU is then judged on its newest row, with
    the faults any of its rows showed. Rows whose identities repeat otherwise, or rows with none
    that were not all read within one second (one query's), cannot be counted as GPUs: every
    row is kept (each judged), and the reason is returned (the count is not known).
    -> (the GPUs, "" or why the rows cannot be told apart)."""
    n, keys = len(gpus), [_identity(g, has_index) for g in gpus]
    apart = not _share_an_id(gpus)  # (rows of one UUID or bus id are never separate GPUs)
    if n <= 1 or (apart and ((all(keys) and len(set(keys)) == n) or (not all(keys) and _one_query(stamps)))):
        return gpus, ""
    cycle = next((i for i in range(1, n) if keys[i] == keys[0]), n)
    if (
        all(keys)
        and len(set(keys[:cycle])) == cycle
        and not _share_an_id(gpus[:cycle])
        and all(keys[i] == keys[i % cycle] for i in range(n))
    ):
        out = []
        for first in range(cycle):
            rows = gpus[first::cycle]
            faults = tuple(dict.fromkeys(f for g in rows for f in g.faults))
            cells = tuple(dict.fromkeys(f for g in rows for f in g.cell_faults))
            newest = dataclasses.replace(rows[-1], index=rows[0].index, faults=faults, cell_faults=cells)
            out.append(_hottest_sample(newest, rows, first, cycle))
        warnings.append(
            f"the CSV holds {n} rows of {cycle} GPU(s): a query repeated over time (nvidia-smi -l);"
            " each GPU is judged on its newest row, its temperature on its hottest"
        )
        return out, ""
    warnings.append(
        f"the CSV's {n} rows cannot be told apart as GPUs or as samples of one (a query repeated"
        " over time, nvidia-smi -l, repeats them): rows without index, uuid or pci.bus_id, or"
        " sharing them; every row is judged, the GPU count is not known; save the query once,"
        " without -l, with index and pci.bus_id"
    )
    rows = [dataclasses.replace(g, csv_row=i + 1) for i, g in enumerate(gpus)]
    return rows, f"its {n} CSV rows cannot be told apart as GPUs or as samples of one"


def _hottest_sample(newest: GpuInfo, rows: Sequence[GpuInfo], first: int, cycle: int) -> GpuInfo:
    """`newest` (a GPU's newest row of an `-l` log) with the temperature of its hottest row,
    where an earlier row read a higher one (a GPU that ran hot during the log is judged so, as
    the rows of a log not told apart are each judged), and that row's number (1-based, counting
    the CSV's rows: GPU `first`'s rows are every `cycle`-th from it)."""
    temps = [(g.temperature_c, i) for i, g in enumerate(rows) if g.temperature_c is not None]
    if not temps or newest.temperature_c is None:
        return newest
    hottest, at = max(temps, key=lambda t: (t[0], -t[1]))
    if hottest <= newest.temperature_c:
        return newest
    return dataclasses.replace(newest, temperature_c=hottest, temperature_row=first + at * cycle + 1)


def _share_an_id(gpus: Sequence[GpuInfo]) -> bool:
    """Whether two rows name one GPU: the same readable UUID or PCI address."""
    uuids = [g.uuid.lower() for g in gpus if g.uuid and not _PLACEHOLDER.match(g.uuid)]
    buses = [g.pci_bus_id.lower() for g in gpus if g.pci_bus_id]
    return len(set(uuids)) < len(uuids) or len(set(buses)) < len(buses)


def _one_query(stamps: Sequence[str | None]) -> bool:
    """Whether the rows' timestamps (`2025/06/06 14:52:48.608`) all fall within one second, as
    one query's do (nvidia-smi -l repeats it a second or more apart); False without them."""
    import datetime

    times = []
    for stamp in stamps:
        try:
            times.append(datetime.datetime.strptime(stamp or "", "%Y/%m/%d %H:%M:%S.%f"))
        except ValueError:
            try:
                times.append(datetime.datetime.strptime(stamp or "", "%Y/%m/%d %H:%M:%S"))
            except ValueError:
                return False
    return (max(times) - min(times)).total_seconds() < 1
