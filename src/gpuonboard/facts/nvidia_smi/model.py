"""The typed results of the nvidia-smi parsers: :class:`GpuProcess` (one process on a GPU),
:class:`GpuInfo` (one GPU) and :class:`GpuReport` (everything one invocation said), the empty
report that says why it is empty, and the groups of GpuInfo fields that the `-q -x` and `-q`
readers fill alike (PCIe link, memory health, power readings)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypedDict


@dataclass(frozen=True)
class GpuProcess:
    """One process nvidia-smi lists on a GPU."""

    pid: int | None
    name: str  # as reported; the table form may truncate it ("...")
    type: str | None  # "C" compute, "G" graphics, "C+G", "M" (MPS) ...
    used_memory_mib: int | None
    # the memory cell as printed where the table's width cut it (`13020...`): no figure read
    memory_cut: str | None = None


@dataclass(frozen=True)
class MigSlice:
    """One MIG device's first row in the table's `MIG devices:` section: its GPU instance, its
    memory used / total (the slice's own, which CUDA sees as the device's), its volatile
    uncorrectable ECC count (the `Vol. Unc ECC` column); None where the cell is N/A or unread."""

    gpu_instance: int | None
    memory_used_mib: int | None
    memory_total_mib: int | None
    ecc_volatile_uncorrectable: int | None


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as nvidia-smi reports it."""

    index: int
    name: str  # as reported, e.g. "NVIDIA A100-SXM4-80GB" (the table form truncates it)
    uuid: str | None = None
    serial: str | None = None
    # -q's `Minor Number` (the GPU's /dev/nvidiaN): inside a container given some GPUs of a
    # bigger machine, the machine's number, where the index counts only the GPUs given
    minor_number: int | None = None
    pci_bus_id: str | None = None
    # the PCI device id ('2330') and subsystem ('10DE 16C0') where a format printed them
    # (facts/gpu_ids.py): they name the card where the name is a placeholder or another card's
    pci_device_id: str | None = None
    pci_subsystem_id: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    # True: nvidia-smi says this GPU's memory size is not supported, as where the GPU has no
    # memory of its own and shares the system's (GB10); False: it gave a size; None: not said
    memory_unified: bool | None = None
    ecc_mode: str | None = None  # "Enabled" / "Disabled" / None when N/A or not read
    ecc_na: bool = False  # nvidia-smi printed N/A for the ECC mode (no ECC to switch), not left out
    persistence_mode: str | None = None  # "Enabled" / "Disabled"
    # a display is driven by this GPU ("Enabled": the table's Disp.A `On`, -q's Display Active):
    # its memory may hold a desktop's frame buffers, which a guest (WSL, a VM) cannot list
    display_active: str | None = None
    # Windows only: "WDDM" / "TCC" / "MCDM" (the table's "Driver-Model" column, where Linux has
    # "Persistence-M"; -q "Driver Model"); None on Linux (N/A) or not reported
    driver_model: str | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None  # the link's max: the lower of the card's and the host slot's
    # the card's own max and the host slot's (R520+ `-q -x` / `-q`; None when N/A or not reported):
    # a Gen4 card in a Gen3 slot has pcie_gen_max 3, and only these two tell it
    pcie_gen_device_max: int | None = None
    pcie_gen_host_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    temperature_c: int | None = None
    mig_mode: str | None = None  # "Enabled" / "Disabled" / None when N/A
    mig_mode_pending: str | None = None  # the mode after the next GPU reset / reboot
    # nvidia-smi printed N/A for the MIG mode (MIG not available on this GPU or in this
    # configuration: CUDA sees the whole GPU), not left out
    mig_na: bool = False
    # the MIG devices (slices) nvidia-smi lists on this GPU: the table's `MIG devices:` rows, the
    # `-L` lines under it, `-q`'s `MIG Device` records; None where the format read lists none
    # (never a GPU of its own: gpu_count names them beside the GPUs)
    mig_devices: int | None = None
    # the MIG devices' rows of the table's `MIG devices:` section (their memory and volatile
    # ECC counts, where the GPU's own row says N/A in MIG mode); () where none was read
    mig_slices: tuple[MigSlice, ...] = ()
    # in MIG mode, its `MIG devices:` rows may be in the part cut away: a table cut after its
    # GPU rows, before that section closed (in its header, in its rows, or before it began); what
    # only those rows give (each slice's memory, its volatile ECC count) is cut, never "not reported"
    mig_slices_cut: bool = False
    # this format's whole record of the GPU printed no name, only these sections (as labelled):
    # a view of some sections, `nvidia-smi -q -d PERFORMANCE` (`Performance State`, `Clocks Event
    # Reasons`), which never prints the name; () where the record names the GPU or was cut
    sections_view: tuple[str, ...] = ()
    vbios: str | None = None
    product_brand: str | None = None  # e.g. "NVIDIA", "GeForce", "NVIDIA RTX"
    product_architecture: str | None = None  # e.g. "Ampere", "Ada Lovelace"
    # ECC error totals (DRAM + SRAM where the schema splits them); None when N/A.
    ecc_volatile_correctable: int | None = None
    ecc_volatile_uncorrectable: int | None = None
    ecc_aggregate_correctable: int | None = None
    ecc_aggregate_uncorrectable: int | None = None
    # Page retirement (pre-Ampere); None when the GPU has row remapping instead.
    retired_pages_sbe: int | None = None
    retired_pages_dbe: int | None = None
    retired_pages_pending: bool | None = None
    # Row remapping (Ampere and newer); None when N/A.
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remapped_rows_pending: bool | None = None
    remapped_rows_failure: bool | None = None
    # Row-remapper bank histogram: how many memory banks have max / high / partial / low /
    # none of their spare rows left ("none": no spare row, the next error there cannot be
    # remapped). None when not reported.
    remap_banks_max: int | None = None
    remap_banks_high: int | None = None
    remap_banks_partial: int | None = None
    remap_banks_low: int | None = None
    remap_banks_none: int | None = None
    # Memory repair state of newer drivers (DTD v13: the 580 and 595 captures); None when the
    # driver does not report it or says N/A.
    sram_threshold_exceeded: bool | None = None  # aggregate SRAM errors past the field-diag threshold
    channel_repair_pending: bool | None = None  # a memory channel repair waits for a reset
    tpc_repair_pending: bool | None = None  # a TPC (compute cluster) repair waits for a reset
    unrepairable_memory: bool | None = None  # memory damage that no repair can fix
    power_draw_w: float | None = None
    power_limit_w: float | None = None  # the limit in force (enforced / current power limit)
    default_power_limit_w: float | None = None
    max_power_limit_w: float | None = None
    # the limit software asked for (`nvidia-smi -pl`, the default unless set): an enforced
    # limit below it is held by something else (the BMC's out-of-band cap, a module's budget)
    requested_power_limit_w: float | None = None
    # power_limit_w is a CSV's `power.limit`, read for want of an `enforced.power.limit` value
    # (that column not asked, or N/A): the requested limit, never another format's enforced one
    power_limit_requested: bool = False
    # Active clock event (throttle) reasons, names from CLOCK_EVENT_REASONS, in bit order.
    clock_event_reasons: tuple[str, ...] = ()
    clock_event_reasons_known: bool = False  # False: this output did not say
    # the reasons whose state (Active / Not Active) was read: one another GPU of the model read
    # and this one printed N/A, empty or a fault marker for is unread there, never Not Active
    clock_event_reasons_read: tuple[str, ...] = ()
    performance_state: str | None = None  # "P0".."P12"
    # clocks in MHz (-q -x <clocks> / <max_clocks> / <applications_clocks>, -q "Clocks" / "Max
    # Clocks" / "Applications Clocks", CSV clocks.current.sm / clocks.max.sm /
    # clocks.applications.graphics): the SM clock at this output's moment and its max, and the
    # graphics clock the application-clock setting (`nvidia-smi -ac`) holds with its default;
    # None where N/A, deprecated (R580+ application clocks) or not reported
    clocks_sm_mhz: int | None = None
    clocks_sm_max_mhz: int | None = None
    clocks_applications_mhz: int | None = None
    clocks_default_applications_mhz: int | None = None
    utilization_gpu_pct: int | None = None
    # the other engines' utilisation (NVENC / NVDEC / NVJPG / OFA) and the encoder's active
    # sessions: a GPU idle by SM figures may still be busy encoding; None when N/A or not reported
    encoder_util_pct: float | None = None
    decoder_util_pct: float | None = None
    jpeg_util_pct: float | None = None
    ofa_util_pct: float | None = None
    encoder_sessions: int | None = None
    temperature_slowdown_c: int | None = None  # absolute slowdown threshold
    temperature_max_c: int | None = None  # absolute shutdown threshold
    virtualization_mode: str | None = None  # "None", "Pass-Through", "VGPU", "Host VGPU", ...
    # the vGPU software licence a vGPU guest's driver (or the vGPU driver on a passed-through GPU)
    # reports: `-q` "vGPU Software Licensed Product" (R4xx: "GRID Licensed Product"), `-q -x`
    # vgpu_software_licensed_product; License Status as printed ("Licensed (Expiry: ...)",
    # "Unlicensed (Restricted)", "Unlicensed"), Product Name ("NVIDIA Virtual Compute Server");
    # None where N/A or not reported (bare metal and pass-through print no such section, the
    # table and the CSV carry none)
    license_status: str | None = None
    licensed_product: str | None = None
    compute_mode: str | None = None  # "Default", "Exclusive_Process", "Prohibited", ...
    processes: tuple[GpuProcess, ...] = ()
    processes_known: bool = False  # False: this output cannot list processes
    # the list read may go on in the part cut away: rows read of a list the output cut before
    # it closed (a table cut inside its process rows, a -q cut inside the last GPU's Processes)
    processes_open: bool = False
    # this format's record of the GPU was cut short (the table's rows, a -q block, a CSV row the
    # output ended in): the values read are whole (a cut line or cell is not read), what was not
    # read may be in the part cut away. Merged: some format's record of it was cut; a field is
    # whole where a format whose record was whole read it (facts/gpu_agree.py `field_whole`)
    record_cut: bool = False
    # of a record cut short (`record_cut`), the parts of it this format read whole before the
    # cut, by their names in the output: -q's sections and lines by label (casefolded: "clocks
    # event reasons", "temperature"), -q -x's elements by tag ("clocks_event_reasons"); () where
    # the record is whole or the format says none (the table, the CSV): a rule whose parts were
    # all read so judges as over a whole record (steps/checks/gpu_health/step.py `RULE_PARTS`)
    parts_read: tuple[str, ...] = ()
    # this format printed the GPU's power readings whole (-q's `GPU Power Readings` with a section
    # after it, -q -x's closed <gpu_power_readings>), N/A values included: a record cut below them
    # lost none of them (a None draw there is nvidia-smi's N/A, not the cut's)
    power_read: bool = False
    # What nvidia-smi printed instead of this GPU's values when it could not read them
    # ("ERR!" in the table, "GPU requires reset", "GPU is lost"), in FAULT_WORDS order;
    # () when the GPU answered. Its unreadable fields are None, never a value.
    faults: tuple[str, ...] = ()
    # One cell nvidia-smi could not read while the rest of the row was read ("fan sensor reads
    # ERR!"): that sensor's fault, not an unreadable GPU (its value is None).
    cell_faults: tuple[str, ...] = ()
    # PCIe link replays since reset and rollovers of that counter (-q / -q -x): a bad riser/slot
    pcie_replays: int | None = None
    pcie_replay_rollovers: int | None = None
    board_part_number: str | None = None
    # the -q / -q -x `Fabric` section on NVSwitch boxes (H100/H200/B200 SXM): State "Completed" /
    # "In Progress" / "Not Started", Status "Success" / an error; None where N/A or not reported
    fabric_state: str | None = None
    fabric_status: str | None = None
    # the R570+ `Fabric` -> `Health` block (-q, -q -x `fabric/health`, CSV `fabric.health.*`):
    # (field, value) for each field with a value (values.FABRIC_HEALTH names them): Summary
    # "Healthy" / "Unhealthy" / "Limited Capacity", Bandwidth "Full" / "Degraded", the route and
    # timeout conditions "True" / "False"; N/A and Not Supported left out
    fabric_health: tuple[tuple[str, str], ...] = ()
    # what the driver says must be done to this GPU before it is used again (NVML's GPU Recovery
    # Action in newer drivers' `-q` / `-q -x` / CSV `gpu_recovery_action`, 570-610 here): "None",
    # "Reset", "Reboot", "Drain P2P", "Drain and Reset", ... as printed; R5xx's "GPU Reset Status"
    # (`reset_status.*`) read in the same words (values._recovery_action); None: N/A, not reported
    recovery_action: str | None = None
    # where each field came from when several nvidia-smi formats were merged: field -> source
    # ("xml", "text", "csv", "table", "list", "compute_apps"); empty for a single source
    provenance: tuple[tuple[str, str], ...] = ()
    # each nvidia-smi format's own reading of this GPU, (format, that format's GpuInfo), richest
    # first, where two or more formats read it: separate calls, at separate moments. The fields
    # above are merged (each from the richest format that read it; faults, counts and slowdowns
    # from all), so a rule that must not mix two moments judges each format's reading
    # (gpu_agree.setting_reads: a setting read otherwise, setting_views.py; gpu_agree.link_reads:
    # the PCIe link beside its own load, gpu_health/pcie.py; gpu_agree.usage_samples: figures
    # beside its own process list, gpu_health/usage.py); () where one format read it
    readings: tuple[tuple[str, GpuInfo], ...] = ()
    # the row's number (1-based) in a CSV whose rows cannot be told apart as GPUs or as samples
    # of one (an `-l` log without index, uuid or pci.bus_id): the rules then name the row, not a
    # GPU (its `index` is the row's place, not a GPU's index); None for a GPU known as one
    csv_row: int | None = None
    # the CSV row (1-based) of the hottest of this GPU's samples in an `-l` log whose rows are
    # told apart (by index, uuid or pci.bus_id): its `temperature_c` is that row's, the hottest
    # sample, where a row other than the newest read a higher one; None otherwise
    temperature_row: int | None = None
    # its `index` is its place in a `-q` of some of the GPUs (`-q -i 4`), not the GPU's number:
    # the rules name it by its PCI address
    unplaced: bool = False

    def called(self) -> str:
        """`GPU 3`; `CSV row 3` for a row not known to be a GPU of its own (an `-l` log's); `GPU at
        PCI 00000000:52:00.0` for a GPU whose number the output does not give (a `-q -i` view)."""
        if self.csv_row is not None:
            return f"CSV row {self.csv_row}"
        return f"GPU at PCI {self.pci_bus_id}" if self.unplaced and self.pci_bus_id else f"GPU {self.index}"


