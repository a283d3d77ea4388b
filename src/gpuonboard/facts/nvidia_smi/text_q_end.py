"""Where a GPU record of `nvidia-smi -q` ends, and so whether the last one read was cut short:
the sections every whole record has, and each driver generation's closing one (the 260 format
before 270's rewrite, the 270 format's Clocks, R560+'s Capabilities). Pure: no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpuonboard.facts.nvidia_smi.text_tree import _tree_child, _tree_first
from gpuonboard.once import lazy_re

# Top-level sections of a -q GPU record that every complete record has, whatever the driver
# (R450 .. R590 captures): a last record without one of them was cut off.
_TEXT_RECORD_KEYS = ("Product Name", "PCI", "Processes")


def _cut_in_processes(trees: Sequence[Mapping[str, Any]], attached: int | None) -> bool:
    """Whether a cut -q output was cut inside or after its last record's `Processes` (every
    record there, as many as `Attached GPUs` says): the record read its Product Name, PCI and
    Processes header, so every section nvidia-smi prints before its process list was read."""
    last = trees[-1]
    if attached is not None and attached != len(trees):
        return False
    return "Processes" in last and all(key in last for key in _TEXT_RECORD_KEYS if key in trees[0])


# a GPU record's head in the -q format of drivers before the 270 rewrite (`GPU 0:`, 2010's 260.19:
# pastebin imQMLZpJ), whose records hold no PCI section and no process list; later drivers head
# each record with its PCI address (`GPU 0000:04:00.0`)
_OLD_HEAD = re.compile(r"^GPU \d+:$")
# a GPU record's head in the -q format of the 270 drivers (2011's 270.41.19, a Tesla M2090's
# `nvidia-smi -i 0 -q` on Microway's blog: `GPU 0:2:0`, its bus:device:function in decimal, memory
# in `Mb`): its records hold a PCI section but no process list and close with their `Clocks`
# section (Graphics, SM, Memory), the last line nvidia-smi prints of a GPU
_BDF_HEAD = lazy_re(r"^GPU \d+:\d+:\d+$")


_CLOCKS_HEAD = lazy_re(r"^\s*(?:Max )?Clocks\s*$")
_MEMORY_CLOCK = lazy_re(r"^\s*Memory\s*:\s*\d+ MHz\s*$")


def _clocks_closed(lines: Sequence[str]) -> bool:
    """A 270-format record (`_BDF_HEAD`) read to its end: its last section is Clocks (or a Max
    Clocks after it) with the Memory clock, the section's last line, read whole (by its lines:
    a paste that lost the indentation keeps them)."""
    filled = [line for line in lines if line.strip()]
    heads = [at for at, line in enumerate(filled) if ":" not in line]
    return (
        bool(heads)
        and bool(_CLOCKS_HEAD.match(filled[heads[-1]]))
        and any(_MEMORY_CLOCK.match(line) for line in filled[heads[-1] + 1 :])
    )


def _text_block_cut(
    first: Mapping[str, Any],
    last: Mapping[str, Any],
    single: bool,
    old: bool = False,
    bdf: bool | None = None,
) -> bool:
    """Whether the last -q GPU record ends early: it lacks a section the first record has (or,
    when it is the only record, one that every full record has), or it ends at a 'Processes'
    header with no entry under it (nvidia-smi prints 'Processes : None' for none). A record of
    the format before 270 (`old`) has no Processes section to lack; one of the 270 format
    (`bdf`: whether its last record's Clocks section closed it, `_clocks_closed`) none either."""
    if _tree_child(last, "Processes") == {}:
        return True
    if old and single:
        return False
    if bdf is not None and (single or not bdf):
        return not bdf
    if not single:
        # the sections every record has, and the first record's closing one (sections such as
        # "MIG Devices" may differ from GPU to GPU on a mixed box; the record's end does not)
        required = [key for key in _TEXT_RECORD_KEYS if key in first]
        required += list(first)[-1:]
        return any(key not in last for key in required)
    if "Processes" in last:
        return False
    # `-q -d MEMORY` and friends print a few sections without the product name: not a cut
    return "Product Name" in last or not last  # (one section alone: `-q -d TEMPERATURE`)


# the first driver branch known to close each GPU's -q record with a `Capabilities` section
# after its Processes (every real -q of 560.35.03 to 610.62 in tests/fixtures/real does)
_CLOSED_BY_CAPABILITIES = 560


def _capabilities_missing(tree: Mapping[str, Any], last: Mapping[str, Any]) -> bool:
    """Whether a whole GPU record (its Product Name and Processes read) of a driver that closes
    each record with `Capabilities` lacks it: the text was cut at a line end in or after the
    record's Processes, the process list read may go on in the part cut away."""
    raw = _tree_first(tree, ("KMD Version",), ("Driver Version",)) or ""
    major = re.match(r"\s*(\d+)\.", raw)
    if major is None or int(major.group(1)) < _CLOSED_BY_CAPABILITIES:
        return False
    return "Product Name" in last and "Processes" in last and _tree_child(last, "Capabilities") is None
