"""`ansible-inventory -i PATH --list` as an inventory source (opt-in: `--inventory
ansible-inventory:PATH`): Ansible itself reads the inventory (dynamic inventory scripts, plugins,
vaults, constructed groups), bounded in time and output size; its JSON (hosts with their merged
vars, groups with their hosts and children) becomes our hosts by the same code that turns the
own reader's result into them. Also `list_view`: what that JSON says of each host, field by
field (ansible_compare.py compares the own reader with it).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible import convert_vars, merged_shape
from gpuonboard.inventory.ansible_vars import AnsibleGroups, VarsFiles
from gpuonboard.inventory.jumps import parse_jump
from gpuonboard.inventory.sshargs import ANSIBLE_SSH_ARGS, local_path, parse_ssh_args, route
from gpuonboard.yamlload import LineDict

PREFIX = "ansible-inventory:"  # `--inventory ansible-inventory:PATH`
TIMEOUT_S = 120.0  # a dynamic inventory may query a cloud API; past this it is refused
MAX_OUTPUT_BYTES = 64 << 20  # JSON of 10,000 hosts with their vars is a few MB


def ansible_inventory_json(path: str, timeout: float = TIMEOUT_S, exe: str | None = None) -> Any:
    """`ansible-inventory -i PATH --list`, run with a timeout and its output bounded; a source
    Ansible cannot parse is an error (not Ansible's warning and an empty inventory)."""
    exe = exe or shutil.which("ansible-inventory") or _beside_python()
    if exe is None:
        raise InventoryError(
            f"{PREFIX}{path}: ansible-inventory is not installed (pip install ansible-core), so"
            " Ansible cannot read this inventory here; install it, or pass the inventory file itself."
        )
    env = {**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "ANSIBLE_NOCOLOR": "1"}
    env.setdefault("ANSIBLE_LOCALHOST_WARNING", "0")
    with subprocess.Popen(
        [exe, "-i", path, "--list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as child:
        try:
            out, err = _bounded_communicate(child, timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            raise InventoryError(
                f"{PREFIX}{path}: ansible-inventory --list ran for more than {timeout:g} s; fix the"
                " inventory source (a dynamic inventory that hangs?) or export its --list output to"
                " a file and pass that."
            ) from None
    if len(out) > MAX_OUTPUT_BYTES:
        raise InventoryError(
            f"{PREFIX}{path}: ansible-inventory --list printed more than {MAX_OUTPUT_BYTES >> 20} MiB;"
            " narrow the inventory source."
        )
    if child.returncode != 0:
        last = (err.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        raise InventoryError(
            f"{PREFIX}{path}: ansible-inventory --list failed (exit {child.returncode}): {last[:300]}"
        )
    try:
        return json.loads(out)
    except ValueError as exc:
        raise InventoryError(f"{PREFIX}{path}: ansible-inventory --list printed no JSON ({exc}).") from None


def _beside_python() -> str | None:
    """`ansible-inventory` of the virtual environment gpuonboard runs from (`.venv/bin/gpuonboard`
    run without activating it: ansible-core installed there is not on PATH)."""
    exe = Path(sys.executable).parent / "ansible-inventory"
    return str(exe) if exe.is_file() and os.access(exe, os.X_OK) else None


def _bounded_communicate(child: subprocess.Popen[bytes], timeout: float) -> tuple[bytes, bytes]:
    """The child's stdout (at most MAX_OUTPUT_BYTES + 1 bytes kept) and stderr's tail."""
    import threading

    chunks: list[bytes] = []
    errs: list[bytes] = []

    def pump_out() -> None:
        assert child.stdout is not None
        size = 0
        while block := child.stdout.read(1 << 16):
            if size <= MAX_OUTPUT_BYTES:
                chunks.append(block)
                size += len(block)

    def pump_err() -> None:
        assert child.stderr is not None
        while block := child.stderr.read(1 << 16):
            errs.append(block)
            del errs[:-4]

    readers = [threading.Thread(target=f, daemon=True) for f in (pump_out, pump_err)]
    for t in readers:
        t.start()
    child.wait(timeout)
    for t in readers:
        t.join(5)
    return b"".join(chunks), b"".join(errs)


def unwrap(value: Any) -> Any:
    """Ansible's JSON markers removed: `{"__ansible_unsafe": x}` is x."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return unwrap(value["__ansible_unsafe"])
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def groups_from_list(data: Any, source: str) -> AnsibleGroups:
    """`--list` JSON as an inventory Ansible holds: each host's merged vars as its own, each
    group's hosts and children (group vars are already merged into the hosts')."""
    if not isinstance(data, Mapping):
        raise InventoryError(f"{PREFIX}{source}: ansible-inventory --list printed no JSON object.")
    meta: Mapping[str, Any] = data["_meta"] if isinstance(data.get("_meta"), Mapping) else {}
    hostvars: Mapping[str, Any] = meta["hostvars"] if isinstance(meta.get("hostvars"), Mapping) else {}
    inv = AnsibleGroups()
    for name, entry in data.items():
        if name == "_meta" or not isinstance(entry, Mapping):
            continue
        hosts = [str(h) for h in entry.get("hosts") or []]
        inv.direct[name] = hosts
        inv.children[name] = [str(c) for c in entry.get("children") or []]
        for h in hosts:
            inv.hosts.setdefault(h, {})
    for name, hv in hostvars.items():
        inv.hosts[str(name)] = unwrap(hv) if isinstance(hv, Mapping) else {}
    return inv


def load_from_list(data: Any, source: str, path: Path) -> LineDict:
    """Our inventory shape from `--list` JSON (`path`: what messages name)."""
    return merged_shape(groups_from_list(data, source), path, VarsFiles(None))


def list_view(data: Any) -> dict[str, dict[str, Any]]:
    """What `--list` JSON says of each host, in our fields: address, port, user, key_file,
    connection, the jump hops, its groups and its other vars (for comparing readers)."""
    inv = groups_from_list(data, "")
    member: dict[str, set[str]] = {h: set() for h in inv.hosts}
    for g in inv.direct:
        if g in ("all", "ungrouped"):
            continue
        for h in _all_hosts(inv, g, ()):
            member[h].add(g)
    out = {}
    for name, hv in inv.hosts.items():
        c = convert_vars(hv, templates=True)
        # (what the ssh args say, after Ansible's own -o Port/User/IdentityFile: sshargs)
        args = parse_ssh_args([hv[k] for k in ANSIBLE_SSH_ARGS if isinstance(hv.get(k), str)])
        connection = c.get("connection", "ssh")
        address = c.get("address") or ("localhost" if connection == "local" else name)
        given = {
            ours: c[ours] if ours in c and not args.before_inventory(theirs) else args.first(theirs)
            for ours, theirs in (("port", "port"), ("user", "user"), ("key_file", "identityfile"))
        }
        key = given["key_file"]
        way = route(args, {}) or ("", "")
        out[name] = {
            "address": str(args.first("hostname") or address),
            "port": int(given["port"] or 22),
            # (an empty ansible_user: ssh's own login name, as resolve does where no config says one)
            "user": given["user"] or (pwd.getpwuid(os.getuid()).pw_name if c.get("user") == "" else "root"),
            "key_file": local_path(key) if key and key != c.get("key_file") else key,
            "connection": connection,
            "jump": parse_jump(way[1] if way[0] == "jump" else c.get("jump"), _no_err),
            "proxy_command": way[1] if way[0] == "proxy_command" else c.get("proxy_command"),
            "groups": sorted(member[name]),
            "vars": dict(c.get("vars", {})),
        }
    return out


def _all_hosts(inv: AnsibleGroups, g: str, trail: tuple[str, ...]) -> list[str]:
    if g in trail:
        return []
    out = list(inv.direct.get(g, []))
    for c in inv.children.get(g, []):
        out += _all_hosts(inv, c, (*trail, g))
    return out


def _no_err(key: str, why: str) -> ValueError:
    return ValueError(f"{key} {why}")