@dataclass(frozen=True)
class GpuReport:
    """Everything one nvidia-smi invocation said about the host's GPUs."""

    source: str  # "xml" | "csv" | "table" | "text" | "unknown"
    driver_version: str | None
    cuda_version: str | None
    attached_gpus: int | None  # as the tool says; may differ from len(gpus) in a partial capture
    gpus: tuple[GpuInfo, ...]
    warnings: tuple[str, ...] = ()
    # False when the output was cut off mid-record (an XML without its closing tag, a -q whose
    # last GPU block ends early, fewer GPUs listed than "Attached GPUs" says with the text ending
    # inside a record): an incomplete probe to rerun, never a hardware claim. An output cut after
    # every GPU's record, inside the process list that follows them (the table's Processes, the
    # last -q record's Processes), is complete in its GPU facts: the GPUs whose lists the cut may
    # have shortened have `processes_open`, and only the process rule reads that cut
    complete: bool = True
    # the GPU set is known whole where `complete` is False for a GPU record cut short: every GPU
    # listed by a whole listing (a whole `-L` of as many, `Attached GPUs` of as many): a rule
    # reading only fields each GPU's whole record read judges as over a whole output
    # (steps/checks/missing_facts.py `_incomplete_for`)
    set_whole: bool = False
    # why the GPUs listed are not known to be all of them when that is not a cut-off (a CSV
    # whose rows cannot be told apart as GPUs or as samples of one); "" otherwise
    gap: str = ""
    # the gap is a `-q` text's lost indentation (text_q.TEXT_FLAT) in a text of one GPU record
    # (`Attached GPUs : 1`, one `Product Name`): no value can belong to another GPU's section, so
    # the GPU's name, the count and the driver are read whole; its sections' values are not
    gap_spares_names: bool = False
    # why `complete` is False where the output shows no cut of its own: its nvidia-smi call failed
    # or was stopped after printing it (connection/gather.py `_failed_answer`). A cut: the rows
    # read are whole GPUs, a GPU may be missing after them; "" otherwise
    cut_said: str = ""
    # cell faults nvidia-smi printed of a GPU by PCI address where no GPU listed here has that
    # address (a format without bus ids): 'GPU at PCI 0000:08:00.0: infoROM reads corrupted'
    unplaced_faults: tuple[str, ...] = ()
    # what the merged formats say otherwise of the box, each value with its format ('driver
    # 535.161.08 in -q, 550.90.07 in the table'): facts/gpu_agree.py; the report is then not whole
    disagreements: tuple[str, ...] = ()
    # the fields those disagreements are about ("driver_version", "name", "memory_total_mib",
    # "uuid", "serial"; "gpus" for the GPU set): a rule reading one of them judges none of the
    # answers (steps/checks/missing_facts.py `_disputed`)
    disputed: tuple[str, ...] = ()
    # of a merged report: why each output that gave the CUDA version kept is a view of part of
    # the box (ProbeOutput.partial: "... shows only the GPUs of the container it ran in"), "" for
    # one of the whole box; () where none was told apart (one format parsed alone)
    cuda_told_by: tuple[str, ...] = ()


