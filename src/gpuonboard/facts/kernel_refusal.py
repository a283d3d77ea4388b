"""A saved kernel log that holds only its reader's refusal: `dmesg` or `journalctl -k` run by a login
that may not read the kernel log (facts/kernel_log.py reads the logs themselves)."""

from __future__ import annotations

import re

# what a kernel log reader prints where the login may not read the log: util-linux's `dmesg: read
# kernel buffer failed: Operation not permitted` (busybox: `dmesg: klogctl: ...`), journalctl's
# `No journal files were opened due to insufficient permissions.`, its `No journal files were
# found.` (systemd's journal-util.c: no journal on the box) and its notice `Hint: You are
# currently not seeing messages from other users and the system.` (its indented lines after it,
# `-- No entries --` below)
_REFUSALS = (
    re.compile(r"^dmesg: .*(?:Operation not permitted|Permission denied)\s*$"),
    re.compile(r"^No journal files were opened due to insufficient permissions\.?\s*$"),
    re.compile(r"^Hint: You are currently not seeing messages from\b.*$"),
    # (a systemd before v246 prints it under `-q` too, and exits 0: no journal to read, no log)
    re.compile(r"^No journal files were found\.?\s*$"),
)
_REFUSAL_BESIDE = re.compile(r"^(?:\s+\S.*|-- No entries --\s*)$")
_REFUSAL_MAX_LINES = 8
# journalctl's answer where it has no line for what it was asked (`-- No entries --`), alone or
# under its `-- Logs begin at ... --` / `-- Journal begins at ... --` line: an empty kernel journal
# for that boot, as the live probe reads it (facts/extra_probes.py): never "no Xid"
_NO_ENTRIES = re.compile(r"^-- No entries --\s*$")
_JOURNAL_NOTE = re.compile(r"^-- (?:Logs begin|Journal begins) .* --\s*$")
NO_ENTRIES = (
    "journalctl printed only `-- No entries --`: it has no kernel line for this login or this"
    " boot (a login outside the `adm` / `systemd-journal` groups, a journal that keeps no kernel"
    " messages or not this boot's)"
)


def refusal(text: str) -> str | None:
    """Pure: where `text` is only a kernel log reader's refusal (_REFUSALS: a saved `dmesg` or
    `journalctl -k` of a login that may not read the log), its refusal lines joined with "; "
    (what the live probe's stderr says when every reader was refused), or journalctl's `-- No
    entries --` alone (NO_ENTRIES: as the live probe, a journal with no kernel line is no log);
    None for any other text, a log with lines of its own among them too."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > _REFUSAL_MAX_LINES:
        return None
    if any(_NO_ENTRIES.match(line) for line in lines) and all(
        _NO_ENTRIES.match(line) or _JOURNAL_NOTE.match(line) for line in lines
    ):
        return NO_ENTRIES
    said = [line.strip() for line in lines if any(p.match(line) for p in _REFUSALS)]
    if not said or not all(line.strip() in said or _REFUSAL_BESIDE.match(line) for line in lines):
        return None
    return "; ".join(said)
