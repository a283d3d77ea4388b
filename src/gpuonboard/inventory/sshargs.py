"""The options an Ansible host's ssh arguments (`ansible_ssh_args`, `ansible_ssh_common_args`,
then `ansible_ssh_extra_args`) give its ssh, read as OpenSSH reads its own command line: `-p
PORT`, `-l USER`, `-i FILE`, `-J JUMP` and `-o Keyword=Value` (also `-oKeyword=Value`, `-o
"Keyword Value"`, flags run together as in `-Cp 2222`), the first value of each option winning
(ssh's rule for its command line, as for its config), identity files accumulating in order.

Ansible puts the inventory's own `ansible_port`, `ansible_user` and key file on ssh's command
line after `ansible_ssh_args` (its ssh_args setting) and before the common and extra args (`-o
Port=... -o User=...`): so `ansible_ssh_args` beat them, and they beat the common and extra
args; all of these beat the SSH config. `ssh -G` shows the same (the tests use it as the
oracle). The first ProxyJump or ProxyCommand across the three args is the way to the host
(`route`); a `ProxyJump none` still lets a later ProxyCommand, the config's too, apply. Words
are split and stripped as Ansible does; what Ansible or ssh would refuse (a quote not closed,
an option without its value or unknown, `-J` after a ProxyCommand, a stray word ssh would dial
as the host) is refused, never half read.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshresolve import CONNECTION_KEYS, LIST_KEYS
from gpuonboard.once import lazy_re
from gpuonboard.yamlload import where

# (in the order ssh gets them; the first comes before Ansible's own -o Port= -o User=)
ANSIBLE_SSH_ARGS = ("ansible_ssh_args", "ansible_ssh_common_args", "ansible_ssh_extra_args")
# an Ansible template, one word however many blanks it holds (`-i {{ key_dir }}/gpu.pem`)
_TEMPLATE = lazy_re(r"\{\{.*?\}\}|\{%.*?%\}", re.S)

# ssh(1) options that take a value, those that take none (its getopt string), and the keyword
# of those read here
_VALUE_FLAGS = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
_PLAIN_FLAGS = frozenset("12346afgknqstvxACGKMNTVXYy")
_FLAG_KEYWORD = {"p": "port", "l": "user", "i": "identityfile", "J": "proxyjump"}
# what ssh would be told of host keys that gpuonboard does not follow (it checks them against
# its own known_hosts and pins, and records a new one only with --trust-new-hosts)
HOST_KEY_KEYS = frozenset({"stricthostkeychecking", "userknownhostsfile"})
# the keywords read (where and as whom ssh connects: as of the SSH config, sshresolve's), and
# the host key ones; identity and certificate files accumulate
READ = CONNECTION_KEYS | HOST_KEY_KEYS
LAX_CHECKING = frozenset({"no", "off", "false", "accept-new"})
LISTS = LIST_KEYS


@dataclass(frozen=True)
class SSHArgs:
    """What ssh arguments set: each keyword of READ with its value (the first given; a list of
    every one given for identity and certificate files), and the words that set it."""

    values: dict[str, str | list[str]] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)  # keyword -> as written (`-p 2222`)
    # keyword -> where it was written (`file, line N`) and by what (`ansible_ssh_common_args of
    # host 'gpu1'`)
    source: dict[str, tuple[str, str]] = field(default_factory=dict)
    # every value given for each keyword, not only the first (identity and certificate files
    # accumulate; of the others ssh takes the first): (value, as written, where and by what)
    each: dict[str, list[tuple[str, str, tuple[str, str]]]] = field(default_factory=dict)
    # what ssh or Ansible would refuse: (as written, where and by what, why), in order
    problems: list[tuple[str, tuple[str, str], str]] = field(default_factory=list)

    def first(self, key: str) -> str | None:
        """The value of `key` (the first file of a list), or None."""
        value = self.values.get(key)
        if isinstance(value, list):
            return value[0] if value else None
        return value

    def first_of(self, key: str, skip: tuple[str, ...] = ()) -> tuple[str, tuple[str, str]] | None:
        """The first value of `key` (value, where and by what), leaving out those written by
        a source ending in one of `skip` (args below a vendor profile); None."""
        for value, _, source in self.each.get(key, ()):
            if not (skip and source[1].endswith(skip)) and (key not in LISTS or value.lower() != "none"):
                return value, source
        return None

    def before_inventory(self, key: str) -> bool:
        """Whether `key` was set by `ansible_ssh_args`, which ssh gets before Ansible's own
        `-o Port=`, `-o IdentityFile=`, `-o User=` (so it beats ansible_port and the rest)."""
        return self.source.get(key, ("", ""))[1].startswith(f"{ANSIBLE_SSH_ARGS[0]} ")

    def key_files(self, before: bool) -> list[tuple[str, str, tuple[str, str]]]:
        """The identity files of `ansible_ssh_args` (`before`: ssh gets them before the
        inventory's key file), else those of the common and extra args: (path as ssh opens it,
        as written, where and by what)."""
        return [
            (local_path(f), written, src)
            for f, written, src in self.each.get("identityfile", ())
            if f.lower() != "none" and src[1].startswith(f"{ANSIBLE_SSH_ARGS[0]} ") == before
        ]

    def extra_certificates(self, extras: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        """The certificate files these args give, before the SSH config's (in `extras`)."""
        out: dict[str, tuple[str, ...]] = {}
        certs = [local_path(f) for f in self.values.get("certificatefile", ())]
        if certs:
            out["certificate_files"] = tuple(dict.fromkeys([*certs, *extras.get("certificate_files", ())]))
        return out


