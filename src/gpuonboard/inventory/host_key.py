"""A host's host key settings, resolved (inventory/resolve.py): the pinned fingerprint
(`host_key`, checked as OpenSSH prints it) and where the user's settings would have ssh accept
an unknown host key (ssh args, Ansible's host key checking, the SSH config), which gpuonboard
does not follow and names when it refuses one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible_cfg import CONFIG_LAYER, ENV_SOURCE, ansible_boolean
from gpuonboard.inventory.settings import HostSettings
from gpuonboard.inventory.sshargs import LAX_CHECKING
from gpuonboard.inventory.sshresolve import OpenSSHConfig
from gpuonboard.yamlload import where

_ANSIBLE_CHECKING = ("ansible_host_key_checking", "ansible_ssh_host_key_checking")


def host_key_note(s: HostSettings, ssh_cfg: Any) -> str | None:
    """Where the user's settings would have ssh accept an unknown host key (or, with
    `UserKnownHostsFile /dev/null` alone, ask about it every time), which gpuonboard does not
    follow (said when it refuses one); None where nothing says so. Each keyword is the first
    that sets it, as ssh reads them: ansible_ssh_args, Ansible's own `StrictHostKeyChecking=no`
    (its host key checking turned off), the common and extra args, then the SSH config."""
    config = s.sshc or _config_settings(s, ssh_cfg)
    where_config = f"{getattr(ssh_cfg, 'path', 'the SSH config')}: `%s` for this host"
    checking = _first_setting(s, "stricthostkeychecking", config, where_config)
    if checking is not None and checking[0].strip().lower() in LAX_CHECKING:
        return checking[1]
    if checking is not None and checking[0].strip().lower() in ("yes", "true"):
        return None  # (ssh refuses an unknown key: nothing to name)
    files = _first_setting(s, "userknownhostsfile", config, where_config)
    return files[1] if files is not None and files[0].strip() == "/dev/null" else None


def _first_setting(
    s: HostSettings, key: str, config: Mapping[str, Any], at_config: str
) -> tuple[str, str] | None:
    """The value ssh takes for host key setting `key` and where it was written: the args'
    (ansible_ssh_args before Ansible's own, common and extra args after), Ansible's host key
    checking turned off (for StrictHostKeyChecking), else the config's."""
    given = s.args.values.get(key)
    if isinstance(given, str) and s.args.before_inventory(key):
        return given, _args_note(s, key)
    if key == "stricthostkeychecking" and (off := _ansible_checking_off(s)) is not None:
        return "no", off
    if isinstance(given, str):
        return given, _args_note(s, key)
    value = config.get(key)
    if isinstance(value, str):
        shown = "no" if value.strip() == "false" else value.strip()  # (`ssh -G` prints no as false)
        keyword = "StrictHostKeyChecking" if key == "stricthostkeychecking" else "UserKnownHostsFile"
        return value, at_config % f"{keyword} {shown}"
    return None


def _args_note(s: HostSettings, key: str) -> str:
    at, label = s.args.source[key]
    return f"{at}: `{s.args.written[key]}` in the {label}"


def _ansible_checking_off(s: HostSettings) -> str | None:
    """Where an Ansible host's host key checking is turned off (the last layer setting it)."""
    for layer, label in reversed(s.ordered if s.ansible else ()):
        given = layer.get("vars")
        key = next((k for k in _ANSIBLE_CHECKING if isinstance(given, Mapping) and k in given), None)
        if key is not None:
            assert isinstance(given, Mapping)
            if given[key] is None or ansible_boolean(given[key]):  # (non-strict: `n`, `nope` are false)
                return None
            label = getattr(given, "key_layers", {}).get(key, (label,))[0]
            at = where(s.path, given, key)
            if label == CONFIG_LAYER and at.startswith(ENV_SOURCE):  # (ANSIBLE_HOST_KEY_CHECKING=False)
                return f"{at.removeprefix(ENV_SOURCE)}={given[key]} in the environment"
            if label == CONFIG_LAYER:
                return f"{at}: `host_key_checking = {given[key]}` in the Ansible config"
            return f"{at}: {key}: {given[key]} of {label}"
    return None


def _config_settings(s: HostSettings, ssh_cfg: Any) -> Mapping[str, Any]:
    """What the SSH config says of an Ansible host it gives no connection setting (a `Host
    10.0.*` block with only `StrictHostKeyChecking no`): Ansible's `ssh ADDRESS` still applies
    it. Looked up at the address (or the name), which config_alias already resolved."""
    if not s.ansible or ssh_cfg is None or s.looked_up is not None:
        return {}
    address = s.merged.get("address", s.name)
    alias = str(address).strip().removeprefix("[").removesuffix("]")
    try:  # (a config ssh refuses, or the own reader cannot decide, was already said for hosts using it)
        if isinstance(ssh_cfg, OpenSSHConfig):
            return {k: " ".join(v) for k, v in ssh_cfg.resolution(alias).values.items()}
        return dict(ssh_cfg.lookup(alias)) if hasattr(ssh_cfg, "lookup") else {}
    except InventoryError:
        return {}


# an OpenSSH SHA256 fingerprint: 32 bytes in base64, 43 characters (OpenSSH prints no `=`)
_FINGERPRINT = re.compile(r"SHA256:([A-Za-z0-9+/]{43})=?", re.IGNORECASE)
_HOW = "(`ssh-keyscan -p PORT HOST | ssh-keygen -lf -` prints it)"


def pinned_host_key(s: HostSettings) -> str | None:
    """The pinned fingerprint as OpenSSH prints it (`SHA256:` and 43 base64 characters, a
    base64 `=` pad dropped). A placeholder (`SHA256:...`), a cut or MD5 fingerprint, or a whole
    `ssh-keygen -l` line is refused here: it would never match, and every connection would be
    reported as a possible man-in-the-middle."""
    value = s.merged.get("host_key")
    if value is None:
        return None
    if not isinstance(value, str):
        raise s.err("host_key", f"must be one OpenSSH fingerprint like SHA256:{'x' * 43} {_HOW}.")
    text = value.strip()
    if whole := _FINGERPRINT.fullmatch(text):
        return f"SHA256:{whole.group(1)}"
    inside = _FINGERPRINT.search(text)
    if inside is not None and (inside.start() == 0 or text[inside.start() - 1] == " "):
        raise s.err(
            "host_key",
            f"is a whole `ssh-keygen -l` line ({value!r}); write only its fingerprint"
            f" (host_key: SHA256:{inside.group(1)}).",
        )
    if " " in text and "SHA256:" in text.upper():
        raise s.err(
            "host_key",
            f"is a whole `ssh-keygen -l` line ({value!r}); write only its fingerprint, SHA256: and 43"
            f" base64 characters {_HOW}.",
        )
    if text.upper().startswith("MD5:"):
        raise s.err(
            "host_key",
            f"is an MD5 fingerprint; pin the SHA256 one, SHA256: and 43 base64 characters {_HOW}.",
        )
    raise s.err(
        "host_key",
        f"{value!r} is not an OpenSSH fingerprint, which is SHA256: and 43 base64 characters"
        f" (a placeholder like SHA256:... or a cut copy never matches); copy the whole fingerprint {_HOW}.",
    )