def _unknown(message: str) -> GpuReport:
    """An empty report that says why it is empty."""
    return GpuReport("unknown", None, None, None, (), (message,))


class PcieLink(TypedDict):
    """The GpuInfo fields of the PCIe link: generation and width, current and max."""

    pcie_gen_current: int | None
    pcie_gen_max: int | None
    pcie_gen_device_max: int | None
    pcie_gen_host_max: int | None
    pcie_width_current: int | None
    pcie_width_max: int | None


class MemoryHealth(TypedDict):
    """The GpuInfo fields of memory health: ECC totals, retired pages, remapped rows and their
    bank histogram, and the repair state of newer drivers."""

    ecc_volatile_correctable: int | None
    ecc_volatile_uncorrectable: int | None
    ecc_aggregate_correctable: int | None
    ecc_aggregate_uncorrectable: int | None
    retired_pages_sbe: int | None
    retired_pages_dbe: int | None
    retired_pages_pending: bool | None
    remapped_rows_correctable: int | None
    remapped_rows_uncorrectable: int | None
    remapped_rows_pending: bool | None
    remapped_rows_failure: bool | None
    remap_banks_max: int | None
    remap_banks_high: int | None
    remap_banks_partial: int | None
    remap_banks_low: int | None
    remap_banks_none: int | None
    sram_threshold_exceeded: bool | None
    channel_repair_pending: bool | None
    tpc_repair_pending: bool | None
    unrepairable_memory: bool | None