def _words(
    texts: Iterable[tuple[str, tuple[str, str]]], out: SSHArgs
) -> Iterator[tuple[str, tuple[str, str]]]:
    """The words of each (text, its source) as Ansible gives them to ssh (split as a shell
    does, each stripped, an empty one dropped), each template one word marked `\\0t\\0`; a
    text that does not split (a quote not closed) is a problem in `out`: Ansible refuses it."""
    for text, source in texts:
        marked = _TEMPLATE.sub(lambda m: "\0t\0", text)
        try:
            words = shlex.split(marked)
        except ValueError:
            why = "which does not split into words (a quote is not closed), and Ansible refuses it; close it"
            out.problems.append((text if len(text) <= 80 else f"{text[:77]}...", source, why))
            continue
        for word in words:
            if word.strip():
                yield word.strip(), source


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


_TEMPLATE_WORD = "an Ansible template, which Ansible renders only when it connects; write the args themselves"
_NO_OPTION = (
    "a word that is no option: ssh would dial it as the host (and run the address as a command); remove it"
)


def parse_ssh_args(texts: Iterable[str | tuple[str, tuple[str, str]]]) -> SSHArgs:
    """The options of READ that the ssh argument `texts` set, in order (first value wins);
    each text may come with its source (`file, line N: its ansible_ssh_common_args`)."""
    out = SSHArgs()
    words = _words(((t, ("", "")) if isinstance(t, str) else t for t in texts), out)
    for word, source in words:
        if word == "--":
            break
        if not word.startswith("-") or word == "-":  # (ssh's destination; Ansible's, a command)
            out.problems.append((word, source, _TEMPLATE_WORD if "\0" in word else _NO_OPTION))
            return out
        for i, letter in enumerate(word[1:], 2):
            if letter not in _VALUE_FLAGS:
                if letter not in _PLAIN_FLAGS:  # (-q, -A, -C ...: no value)
                    out.problems.append((word, source, f"and ssh knows no option -{letter}; remove it"))
                continue
            value = word[i:]
            if not value:
                value, _ = next(words, ("", source))
                if not value or value.startswith("-"):  # (`-l ""`: Ansible drops the empty word)
                    why = f"whose -{letter} has no value (ssh would take the next word for it); write it"
                    out.problems.append((f"-{letter} {value}".strip(), source, why))
                    return out
            _flag(out, letter, value, source)
            break
    return out


