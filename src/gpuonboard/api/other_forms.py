"""Forms of a command this tool reads in another form (`lscpu -e`, `lscpu --caches`, some lines of
an lscpu), told by their first line: the one sentence naming what the output is and what to save,
given for a file saved alone (api/saved_forms.py other_form) and for a session's part whatever
command it sits under, a bare prompt's or none (api/transcript.py: measure39d 10)."""

from __future__ import annotations

from gpuonboard.facts.probe import first_line
from gpuonboard.once import lazy_re

# `lscpu -e`'s column headers (util-linux lscpu-cpus.c): those no other table's header holds,
# then any (`CPU`, `NODE`, ... beside one of the first)
_LSCPU_OWN_COLUMN = r"MODELNAME|MAXMHZ|MINMHZ|SCALMHZ%|POLARIZATION|CONFIGURED|L1d:L1i:L2(?::L3)?"
_LSCPU_COLUMN = rf"CPU|CORE|SOCKET|CLUSTER|NODE|BOOK|DRAWER|ADDRESS|ONLINE|MHZ|{_LSCPU_OWN_COLUMN}"

# forms of a command this tool reads in another form: (its first line, what it is, what to save)
_OTHER_FORMS = (
    (
        # (`lscpu --caches` / `-C`: one row a cache, `NAME ONE-SIZE ALL-SIZE WAYS TYPE LEVEL ...`: m37b 24)
        lazy_re(r"^\s*NAME\s+ONE-SIZE\s+ALL-SIZE\b"),
        "`lscpu --caches` (lscpu's table of the CPU caches, which holds no CPU count)",
        "plain `lscpu`",
    ),
    (
        # (also the columns a user chose, `lscpu --extended=MODELNAME`'s lone `MODELNAME`: m39d 12)
        lazy_re(
            r"^\s*CPU\s+(?:NODE\s+)?SOCKET\s+CORE\b|^# The following is the parsable format"
            rf"|^\s*(?:(?:{_LSCPU_COLUMN})\s+)*(?:{_LSCPU_OWN_COLUMN})(?:\s+(?:{_LSCPU_COLUMN}))*\s*$"
        ),
        "`lscpu -e` / `lscpu -p` (one line per CPU)",
        "plain `lscpu`",
    ),
    (
        # (any field after lscpu's first, Architecture: `lscpu | grep CPU` from `CPU op-mode(s):`)
        lazy_re(
            r"^\s*(?:CPU\(s\)|On-line CPU\(s\) list|Off-line CPU\(s\) list|Model name|Socket\(s\)"
            r"|Core\(s\) per (?:socket|cluster)|Thread\(s\) per core|CPU op-mode\(s\)|Byte Order"
            r"|Address sizes|Vendor ID|CPU family|NUMA node(?:\(s\)|\d+ CPU\(s\))|BogoMIPS"
            r"|CPU (?:max |min )?MHz|L[1-3][di]? cache|Hypervisor vendor|Virtuali[sz]ation(?: type)?"
            # (util-linux 2.38+'s section heads: `NUMA:` above its node lines, a GH200's alone)
            r"|NUMA|Caches \(sum of all\)|Vulnerabilities|Vulnerability [A-Za-z ]+):"
        ),
        "an `lscpu` without its first lines (a `grep` of it, or a paste of some lines)",
        "the whole `lscpu`",
    ),
)


def named_form(text: str) -> str | None:
    """The sentence for an output of another form of a command read here (_OTHER_FORMS), by its
    first line; None otherwise."""
    first = first_line(text)
    for pattern, what, save in _OTHER_FORMS:
        if pattern.search(first):
            return f"{what}, which this tool does not read: save {save} of the box."
    return None
