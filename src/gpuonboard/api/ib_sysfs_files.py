"""A saved listing of the RDMA ports' sysfs files (offline): `grep . /sys/class/infiniband/*/ports/*/{state,
phys_state,rate,link_layer}` (`PATH:VALUE` lines) or `head` of them (`==> PATH <==` then the value),
read as the live probe's port listing (facts/infiniband.py `parse_ib_sysfs`): one tab-separated
line per port. The same files the probe reads, in the form a user saves them."""

from __future__ import annotations

import re

__all__ = ["ib_sysfs_ports"]

_PORT_FILE = r"/sys/class/infiniband/(?P<dev>[^/\s:]+)/ports/(?P<port>\d+)/(?P<file>[\w.-]+)"
_GREP = re.compile(rf"{_PORT_FILE}:(?P<value>.*)")
_HEAD = re.compile(rf"==> {_PORT_FILE} <==")
# grep's own word for a folder a glob matched (`ports/1/counters`): no file of a port
_GREP_NOTE = re.compile(r"grep: /sys/class/infiniband/\S+: Is a directory")
# the probe's fields, in its line's order after DEVICE and PORT
_FIELDS = ("state", "phys_state", "rate", "link_layer")


def _pairs(lines: list[str]) -> list[tuple[str, str, str, str]] | None:
    """(device, port, file, value) of each file listed, or None where a line is none of the
    listing's (another text)."""
    pairs: list[tuple[str, str, str, str]] = []
    if all(_GREP.fullmatch(line) or _GREP_NOTE.fullmatch(line) for line in lines):
        for line in lines:
            if m := _GREP.fullmatch(line):
                pairs.append((m["dev"], m["port"], m["file"], m["value"].strip()))
        return pairs
    if not _HEAD.fullmatch(lines[0]):
        return None
    head: re.Match[str] | None = None
    for line in lines:
        if m := _HEAD.fullmatch(line):
            head = m
        elif head is not None:
            pairs.append((head["dev"], head["port"], head["file"], line.strip()))
            head = None
        else:
            return None  # (a second line under one file's head: no sysfs file prints two)
    return pairs


def ib_sysfs_ports(text: str) -> tuple[str, str] | None:
    """A saved listing of `/sys/class/infiniband/*/ports/*/` files as the live probe's port
    lines (`DEV<TAB>PORT<TAB>state<TAB>phys_state<TAB>rate<TAB>link_layer`, a file not listed
    left empty, other files of a port skipped): (those lines, ""), or ("", why) where a port's
    `state` file is not among them (a port is never judged down, or up, by a file not read);
    None when the text is no such listing. A listing whose last line has no newline (cut short)
    ends on its last port's line cut short, so the probe's reader says the listing is not whole."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    pairs = _pairs(lines) if lines else None
    ports: dict[tuple[str, str], dict[str, str]] = {}
    for dev, port, name, value in pairs or []:
        if name in _FIELDS:
            ports.setdefault((dev, port), {})[name] = value
    if not ports:
        return None
    if stateless := [f"{dev} port {port}" for (dev, port), read in ports.items() if "state" not in read]:
        return "", (
            f"a listing of /sys/class/infiniband without the `state` file of {', '.join(stateless)}, so"
            " whether that port is up cannot be read: save `grep . /sys/class/infiniband/*/ports/*/"
            "{state,phys_state,rate,link_layer}` of the box."
        )
    rows = {key: "\t".join([*key, *(read.get(name, "") for name in _FIELDS)]) for key, read in ports.items()}
    if text.endswith("\n"):
        return "".join(f"{row}\n" for row in rows.values()), ""
    last = (pairs[-1][0], pairs[-1][1]) if pairs else None
    cut = rows.pop(last) if last in rows else None  # (the port its last line is of, moved last)
    body = "".join(f"{row}\n" for row in rows.values())
    return body + (cut.rsplit("\t", 1)[0] if cut is not None else ""), ""