def _flag(out: SSHArgs, letter: str, value: str, source: tuple[str, str]) -> None:
    """Record what `-LETTER VALUE` sets (a problem where ssh refuses it)."""
    if letter == "o":
        found = _option(value)
        if found is None:
            why = "with no value after the keyword, which ssh refuses; write Keyword=Value"
            out.problems.append((f"-o {value}", source, why))
        else:
            _set(out, found[0], found[1], f"-o {value}", source)
    elif letter == "J" and {"proxyjump", "proxycommand"} & set(out.values):
        why = (
            "after a ProxyCommand, which ssh refuses (`Cannot specify -J with ProxyCommand`); keep one"
            if "proxyjump" not in out.values
            else "beside another jump, which ssh refuses (one -J only); write the hops comma-separated"
        )
        out.problems.append((f"-J {value}", source, why))
    elif letter in _FLAG_KEYWORD:
        _set(out, _FLAG_KEYWORD[letter], value, f"-{letter} {value}", source)


def _set(out: SSHArgs, keyword: str, value: str, written: str, source: tuple[str, str]) -> None:
    """Record `keyword` unless an earlier argument set it (files accumulate)."""
    if keyword not in READ:
        return
    if keyword in LISTS:
        files = out.values.setdefault(keyword, [])
        assert isinstance(files, list)
        if value.lower() != "none":
            files.append(value)
        out.each.setdefault(keyword, []).append((value, written, source))
        out.written.setdefault(keyword, written)
        out.source.setdefault(keyword, source)
        return
    if keyword == "proxyjump" and "proxycommand" in out.values:
        return  # (the first of the two wins, as in OpenSSH)
    if keyword == "proxycommand" and str(out.values.get("proxyjump", "none")).lower() != "none":
        return  # (but a ProxyCommand after `ProxyJump none` still counts: `ssh -G` shows it)
    if keyword == "port" and (number := ssh_port(value)) is not None:
        value = str(number)  # (`-p ssh`, `-p +2222`: ssh reads them as ports 22 and 2222)
    if keyword not in ("proxyjump", "proxycommand"):  # (the way: `route` reads the first alone)
        out.each.setdefault(keyword, []).append((value, written, source))
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
                # (in an Ansible host, merged: the group or host that set it, or the config)
                who = getattr(given, "key_layers", {}).get(key, (label,))[0]
                texts[key] = (given[key], (where(path, given, key), f"{key} of {who}"))
    args = parse_ssh_args(texts[k] for k in ANSIBLE_SSH_ARGS if k in texts)
    for written, (at, label), problem in args.problems[:1]:
        shown = written.replace("\0t\0", "{{...}}")
        raise InventoryError(f"{at}: host {name!r} gets `{shown}` from {whose(name, label)}, {problem}.")
    for keyword in [k for k in args.values if k not in HOST_KEY_KEYS]:  # (in the order written)
        _check(name, args, keyword)
    return args


def _check(name: str, args: SSHArgs, keyword: str) -> None:
    """Refuse, in one sentence, a value of `keyword` in `args` that cannot be followed."""
    value = args.values[keyword]
    values = value if isinstance(value, list) else [value]
    text = values[0] if values else ""
    written, (at, label) = args.written[keyword], args.source[keyword]
    problem = None
    if any("\0" in v for v in values):
        problem = "an Ansible template, which Ansible renders only when it connects; write the value itself"
    elif keyword == "port" and ssh_port(text) is None:
        problem = "which is no port (1-65535 or a service name like ssh), and ssh refuses it; fix it"
    elif keyword == "hostname" and re.search(r"%[^h%]", text):
        problem = "whose token OpenSSH expands only when it connects; write the address itself"
    elif keyword in LISTS and any("%" in v for v in values):
        problem = "a path with a %-token, which gpuonboard does not expand there; write the path out"
    elif keyword == "user" and not text.strip():
        problem = "an empty user name; fix it"
    if problem is not None:
        shown = written.replace("\0t\0", "{{...}}")
        raise InventoryError(f"{at}: host {name!r} gets `{shown}` from {whose(name, label)}, {problem}.")


