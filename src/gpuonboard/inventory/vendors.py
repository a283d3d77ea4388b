"""Vendor profiles: the files `vendors/<id>.yml` of an inventory, each validated into a
`Vendor` (identity, billing, shutdown command, registry mirror) and the host-settings layer
it contributes (its `ssh:` defaults, order, vars and data dir, with their line numbers).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.fields import (
    AFTER_POWEROFF,
    BILLING_KEYS,
    BILLING_UNITS,
    RATE_RANGE,
    SSH_DEFAULT_KEYS,
    VENDOR_KEYS,
    check_keys,
    data_dir_problem,
    normal_remote_path,
)
from gpuonboard.inventory.model import Billing, Vendor
from gpuonboard.inventory.rules import name_problem
from gpuonboard.yamlload import LineDict, load_yaml, where


def load_vendors(directory: Path) -> dict[str, Vendor]:
    """Load every vendor profile `vendors/<id>.yml`; the file stem is the vendor id."""
    vendors: dict[str, Vendor] = {}
    if not directory.is_dir():
        return vendors
    seen: dict[str, Path] = {}
    for f in sorted(directory.glob("*.y*ml")):
        if f.name.startswith("."):  # an editor's lock or swap file (`.#wuhan-idc.yml`), not a profile
            continue
        if problem := name_problem("vendor", f.stem):  # (the file name is the vendor id)
            raise InventoryError(f"{directory}: vendor profile file {f.name!r}: {problem}")
        if f.stem in seen:
            raise InventoryError(
                f"{f}: vendor {f.stem!r} has two profiles, {seen[f.stem].name} and {f.name}, and only one"
                " would be used; merge them into one file and remove the other."
            )
        seen[f.stem] = f
        vendors[f.stem] = load_vendor(f)
    return vendors


def load_vendor(path: Path) -> Vendor:
    """Validate one vendor profile file."""
    data = load_yaml(path, InventoryError, "vendor profile")
    if data is None:
        data = LineDict()
    if not isinstance(data, dict):
        raise InventoryError(
            f"{path}, line 1: a vendor profile must be a mapping (name:, ssh:, billing: ...)."
        )
    check_keys(data, VENDOR_KEYS, path, f"vendor {path.stem!r}")
    layer = _host_layer(data, path)
    billing = _billing(data, path)
    data_dir = _text(data, path, "data_dir")
    if data_dir is not None:
        if problem := data_dir_problem(data_dir):
            raise InventoryError(
                f"{where(path, data, 'data_dir')}: vendor {path.stem!r} 'data_dir' {problem}"
            )
        data_dir = normal_remote_path(data_dir)
    vendor = Vendor(
        id=path.stem,
        name=_text(data, path, "name") or path.stem,
        licence=_text(data, path, "licence"),
        icp=_text(data, path, "icp"),
        data_dir=data_dir,
        registry_mirror=_mirrors(data, path, "registry_mirror"),
        billing=billing,
        shutdown_command=_shutdown_command(_text(data, path, "shutdown_command"), path, data),
        source=str(path),
        host_defaults=layer,
    )
    return vendor


def _text(data: Mapping[str, Any], path: Path, key: str) -> str | None:
    """A text field of the profile (a number is taken as its text); None when not given."""
    v = data.get(key)
    if v is None:
        return None
    if not isinstance(v, str | int):
        raise InventoryError(f"{where(path, data, key)}: vendor {path.stem!r} field {key!r} must be a text.")
    return str(v)


def _mirrors(data: Mapping[str, Any], path: Path, key: str) -> str | tuple[str, ...] | None:
    """One registry mirror, or a non-empty list of them tried in order."""
    v = data.get(key)
    if isinstance(v, list):
        if not v or not all(isinstance(m, str) and m.strip() for m in v):
            raise InventoryError(
                f"{where(path, data, key)}: vendor {path.stem!r} field {key!r} must be a mirror or a"
                " list of mirrors (texts), tried in order."
            )
        return tuple(v)
    return _text(data, path, key)


def _host_layer(data: Mapping[str, Any], path: Path) -> LineDict:
    """The host-settings layer this profile contributes (its `ssh:` defaults, order, vars and
    data_dir); it keeps line numbers so a bad value is reported at its line in this file."""
    layer = LineDict()
    layer.line = data.line if isinstance(data, LineDict) else None
    layer.key_lines = {}
    ssh = data.get("ssh") or {}
    if not isinstance(ssh, dict):
        raise InventoryError(f"{where(path, data, 'ssh')}: vendor {path.stem!r} 'ssh' must be a mapping.")
    check_keys(ssh, SSH_DEFAULT_KEYS, path, f"vendor {path.stem!r} ssh")
    for key, value in ssh.items():
        layer[key] = value
        _copy_line(layer, key, ssh)
    # data_dir belongs in the layer too, so the profile's value beats `defaults:` (vendor > defaults).
    for key in ("order", "vars", "data_dir"):
        if data.get(key) is not None:
            layer[key] = data[key]
            _copy_line(layer, key, data)
    return layer


def _billing(data: Mapping[str, Any], path: Path) -> Billing:
    """The profile's `billing:`: unit (hour when not given), rates within RATE_RANGE, currency."""
    billing_raw = data.get("billing") or {}
    if not isinstance(billing_raw, dict):
        raise InventoryError(
            f"{where(path, data, 'billing')}: vendor {path.stem!r} 'billing' must be a mapping."
        )
    check_keys(billing_raw, BILLING_KEYS, path, f"vendor {path.stem!r} billing")
    unit = billing_raw.get("unit", "hour")
    if unit not in BILLING_UNITS:
        raise InventoryError(
            f"{where(path, billing_raw, 'unit')}: vendor {path.stem!r} billing 'unit' must be one of"
            f" {', '.join(BILLING_UNITS)}, not {unit!r}."
        )
    rates: dict[str, float | None] = {}
    for key in ("rate", "monthly_rate"):
        v = billing_raw.get(key)
        if v is not None and (problem := RATE_RANGE.problem(v)):
            raise InventoryError(
                f"{where(path, billing_raw, key)}: vendor {path.stem!r} billing {key!r} {problem}"
            )
        rates[key] = float(v) if v is not None else None
    after = billing_raw.get("after_poweroff", "")
    if "after_poweroff" in billing_raw and after not in AFTER_POWEROFF:
        raise InventoryError(
            f"{where(path, billing_raw, 'after_poweroff')}: vendor {path.stem!r} billing"
            f" 'after_poweroff' must be one of {', '.join(AFTER_POWEROFF)} (does the vendor stop"
            f" billing a box whose OS powered it off?), not {after!r}."
        )
    return Billing(
        unit=unit,
        unit_given="unit" in billing_raw,
        rate=rates["rate"],
        currency=str(billing_raw.get("currency", "")),
        monthly_rate=rates["monthly_rate"],
        after_poweroff=after,
    )


def _shutdown_command(value: str | None, path: Path, data: Mapping[str, Any]) -> str:
    """The profile's shutdown command; a blank one is refused, not replaced by the default:
    `shutdown_command: ""` may mean "never power off" and must not become `shutdown -h now`."""
    if value is None:
        return "shutdown -h now"
    if not value.strip():
        raise InventoryError(
            f"{where(path, data, 'shutdown_command')}: vendor {path.stem!r} field 'shutdown_command'"
            " is empty; give the command that powers the box off, or remove the line for"
            " `shutdown -h now`."
        )
    return value


def _copy_line(target: LineDict, key: str, source: Mapping[str, Any]) -> None:
    line = source.line_of(key) if isinstance(source, LineDict) else None
    if line is not None:
        target.key_lines[key] = line
