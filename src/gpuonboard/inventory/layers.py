"""The layers of one host's settings merged: defaults < vendor < groups < host, mappings key by
key (an order's `data_disk: /data` is short for `{mount: /data}`), and a null that would drop an
inherited value refused, naming both layers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import where


def deep_merge(base: dict[str, Any], over: Mapping[str, Any], path: tuple[str, ...] = ()) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        cur = out.get(k)
        if path == ("order",) and k == "data_disk":
            cur, v = _disk_mappings(cur, v)
        if isinstance(v, Mapping) and isinstance(cur, Mapping):
            out[k] = deep_merge(dict(cur), v, (*path, k))
        else:
            out[k] = v
    return out


# Settings whose explicit null would silently drop what a group, the vendor or the defaults
# give: `order:` left empty on a host dropped its group's order, so nothing was checked. (A
# null `jump`, `key_file`, `host_key` or `vendor` says "none" on purpose and stays allowed; a
# null port, user or timeout is refused by its own check.) Inside an order, every field.
NULL_DROPS = ("order", "data_dir", "vars")


def refuse_dropping_null(
    layer: Mapping[str, Any], label: str, set_by: dict[tuple[str, ...], str], file: Path
) -> None:
    """A null in `layer` for a value an earlier layer set (`set_by`: key path -> that layer's
    label) is refused, naming both; then `set_by` records what `layer` sets."""

    def walk(mapping: Mapping[str, Any], keys: tuple[str, ...]) -> None:
        for key, value in mapping.items():
            if not keys and key not in NULL_DROPS:
                continue
            here = (*keys, key)
            if value is None and here in set_by:
                who = set_by[here]
                field = f"field {key!r}" if not keys else f"{' '.join(keys)} field {key!r}"
                raise InventoryError(
                    f"{where(file, mapping, key)}: {label} {field} is empty (null), which would drop"
                    f" the {key!r} of {who}; remove the key to inherit {_possessive(who)} {key}."
                )
            if value is not None:
                set_by[here] = label
            if isinstance(value, Mapping) and here[0] == "order":
                walk(value, here)

    walk(layer, ())


def _possessive(label: str) -> str:
    """`group 'g'` -> `the group's`, `defaults` -> `the defaults'`."""
    kind = label.split()[0]
    return f"the {kind}'" if kind.endswith("s") else f"the {kind}'s"


def _disk_mappings(base: Any, over: Any) -> tuple[Any, Any]:
    """Pure: an order's `data_disk: /data` is short for `{mount: /data}`, and merges key by key
    with a mapping in another layer like one (a vendor's `data_disk: /data` under a host's
    `data_disk: {min_size: 7TB}` was replaced whole: "'mount' must be an absolute path")."""
    if isinstance(base, str) and isinstance(over, Mapping):
        return {"mount": base}, over
    if isinstance(over, str) and isinstance(base, Mapping):
        return base, {"mount": over}
    return base, over
