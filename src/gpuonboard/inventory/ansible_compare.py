"""The own Ansible reader compared with `ansible-inventory --list`, host by host and field by
field (tests/unit/inventory/test_ansible_corpus.py and bench/ansible_agreement.py measure the
corpus of real inventories with it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible_list import ansible_inventory_json, list_view
from gpuonboard.inventory.loader import load


def host_view(host: Any) -> dict[str, Any]:
    """One of our Hosts in list_view's fields (its jump: the hops it names itself, last)."""
    return {
        "address": host.address,
        "port": host.port,
        "user": host.user,
        "key_file": host.key_file,
        "connection": host.connection,
        "jump": tuple(host.jump),
        "proxy_command": host.proxy_command,
        "groups": sorted(host.groups),
        "vars": dict(host.vars),
    }


def disagreement(path: Path, ssh_config: Path, exe: str | None = None) -> str | None:
    """Where our reading of the inventory at `path` differs from `ansible-inventory --list`
    (one line), or None when they agree: the same hosts, each with the same fields. Ansible
    finding no host (or failing to parse the file) agrees with our refusing it."""
    try:
        data = ansible_inventory_json(str(path), exe=exe)
    except InventoryError as exc:
        data, their_error = {}, str(exc)
    else:
        their_error = ""
    theirs = list_view(data)
    try:
        ours = {n: host_view(h) for n, h in load(path, ssh_config=ssh_config).hosts.items()}
    except InventoryError as exc:
        return None if not theirs else f"refused ({exc}); Ansible reads {len(theirs)} hosts"
    if their_error:
        return f"Ansible fails ({their_error}); we read {len(ours)} hosts"
    if set(ours) != set(theirs):
        mine_only, theirs_only = sorted(set(ours) - set(theirs))[:5], sorted(set(theirs) - set(ours))[:5]
        return f"hosts differ: only ours {mine_only}, only Ansible's {theirs_only}"
    for name in theirs:
        mine, want = ours[name], theirs[name]
        if want["jump"] and mine["jump"][-len(want["jump"]) :] == want["jump"]:
            mine["jump"] = want["jump"]  # (ours is the flat chain: the bastion's own jumps first)
        if isinstance(want["key_file"], str):  # (both expand `~` before use)
            want["key_file"] = os.path.abspath(os.path.expanduser(want["key_file"]))  # (ssh: from here)
        for key in want:
            if mine[key] != want[key]:
                return f"host {name!r} {key}: ours {mine[key]!r}, Ansible's {want[key]!r}"
    return None
