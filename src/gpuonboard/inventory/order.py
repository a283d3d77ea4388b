"""Order specs: an `order:` mapping (merged across the layers that set it) validated into an
`OrderSpec`: GPU model and count, sizes with units, CPU cores, interconnect, driver, RDMA
ports x rate, and the data disk's mount and size; every error names where the value was
written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.fields import (
    CPU_CORES_RANGE,
    DATA_DISK_KEYS,
    GPU_COUNT_RANGE,
    INTERCONNECTS,
    ORDER_KEYS,
    SIZE_MAX_BYTES,
    NumberRange,
    normal_remote_path,
    remote_path_problem,
)
from gpuonboard.inventory.model import DataDiskSpec, OrderSpec
from gpuonboard.inventory.rdma_order import INFINIBAND, fabric_named, parse_rdma_order
from gpuonboard.model_names import instance_type_problem, names_a_model
from gpuonboard.units import parse_ram_size, parse_size
from gpuonboard.yamlload import LineDict, did_you_mean, where

_ZERO_MEMORY = re.compile(r"(?<![\d.])0+\s*G(?:I?B)?\b", re.IGNORECASE)  # "0GB", "0 GiB", "00G"


def parse_rdma(value: object) -> tuple[int, float]:
    """An order's `rdma` field, COUNTxRATE with the rate in Gb/s (`8x400G`, `8 x 400Gbps`,
    `2x200Gb/s`, with a fabric: `8x400G InfiniBand`) -> (8, 400.0); ValueError with the reason
    otherwise (inventory.rdma_order reads the fabric and NIC words too)."""
    rdma = parse_rdma_order(value)
    return rdma.ports, rdma.gbit


# the label of an order given as a file of its own (`--order FILE`): it says it is an order
ORDER_FILE = "the order file"


def _names_the_order(label: str) -> bool:
    """The label already says it is an order (`the order file`): no second "order" after it. Only
    that label: a host's or group's name holding the word (`host 'order-box-1'`) says nothing."""
    return label == ORDER_FILE


def order_of(label: str) -> str:
    """The order an error names, from the label of who wrote it: `host 'gpu-1' order`, `group
    'a100' order`; a label that already says it is an order (`the order file`) as it is (before:
    "the order file order data_disk ...")."""
    return label if _names_the_order(label) else f"{label} order"


def parse_order(
    raw: Any,
    path: Path,
    parent: Mapping[str, Any],
    label: str,
    origins: Mapping[str, tuple[Path, Mapping[str, Any], str]] | None = None,
) -> OrderSpec:
    """Validate an order mapping into an OrderSpec; errors name file, line and field.

    `origins` maps each key of a merged order (group + host ...) to the file, mapping and
    label it came from, so an error points where the bad value was written.
    """
    if not isinstance(raw, Mapping):
        whose = label if _names_the_order(label) else f"{label} 'order'"
        raise InventoryError(f"{where(path, parent, 'order')}: {whose} must be a mapping.")
    src = raw if isinstance(raw, LineDict) else parent
    order = _Order(raw, origins or {}, (path, src, label))
    for key in raw:
        if key not in ORDER_KEYS:
            loc, who = order.at(key)
            raise InventoryError(
                f"{loc}: {order_of(who)} has an unknown key {key!r}"
                f"{did_you_mean(key, ORDER_KEYS) or '; allowed: ' + ', '.join(sorted(ORDER_KEYS)) + '.'}"
            )
    gpu_model = _gpu_model(raw.get("gpu_model"), order)
    interconnect = _interconnect(raw.get("interconnect"), order)
    min_driver = order.min_driver()
    rdma = None
    if raw.get("rdma") is not None:
        try:
            rdma = parse_rdma_order(raw["rdma"])
        except ValueError as exc:
            raise order.fail("rdma", f"{exc}.") from None
    data_disk = order.data_disk()
    return OrderSpec(
        gpu_model=gpu_model,
        gpu_count=order.count("gpu_count", GPU_COUNT_RANGE),
        vram_bytes=order.size("vram", parse_ram_size),  # GPU memory is sold in binary sizes too
        cpu_cores=order.count("cpu_cores", CPU_CORES_RANGE),
        ram_bytes=order.size("ram", parse_ram_size),  # RAM is sold in binary sizes: 0.5TB = 512 GiB
        data_disk=data_disk,
        interconnect=interconnect,
        min_driver=min_driver,
        rdma=(rdma.ports, rdma.gbit) if rdma else None,
        rdma_layer=rdma.layer if rdma else None,
        rdma_nic=rdma.nic if rdma else "",
        rdma_generation=rdma.generation if rdma else None,
    )


def _gpu_model(gpu_model: Any, order: _Order) -> str | None:
    """The order's `gpu_model`, refused where it is no text, empty, 0 GB, a cloud instance type
    or names no GPU model (each would fail every box, or pass any GPU)."""
    if gpu_model is not None and not isinstance(gpu_model, str):
        raise order.fail("gpu_model", "must be a text like 'A100 80GB SXM'.")
    if gpu_model is not None and not gpu_model.strip():
        # (an empty model would not be checked at all: the box would pass whatever GPU it holds)
        raise order.fail(
            "gpu_model", "is empty; give the model ordered, like 'A100 80GB SXM', or remove the line."
        )
    if gpu_model is not None and (zero := _ZERO_MEMORY.search(gpu_model)):
        # (a GPU of 0 GB matches no card, and judging the VRAM against it divided by zero)
        raise order.fail(
            "gpu_model",
            f"names {zero.group(0).strip()!r} of GPU memory; write the size ordered, like 'A100 80GB'.",
        )
    if gpu_model is not None and (instance := instance_type_problem(gpu_model)):
        # (judged, its words are in no name a driver prints: it would fail every box, the ordered
        # card included)
        raise order.fail("gpu_model", f"{instance}.")
    if gpu_model is not None and not names_a_model(gpu_model):
        # (judged, it would fail every box, or pass any GPU of the size or form it names)
        raise order.fail(
            "gpu_model",
            f"names no GPU model ({gpu_model.strip()!r}: only a maker, architecture, size, form, count or"
            " platform); write the model ordered, like 'H100 80GB SXM'.",
        )
    return gpu_model


def _interconnect(interconnect: Any, order: _Order) -> str | None:
    """The order's `interconnect` (`NVLink` as people write it), refused where it is none of
    INTERCONNECTS, pointing an RDMA fabric to `rdma`."""
    if isinstance(interconnect, str) and interconnect.strip().lower() in INTERCONNECTS:
        interconnect = interconnect.strip().lower()  # ('NVLink', as people write it)
    if interconnect is not None and interconnect not in INTERCONNECTS:
        fabric = fabric_named(interconnect) if isinstance(interconnect, str) else None
        example = "8x400G InfiniBand" if fabric == INFINIBAND else "2x100G RoCE"
        raise order.fail(
            "interconnect",
            f"must be one of {', '.join(INTERCONNECTS)} (the link between the GPUs), not {interconnect!r}"
            + (
                f'; the RDMA fabric goes in `rdma` with its ports and rate, like "{example}".'
                if fabric
                else "."
            ),
        )
    return interconnect


@dataclass(frozen=True)
class _Order:
    """One order mapping being validated: `origins` says where each key was written (the file,
    mapping and label of its layer), `default` where the order itself was."""

    raw: Mapping[str, Any]
    origins: Mapping[str, tuple[Path, Mapping[str, Any], str]]
    default: tuple[Path, Mapping[str, Any], str]

    def origin(self, key: str) -> tuple[Path, Mapping[str, Any], str]:
        """The file, mapping and label that wrote `key`."""
        return self.origins.get(key) or self.default

    def at(self, key: str) -> tuple[str, str]:
        """`file, line N` of `key`, and who wrote it."""
        file, mapping, who = self.origin(key)
        return where(file, mapping, key), who

    def fail(self, key: str, problem: str) -> InventoryError:
        """The error for a bad value of order field `key`."""
        loc, who = self.at(key)
        return InventoryError(f"{loc}: {order_of(who)} field {key!r} {problem}")

    def size(self, key: str, parse: Callable[[object], int] = parse_size) -> int | None:
        """A size with a unit (`80GB`), above 0 and at most 1 EiB; None when not given."""
        raw = self.raw
        if raw.get(key) is None:
            return None
        if (bare := _bare_number(raw[key])) is not None:
            raise self.fail(
                key, f"needs a unit, like {bare}GB or {bare}GiB (a bare number would mean bytes)."
            )
        try:
            value = parse(raw[key])
        except (ValueError, OverflowError) as exc:  # (400 digits: a float of inf, no int)
            raise self.fail(key, f"is not a valid size: {exc}.") from None
        if value <= 0:  # (a minimum of nothing: the box would pass whatever it holds)
            raise self.fail(
                key, f"is {raw[key]!r}, which checks nothing; give the size ordered, or remove the line."
            )
        if value > SIZE_MAX_BYTES:
            raise self.fail(key, f"is {raw[key]!r}, more than any box holds (at most 1 EiB); fix the size.")
        return value

    def count(self, key: str, rule: NumberRange) -> int | None:
        """A whole number within `rule`; None when not given."""
        v = self.raw.get(key)
        if v is None:
            return None
        if problem := rule.problem(v):
            raise self.fail(key, problem)
        assert isinstance(v, int)
        return v

    def min_driver(self) -> str | None:
        """The minimum driver version, quoted text of dotted numbers (`"550.90"`)."""
        min_driver = self.raw.get("min_driver")
        if isinstance(min_driver, float):
            raise self.fail(
                "min_driver",
                f'must be quoted text like "550.90"; unquoted, YAML reads it as the number {min_driver!r}.',
            )
        if min_driver is None:
            return None
        if isinstance(min_driver, bool) or not isinstance(min_driver, str | int):
            raise self.fail("min_driver", 'must be a driver version like "535.54".')
        min_driver = str(min_driver)
        if not re.fullmatch(r"[0-9]+(?:\.[0-9]+)*", min_driver):
            raise self.fail("min_driver", f'must be a driver version like "535.54", not {min_driver!r}.')
        if int(min_driver.split(".")[0]) < 100:  # (NVIDIA's Linux drivers are numbered 100 and up)
            raise self.fail(
                "min_driver",
                f'must be a driver version like "570.26", not {min_driver!r}, which is numbered like a'
                " CUDA version: write the driver that CUDA version needs (NVIDIA's CUDA release notes"
                " name it).",
            )
        return min_driver

    def data_disk(self) -> DataDiskSpec | None:
        """The data disk: a mount point below / (`data_disk: /data` for short) and a min_size."""
        disk = self.raw.get("data_disk")
        if disk is None:
            return None
        if isinstance(disk, str) and (
            both := re.fullmatch(r"\s*(/\S*?)[:,]?\s+(\d+(?:\.\d+)?\s*[A-Za-z]+)\s*", disk)
        ):
            disk = {"mount": both[1], "min_size": both[2]}  # (`/data 500G`, as an order sheet says it)
        elif isinstance(disk, str) and len(disk.split()) > 1:
            raise self.fail(
                "data_disk",
                f"must be a mount point, or a mount point and a size with its unit ('/data 500GB'), not"
                f" {disk!r}: write `{{mount: /data, min_size: 500GB}}`.",
            )
        elif isinstance(disk, str):
            disk = {"mount": disk}
        if not isinstance(disk, Mapping):
            raise self.fail("data_disk", "must be a mapping with 'mount' and 'min_size'.")
        dfile, dparent, dlabel = self.origin("data_disk")

        def disk_at(key: str) -> str:
            if isinstance(disk, LineDict) and key in disk:
                return where(dfile, disk, key)
            return where(dfile, dparent, "data_disk")

        for key in disk:
            if key not in DATA_DISK_KEYS:
                raise InventoryError(
                    f"{disk_at(key)}: {order_of(dlabel)} data_disk has an unknown key {key!r}"
                    f"{did_you_mean(key, DATA_DISK_KEYS) or '; allowed: mount, min_size.'}"
                )
        mount = disk.get("mount")
        if problem := remote_path_problem(mount):
            raise InventoryError(f"{disk_at('mount')}: {order_of(dlabel)} data_disk 'mount' {problem}")
        assert isinstance(mount, str)
        mount = normal_remote_path(mount)
        if mount == "/":
            raise InventoryError(
                f"{disk_at('mount')}: {order_of(dlabel)} data_disk 'mount' must not be '/' (the system disk);"
                " give the data disk's own mount point, like /data."
            )
        field = f"{disk_at('min_size')}: {order_of(dlabel)} data_disk field 'min_size'"
        min_size = _disk_min_size(disk, field)
        return DataDiskSpec(mount=mount, min_size_bytes=min_size)


def _bare_number(value: object) -> str | None:
    """A size written without its unit, as a number or a quoted one (`vram: "80"`, read as 80
    bytes, passed any GPU): its text; None for anything else."""
    text = str(value).strip() if not isinstance(value, bool) else ""
    return text if re.fullmatch(r"\d+(?:\.\d+)?", text) else None


def _disk_min_size(disk: Mapping[str, Any], field: str) -> int | None:
    """A data disk's `min_size` (`7TB`), above 0 and at most 1 EiB; `field` begins the error."""
    if (bare := _bare_number(disk.get("min_size"))) is not None:
        raise InventoryError(f"{field} needs a unit, like {bare}TB (a bare number would mean bytes).")
    if disk.get("min_size") is None:
        return None
    try:
        min_size = parse_size(disk["min_size"])
        if min_size > SIZE_MAX_BYTES:
            raise ValueError(f"{disk['min_size']!r} is more than any disk holds (at most 1 EiB)")
    except (ValueError, OverflowError) as exc:
        raise InventoryError(f"{field} is not a valid size: {exc}.") from None
    if min_size <= 0:
        raise InventoryError(
            f"{field} is {disk['min_size']!r}, which checks nothing; give the size ordered, or remove"
            " the line."
        )
    return min_size
