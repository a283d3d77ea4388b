"""One host's settings while it is resolved (inventory/resolve.py): its layers merged, where
each key came from, its SSH config Host entry and its ssh args; which of them wins for a field
(`pick`), and the error for a bad value at the file and line of the layer that set it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible_cfg import CONFIG_LAYER
from gpuonboard.inventory.ansible_vars import ALL_VARS
from gpuonboard.inventory.model import Vendor
from gpuonboard.inventory.sshargs import ANSIBLE_SSH_ARGS, SSHArgs, local_path
from gpuonboard.yamlload import LineDict, where

# the ssh args (`... of WHO`) that sit below a vendor profile in an Ansible inventory, as the
# fields of the same layers do: the Ansible config's and the inventory's own `all` vars'
BELOW_VENDOR_ARGS = (f" of {CONFIG_LAYER}", f" of {ALL_VARS}")


@dataclass(frozen=True)
class HostSettings:
    """One host's layers merged (`merged`), the layer that set each top-level key (`origin`),
    the layers in precedence order (`ordered`) and its SSH config Host entry (`sshc`)."""

    name: str
    path: Path
    vendor: Vendor | None
    ordered: list[tuple[Mapping[str, Any], str]]
    merged: dict[str, Any]
    origin: dict[str, tuple[Mapping[str, Any], str]]
    sshc: Mapping[str, Any]
    looked_up: str | None = None  # the name `sshc` was looked up at: the host's, or its address
    ansible: bool = False  # an Ansible inventory: its `all` vars (`defaults`) beat the SSH config
    args: SSHArgs = SSHArgs()  # what an Ansible host's ssh args set (`-p 2222`, `-o User=ops`)
    # the SSH config's ProxyCommand as written (`sshc` holds `ssh -W %h:%p b` as ProxyJump b):
    # after the args' `-J none`, ssh still takes it, unlike the config's own ProxyJump
    config_command: str | None = None

    def file_of(self, label: str) -> Path:
        """The file a layer was written in: the vendor profile's, else the inventory's."""
        vendor = self.vendor
        return Path(vendor.source) if vendor is not None and label.startswith("vendor ") else self.path

    def err(self, key: str, problem: str) -> InventoryError:
        """The error for a bad value of `key`, at the file and line of the layer that set it."""
        src, label = self.origin.get(key, (LineDict(), f"host {self.name!r}"))
        at = where(self.file_of(label), src, key)
        if self.ansible and label == "defaults":  # (the layer's name is ours: name what the user wrote)
            who = getattr(src, "key_layers", {}).get(key, (ALL_VARS,))[0]
            label = "the Ansible config's" if who == CONFIG_LAYER else f"{ALL_VARS}'"
        return InventoryError(f"{at}: {label} field {key!r} {problem}")

    def from_inventory(self, key: str) -> bool:
        """Whether the host's own entry or one of its groups sets `key` (beating the SSH config);
        in an Ansible inventory its `all` vars too: Ansible passes `ansible_user`, `ansible_port`
        and the key file on ssh's command line, which beats the config (`ssh -o User=...`)."""
        beats = ("host ", "group ", "defaults") if self.ansible else ("host ", "group ")
        return key in self.merged and self.origin.get(key, (None, ""))[1].startswith(beats)

    def vendor_beats_args(self, key: str, ssh_key: str) -> bool:
        """Whether the vendor profile's `key` beats what the ssh args set for `ssh_key`: args
        from the Ansible config or the `all` vars sit below a vendor profile, as the config's
        remote_user and the `all` vars' ansible_user do."""
        source = self.args.source.get(ssh_key, ("", ""))[1]
        return source.endswith(BELOW_VENDOR_ARGS) and self.origin.get(key, ({}, ""))[1].startswith("vendor ")

    def pick(self, key: str, ssh_key: str, default: Any) -> Any:
        """An SSH config Host entry is host-specific: it beats defaults and vendor, not host/group
        (nor, in an Ansible inventory, its `all` vars: `from_inventory`). An Ansible host's ssh
        args come between: ssh gets them after Ansible's own `-o Port=`, before the config."""
        if ssh_key == "proxyjump":  # (`route` decides the args' way: `_way`)
            given = None if self.vendor_beats_args(key, ssh_key) else self.args.first(ssh_key)
            before = self.args.before_inventory(ssh_key)
        else:  # (the config's values, below a vendor profile's: the first of the inventory's args)
            below = BELOW_VENDOR_ARGS if self.origin.get(key, ({}, ""))[1].startswith("vendor ") else ()
            found = self.args.first_of(ssh_key, below)
            given = None if found is None else found[0]
            before = found is not None and found[1][1].startswith(f"{ANSIBLE_SSH_ARGS[0]} ")
        if self.from_inventory(key) and not (given is not None and before):
            return self.merged[key]
        if given is not None:
            return local_path(given) if ssh_key == "identityfile" else given
        if ssh_key in self.sshc:
            value = self.sshc[ssh_key]
            return value[0] if ssh_key == "identityfile" else value
        return self.merged.get(key, default)
