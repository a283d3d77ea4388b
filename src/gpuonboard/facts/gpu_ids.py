"""A GPU's PCI device id, as nvidia-smi prints it, and the product name NVIDIA's driver gives
that id (data/gpu_pci_ids.yml): what names a GPU whose own driver printed a placeholder, and
what tells a name that is another card than its id.

nvidia-smi prints the ids as the 32-bit "device and vendor" word: `-q` "Device Id :
0x233010DE", `-q -x` `<pci_device_id>233010DE</pci_device_id>`, `--query-gpu=pci.device_id`
"0x233010DE"; the subsystem the same way ("Sub System Id : 0x16C010DE": subsystem device 16C0 of
vendor 10DE). A value of another vendor ("000000DE" on an AWS A10G's subsystem, a redacted one)
is no id: None.
"""

from __future__ import annotations

import functools
import re

from gpuonboard.once import loaded_once
from gpuonboard.resources import DATA_DIR, table_rows

IDS_FILE = DATA_DIR / "gpu_pci_ids.yml"
NVIDIA = "10DE"
_WORD = re.compile(r"^\s*(?:0x)?([0-9a-f]{4})([0-9a-f]{4})\s*$", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)  # (each GPU's address is looked up once for every other GPU)
def pci_domain(domain: str) -> str:
    """A PCI domain in one form, however wide it was written: nvidia-smi's 8 hex digits
    (`00000000`, `00010000`), the kernel's `%04x` (`0000`, an Intel VMD domain's `10000`), lower
    case without leading zeros ('0', '10000'). Its every digit counts: the last four of `10000`
    are domain 0's. The one domain key of bus_key and kernel_log.pci_key."""
    return domain.strip().lower().lstrip("0") or "0"


def bus_key(bus_id: str | None) -> str | None:
    """A GPU's PCI address as one key: '00000000:3B:00.0', '0000:3b:00.0' and '3B:00.0' (no
    domain: domain 0) are one address, domain without leading zeros ('0:3b:00.0'); None for no
    address ('N/A', empty)."""
    if not bus_id or ":" not in bus_id:
        return None
    text = bus_id.strip().lower()
    domain, _, rest = text.partition(":") if text.count(":") > 1 else ("0", "", text)
    return f"{pci_domain(domain)}:{rest}"


def _split(raw: str | None) -> tuple[str, str] | None:
    m = _WORD.match(raw or "")
    return (m.group(1).upper(), m.group(2).upper()) if m else None


def device_id(raw: str | None) -> str | None:
    """'0x233010DE' -> '2330': an NVIDIA device id; None for another vendor's or no value."""
    parts = _split(raw)
    return parts[0] if parts and parts[1] == NVIDIA and parts[0] != "0000" else None


def subsystem_id(raw: str | None) -> str | None:
    """'0x16C010DE' -> '10DE 16C0' (vendor, then device, as the driver's table writes it);
    None for no value or a zero one ('000000DE')."""
    parts = _split(raw)
    if parts is None or parts[0] == "0000" or parts[1] in ("0000", "00DE"):
        return None
    return f"{parts[1]} {parts[0]}"


@loaded_once
def _table(path: str = str(IDS_FILE), former: bool = False) -> dict[str, tuple[tuple[str | None, str], ...]]:
    """Device id -> (subsystem, name) rows: the newest driver's, or with `former` every release's
    (a row with `was`: a name an earlier driver printed)."""
    from pathlib import Path

    rows: dict[str, list[tuple[str | None, str]]] = {}
    for row in table_rows(Path(path), "ids"):
        if former or not row.get("was"):
            rows.setdefault(str(row["id"]).upper(), []).append((row.get("sub"), str(row["name"])))
    return {k: tuple(v) for k, v in rows.items()}


def names_by_id(device: str | None, subsystem: str | None = None) -> tuple[str, ...]:
    """The names the newest NVIDIA driver prints for this device id: the one its subsystem picks, else the
    one the table gives the id alone, else every name the id has (more than one: the id alone
    does not tell which); () for an id the table does not hold."""
    rows = _table().get((device or "").upper(), ())
    exact = [name for sub, name in rows if subsystem and sub == subsystem]
    plain = [name for sub, name in rows if sub is None]
    names = exact or plain or [name for _, name in rows]
    return tuple(dict.fromkeys(names))


def all_names_by_id(device: str | None) -> tuple[str, ...]:
    """Every name NVIDIA's driver prints or printed for this device id, whatever its subsystem
    and release (20B3: 'NVIDIA A100-SXM-64GB' now, 'NVIDIA PG506-242' from 515.48.07)."""
    rows = _table(former=True).get((device or "").upper(), ())
    return tuple(dict.fromkeys(name for _, name in rows))


def every_name() -> dict[str, tuple[str, ...]]:
    """Every device id the table holds, with every name any release printed for it."""
    return {
        device: tuple(dict.fromkeys(name for _, name in rows)) for device, rows in _table(former=True).items()
    }


@functools.cache
def _product_names() -> frozenset[str]:
    return frozenset(name.casefold() for names in every_name().values() for name in names)


def is_product_name(text: str) -> bool:
    """`text` is a whole name NVIDIA's driver prints or printed for a product ('NVIDIA L40',
    'NVIDIA A10'), casefolded; 'NVIDIA A100-PC' is none."""
    return text.strip().casefold() in _product_names()


def shown_id(device: str, subsystem: str | None = None) -> str:
    """'10de:2330' (lspci's form), with the subsystem where read: '10de:2330 (subsystem 10de:16c0)'."""
    sub = f" (subsystem {subsystem.replace(' ', ':').lower()})" if subsystem else ""
    return f"{NVIDIA.lower()}:{device.lower()}{sub}"
