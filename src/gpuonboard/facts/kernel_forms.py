"""One kernel report printed in two forms in one saved text (facts/kernel_log.py): a grep of an
nvidia-bug-report.log reaches both its journal section and its dmesg section, so each of the
driver's lines is there twice, once a journal's (`6月 28 02:52:53 host kernel: NVRM: Xid
(PCI:0000:c2:00): 79, ...`) and once dmesg's (`[1590188.789226] NVRM: Xid (PCI:0000:c2:00): 79,
...`): one event, never two (measure37d 15, 16: "Xid 79 ... x2").

The rule: where a text's events are printed in both forms (a journal's or syslog's head with
`kernel:`, and dmesg's bare stamp), an event of dmesg's form with the same kind, code, PCI address
and words as one of the journal's form not yet paired (of the same boot) is that event again, and
is dropped (never one the text ends inside: its cut is said); each journal event pairs with
one dmesg event at most, so a fault the log shows three
times in one form and once in the other still counts three times."""

from __future__ import annotations

from collections import Counter

from gpuonboard.facts.kernel_event import KernelEvent
from gpuonboard.once import lazy_re

__all__ = ["once_per_report"]

# a journal's or syslog's head as the reader keeps it (`6月 28 02:52:53 jjf-Super-Server`, with
# `kernel:` or without), never dmesg's bracketed stamp
_JOURNAL_HEAD = lazy_re(r"^(?!\s*\[)[^\n]*\b\d\d:\d\d:\d\d\b")
_DMESG_HEAD = lazy_re(r"^\s*\[[^\]]+\]\s*$")


def _key(event: KernelEvent) -> tuple[str, int, str, str, bool]:
    return (event.kind, event.code, event.pci.lower(), " ".join(event.message.split()), event.earlier_boot)


def once_per_report(events: list[KernelEvent]) -> list[KernelEvent]:
    """`events` without the dmesg-form copies of journal-form events (the module's rule)."""
    journal = [e for e in events if _JOURNAL_HEAD.search(e.timestamp or "")]
    dmesg = {id(e) for e in events if _DMESG_HEAD.match(e.timestamp or "")}
    if not journal or not dmesg:
        return events
    unpaired = Counter(_key(e) for e in journal)
    out: list[KernelEvent] = []
    for e in events:
        # (a copy the text ends inside is kept: what was cut after it is not known, kernel_cut)
        if id(e) in dmesg and e.cut is None and unpaired[_key(e)] > 0:
            unpaired[_key(e)] -= 1
            continue
        out.append(e)
    return out
