"""The options an Ansible host's ssh arguments (`ansible_ssh_args`, `ansible_ssh_common_args`,
then `ansible_ssh_extra_args`) give its ssh, read as OpenSSH reads its own command line: `-p
PORT`, `-l USER`, `-i FILE`, `-J JUMP` and `-o Keyword=Value` (also `-oKeyword=Value`, `-o
"Keyword Value"`, flags run together as in `-Cp 2222`), the first value of each option winning
(ssh's rule for its command line, as for its config), identity files accumulating in order.

Ansible puts the inventory's own `ansible_port`, `ansible_user` and key file on ssh's command
line after `ansible_ssh_args` (its ssh_args setting) and before the common and extra args (`-o
Port=... -o User=...`): so `ansible_ssh_args` beat them, and they beat the common and extra
args; all of these beat the SSH config. `ssh -G` shows the same (the tests use it as the
oracle).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import where

# (in the order ssh gets them; the first comes before Ansible's own -o Port= -o User=)
ANSIBLE_SSH_ARGS = ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args")
# an Ansible template, one word however many blanks it holds (`-i {{ key_dir }}/gpu.pem`)
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)

# ssh(1) options that take a value, and the keyword of those read here
_VALUE_FLAGS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
_FLAG_KEYWORD = {"p": "port", "l": "user", "i": "identityfile", "J": "proxyjump"}
# the keywords read (where and as whom ssh connects); identity and certificate files accumulate
READ = frozenset(
    {
        "hostname",
        "port",
        "user",
        "identityfile",
        "certificatefile",
        "proxyjump",
        "proxycommand",
        "stricthostkeychecking",
        "userknownhostsfile",
    }
)
# what ssh would be told of host keys that gpuonboard does not follow (it checks them against
# its own known_hosts and pins, and records a new one only with --trust-new-hosts)
HOST_KEY_KEYS = frozenset({"stricthostkeychecking", "userknownhostsfile"})
LAX_CHECKING = frozenset({"no", "off", "false", "accept-new"})
LISTS = frozenset({"identityfile", "certificatefile"})


@dataclass(frozen=True)
class SSHArgs:
    """What ssh arguments set: each keyword of READ with its value (the first given; a list of
    every one given for identity and certificate files), and the words that set it."""

    values: dict[str, str | list[str]] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)  # keyword -> as written (`-p 2222`)
    # keyword -> where it was written (`file, line N`) and by what (`ansible_ssh_common_args of
    # host 'gpu1'`)
    source: dict[str, tuple[str, str]] = field(default_factory=dict)

    def first(self, key: str) -> str | None:
        """The value of `key` (the first file of a list), or None."""
        value = self.values.get(key)
        if isinstance(value, list):
            return value[0] if value else None
        return value

    def before_inventory(self, key: str) -> bool:
        """Whether `key` was set by `ansible_ssh_args`, which ssh gets before Ansible's own
        `-o Port=`, `-o IdentityFile=`, `-o User=` (so it beats ansible_port and the rest)."""
        return self.source.get(key, ("", ""))[1].startswith(f"{ANSIBLE_SSH_ARGS[0]} ")

    def extra_files(self, inventory_key: bool, extras: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        """The Host fields of the identity and certificate files these args give beyond the
        key_file, in the order ssh tries them: after the inventory's own key file
        (`inventory_key`) or the first of them, and before the SSH config's (in `extras`)."""
        out: dict[str, tuple[str, ...]] = {}
        keys = [local_path(f) for f in self.values.get("identityfile", ())]
        if keys:
            keys = keys if inventory_key else keys[1:]
            out["extra_key_files"] = tuple(dict.fromkeys([*keys, *extras.get("extra_key_files", ())]))
        certs = [local_path(f) for f in self.values.get("certificatefile", ())]
        if certs:
            out["certificate_files"] = tuple(dict.fromkeys([*certs, *extras.get("certificate_files", ())]))
        return out


def _words(texts: Iterable[tuple[str, tuple[str, str]]]) -> Iterator[tuple[str, tuple[str, str]]]:
    """The words of each (text, its source) as ssh gets them, each template one word marked
    `\\0t\\0` (a text that does not split is skipped: Ansible's ssh would refuse it)."""
    for text, source in texts:
        marked = _TEMPLATE.sub(lambda m: "\0t\0", text)
        try:
            words = shlex.split(marked)
        except ValueError:
            continue
        for word in words:
            yield word, source


def _option(value: str) -> tuple[str, str] | None:
    """`Keyword=Value` or `Keyword Value` (an `-o` argument) as (keyword in lower case, value
    without the double quotes around it), or None."""
    text = value.strip()
    for i, char in enumerate(text):
        if char in "= \t":
            keyword, rest = text[:i], text[i:].lstrip(" \t")
            rest = rest[1:].lstrip(" \t") if rest.startswith("=") else rest
            if len(rest) >= 2 and rest[0] == rest[-1] == '"':
                rest = rest[1:-1]
            return keyword.lower(), rest
    return None


