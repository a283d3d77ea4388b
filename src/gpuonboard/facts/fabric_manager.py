"""Pure parser for the NVIDIA Fabric Manager service state.

The probe (facts/extra_probes.py FABRIC_MANAGER) prints `systemctl is-active
nvidia-fabricmanager` (one word: active, inactive, failed, activating, deactivating,
reloading, unknown) and then `systemctl show -p LoadState nvidia-fabricmanager`
(`LoadState=loaded`, `LoadState=not-found` when the unit is not installed, `masked`).
A bare saved `systemctl is-active` output (one word) is read too, and so is `systemctl status
nvidia-fabricmanager` (the form users post: its `Active: active (running) since ...` and `Loaded:
loaded (...)` lines; its unit's journal lines below are not read; `Unit nvidia-fabricmanager.service
could not be found.` is the unit not installed). Without systemd as init (a container) systemctl
prints "System has not been booted with systemd ..." and the state is "unknown".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ACTIVE_STATES", "FabricManagerState", "parse_fabric_manager"]

ACTIVE_STATES = ("active", "inactive", "failed", "activating", "deactivating", "reloading", "unknown")


# `systemctl status`'s lines of the unit's state (`Active: active (running) since ...`) and of its
# unit file (`Loaded: loaded (/usr/lib/systemd/system/nvidia-fabricmanager.service; enabled; ...)`)
_STATUS_FIELD = re.compile(r"(Active|Loaded):[ \t]+([a-z-]+)")
# `systemctl status` of a unit not installed
_NO_UNIT = re.compile(r"Unit \S*fabricmanager\S* (?:could not be found|not found)", re.I)


@dataclass(frozen=True)
class FabricManagerState:
    """nvidia-fabricmanager's service state."""

    state: str  # one of ACTIVE_STATES ("unknown": systemd did not say)
    unit_present: bool | None  # False: unit not installed (LoadState=not-found); None: not said
    load_state: str | None = None  # "loaded", "not-found", "masked", ...
    detail: str | None = None  # the line that explains an "unknown" (no systemd, ...)

    @property
    def running(self) -> bool:
        """The service is up."""
        return self.state == "active"


def parse_fabric_manager(text: str) -> FabricManagerState:
    """Parse `systemctl is-active nvidia-fabricmanager` (+ `systemctl show -p LoadState`)."""
    state = "unknown"
    load = None
    detail = None
    status_read: set[str] = set()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := re.fullmatch(r"LoadState=(\S*)", line):
            load = m.group(1) or None
        elif m := re.fullmatch(r"ActiveState=(\S*)", line):
            state = m.group(1) if m.group(1) in ACTIVE_STATES else state
        elif line in ACTIVE_STATES:
            state = line
        elif m := _STATUS_FIELD.match(line):  # (`systemctl status`: `Active: failed (Result: signal)`)
            # (the first unit's fields only: `systemctl status nvidia-fabricmanager
            # nvidia-persistenced` prints the other unit's below, its `active` not the manager's)
            if m.group(1) in status_read:
                continue
            status_read.add(m.group(1))
            if m.group(1) == "Active":
                state = m.group(2) if m.group(2) in ACTIVE_STATES else state
            else:
                load = m.group(2)
        elif _NO_UNIT.match(line):
            state, load = "inactive", "not-found"  # (as `is-active` and `show` say it)
        elif detail is None:
            detail = line
    present = None if load is None else load not in ("not-found", "")
    return FabricManagerState(state, present, load, detail)