class PowerReadings(TypedDict):
    """The GpuInfo fields of power: the draw, the limit in force, the default and max limits."""

    power_draw_w: float | None
    power_limit_w: float | None
    default_power_limit_w: float | None
    max_power_limit_w: float | None
    requested_power_limit_w: float | None
    power_read: bool


class EngineReadings(TypedDict):
    """The GpuInfo fields of the engines beside the SMs: video encoder / decoder, JPEG and
    optical-flow utilisation, and the encoder's active sessions."""

    encoder_util_pct: float | None
    decoder_util_pct: float | None
    jpeg_util_pct: float | None
    ofa_util_pct: float | None
    encoder_sessions: int | None


class ClockReadings(TypedDict):
    """The GpuInfo fields of the clocks: the SM clock and its max, the application clocks."""

    clocks_sm_mhz: int | None
    clocks_sm_max_mhz: int | None
    clocks_applications_mhz: int | None
    clocks_default_applications_mhz: int | None


# the whole record's sections no `-q -d SECTION` view prints (its identity: the name, brand,
# architecture, UUID, VBIOS, PCI): a record that holds one is the whole `-q`, its name blank or
# dropped, never a view of some sections (review N F4); labels as printed, or XML tags
_IDENTITY_SECTIONS = frozenset(
    {"product name", "product brand", "product architecture", "gpu uuid", "uuid", "vbios version", "pci"}
)


def a_sections_view(labels: Iterable[str]) -> bool:
    """Whether a whole GPU record of these section labels (or XML tags), printing no name, is a
    `-q -d SECTION` view: it holds some section and none of the identity a whole record prints."""
    said = [label.replace("_", " ").strip().casefold() for label in labels]
    return bool(said) and not _IDENTITY_SECTIONS.intersection(said)