def parse_ssh_args(texts: Iterable[str | tuple[str, tuple[str, str]]]) -> SSHArgs:
    """The options of READ that the ssh argument `texts` set, in order (first value wins);
    each text may come with its source (`file, line N: its ansible_ssh_common_args`)."""
    out = SSHArgs()
    words = _words((t, ("", "")) if isinstance(t, str) else t for t in texts)
    for word, source in words:
        if word == "--":
            break
        if not word.startswith("-") or word == "-":
            continue
        for i, letter in enumerate(word[1:], 2):
            if letter not in _VALUE_FLAGS:
                continue  # (-q, -A, -C ...: no value)
            value = word[i:] or next(words, ("", ("", "")))[0]
            if not value:
                return out
            if letter == "o":
                found = _option(value)
                if found is not None:
                    _set(out, found[0], found[1], f"-o {value}", source)
            elif letter in _FLAG_KEYWORD:
                _set(out, _FLAG_KEYWORD[letter], value, f"-{letter} {value}", source)
            break
    return out


def _set(out: SSHArgs, keyword: str, value: str, written: str, source: tuple[str, str]) -> None:
    """Record `keyword` unless an earlier argument set it (files accumulate)."""
    if keyword not in READ:
        return
    if keyword in LISTS:
        files = out.values.setdefault(keyword, [])
        assert isinstance(files, list)
        if value.lower() != "none":
            files.append(value)
        out.written.setdefault(keyword, written)
        out.source.setdefault(keyword, source)
        return
    if keyword in ("proxyjump", "proxycommand") and ({"proxyjump", "proxycommand"} & set(out.values)):
        return  # (the first of the two wins, as in OpenSSH)
    if keyword not in out.values:
        out.values[keyword] = value
        out.written[keyword] = written
        out.source[keyword] = source


def host_ssh_args(name: str, ordered: Sequence[tuple[Mapping[str, Any], str]], path: Path) -> SSHArgs:
    """What an Ansible host's ssh args set: each of ANSIBLE_SSH_ARGS is its last layer's (a
    host's replaces its groups' whole), common args first. A value ssh could not use, or one
    Ansible renders only when it connects (a template), is an InventoryError naming the host,
    the variable and where it was written: guessing would connect somewhere else."""
    texts: dict[str, tuple[str, tuple[str, str]]] = {}
    for layer, label in ordered:
        given = layer.get("vars")
        for key in ANSIBLE_SSH_ARGS:
            if isinstance(given, Mapping) and isinstance(given.get(key), str):
                texts[key] = (given[key], (where(path, given, key), f"{key} of {label}"))
    args = parse_ssh_args(texts[k] for k in ANSIBLE_SSH_ARGS if k in texts)
    for keyword in [k for k in args.values if k not in HOST_KEY_KEYS]:  # (in the order written)
        _check(name, args, keyword)
    return args


def lax_host_keys(values: Mapping[str, Any]) -> str | None:
    """The setting among `values` (ssh keywords) that would have ssh accept a host key it does
    not know (`StrictHostKeyChecking no` or `accept-new`, `UserKnownHostsFile /dev/null`), or
    None; its keyword in lower case is what the setting's text starts with."""
    checking = values.get("stricthostkeychecking")
    if isinstance(checking, str) and checking.strip().lower() in LAX_CHECKING:
        shown = "no" if checking.strip() == "false" else checking.strip()  # (`ssh -G` prints no as false)
        return f"StrictHostKeyChecking {shown}"
    files = values.get("userknownhostsfile")
    if isinstance(files, str) and files.strip() == "/dev/null":
        return "UserKnownHostsFile /dev/null"
    return None


def _check(name: str, args: SSHArgs, keyword: str) -> None:
    """Refuse, in one sentence, a value of `keyword` in `args` that cannot be followed."""
    value = args.values[keyword]
    values = value if isinstance(value, list) else [value]
    text = values[0] if values else ""
    written, (at, label) = args.written[keyword], args.source[keyword]
    problem = None
    if any("\0" in v for v in values):
        problem = "an Ansible template, which Ansible renders only when it connects; write the value itself"
    elif keyword == "port" and not (text.isdigit() and 0 < int(text) < 65536):
        problem = "which is no port (1-65535), and ssh refuses it; fix it"
    elif keyword == "hostname" and re.search(r"%[^h%]", text):
        problem = "whose token OpenSSH expands only when it connects; write the address itself"
    elif keyword in LISTS and any("%" in v for v in values):
        problem = "a path with a %-token, which gpuonboard does not expand there; write the path out"
    elif keyword == "user" and not text.strip():
        problem = "an empty user name; fix it"
    if problem is not None:
        shown = written.replace("\0t\0", "{{...}}")
        raise InventoryError(f"{at}: host {name!r} gets `{shown}` from the {label}, {problem}.")


def local_path(path: str) -> str:
    """A file named in ssh's arguments as ssh opens it: `~` expanded, a relative path from the
    directory it runs in (where Ansible runs)."""
    return os.path.abspath(os.path.expanduser(path))