def whose(name: str, label: str) -> str:
    """`its ansible_ssh_common_args` where `label` is the host's own, else `the LABEL`
    (`the ansible_ssh_common_args of group 'gpus'`)."""
    own = f" of host {name!r}"
    return f"its {label.removesuffix(own)}" if label.endswith(own) else f"the {label}"


def ssh_port(text: str) -> int | None:
    """The port ssh reads `text` as (its a2port: a decimal number after blanks and a `+`, else
    a TCP service name of this machine, like `ssh`), or None where ssh refuses it."""
    if found := re.fullmatch(r"[ \t\n\v\f\r]*\+?(\d+)", text):
        number = int(found.group(1))
    else:
        try:
            number = socket.getservbyname(text, "tcp") if text and "\0" not in text else 0
        except OSError:
            number = 0
    return number if 0 < number < 65536 else None


def route(args: SSHArgs, config: Mapping[str, Any]) -> tuple[str, str] | None:
    """The way ssh takes to the host where its args name one (`-J`, `-o ProxyJump=`, `-o
    ProxyCommand=`, the first of them winning): ("jump", HOPS), ("proxy_command", COMMAND) or
    ("direct", ""). The SSH config's ProxyCommand (in `config`) still applies after `ProxyJump
    none`, as `ssh -G` shows; None where the args name neither."""
    jump, command = args.values.get("proxyjump"), args.values.get("proxycommand")
    if jump is None and command is None:
        return None
    if command is None and isinstance(config.get("proxycommand"), str):
        command = config["proxycommand"]  # (used only after `ProxyJump none`)
    if isinstance(jump, str) and jump.strip().lower() != "none":
        return "jump", jump
    if isinstance(command, str) and command.strip().lower() != "none":
        try:
            return "jump", jump_of_proxy_command(command)
        except ValueError:
            return "proxy_command", command
    return "direct", ""


def local_path(path: str) -> str:
    """A file named in ssh's arguments as ssh opens it: `~` expanded, a relative path from the
    directory it runs in (where Ansible runs)."""
    return os.path.abspath(os.path.expanduser(path))


def jump_of_proxy_command(command: str) -> str:
    """`ssh [-q] [-p P] [-l U] -W %h:%p [U@]BASTION` -> `U@BASTION:P` (what ProxyJump means)."""
    refuse = (
        f"has ProxyCommand {command!r}, which gpuonboard cannot follow (only `ssh -W %h:%p"
        " [user@]bastion`); write the bastion as ProxyJump (-J user@bastion:port) or give the host"
        " a 'jump:'"
    )
    try:
        words = shlex.split(command)
    except ValueError:
        raise ValueError(refuse) from None
    if not words or words[0].rsplit("/", 1)[-1] != "ssh":
        raise ValueError(refuse)
    opts: dict[str, str] = {}
    dest: list[str] = []
    i = 1
    while i < len(words):
        w = words[i]
        if w.startswith("-") and len(w) > 1:  # ssh reads options after the destination too
            flag = w[1]
            if flag in _VALUE_FLAGS:
                value = w[2:] or (words[i + 1] if i + 1 < len(words) else "")
                i += 1 if w[2:] else 2
                if flag == "o" and re.match(r"^(port|user)[= ]", value, re.I):
                    name, _, v = re.split(r"([= ])", value, maxsplit=1)
                    opts["p" if name.lower() == "port" else "l"] = v.strip()
                else:
                    opts[flag] = value
                continue
            i += 1  # flags without a value (-q, -A, -T, -4 ...)
            continue
        dest.append(w)
        i += 1
    if opts.get("W") not in ("%h:%p", "[%h]:%p") or len(dest) != 1 or set(opts) - {"W", "p", "l"}:
        # (a bastion's own -i key, -F file or other -o option: only the command itself says it)
        raise ValueError(refuse)
    target = dest[0]
    if "l" in opts and "@" not in target:
        target = f"{opts['l']}@{target}"
    if "p" in opts:
        target = f"{target}:{opts['p']}"
    return target
