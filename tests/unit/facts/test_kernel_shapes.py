"""A kernel log saved in its readers' other shapes (facts/kernel_shapes.py) is judged as the same
log printed by dmesg: journalctl -o json / json-seq / json-pretty / export / verbose, `dmesg -r`,
a syslog without the space after `kernel:`. Each test builds the shape from a real capture by
the transformation its docstring names (no public NVIDIA capture of that shape was found)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.kernel_shapes import plain_kernel_text

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
# a real 8-GPU HGX H100's /var/log/syslog (SOURCES.md: its GPU 0000:5d:00.0 fell off the bus,
# three lines of one driver message with one `[17257.355375]` stamp; no Xid)
HGX = (REAL / "dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt").read_text()
# a real journalctl of two boots (SOURCES.md: `-- Reboot --` between them; the second from its
# `Linux version` banner)
TWO_BOOTS = (REAL / "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt").read_text()
_SYSLOG = re.compile(
    r"^(\w{3} [ \d]\d [\d:]{8}) (\S+) ([^\s:\[]+)(?:\[(\d+)\])?: (?:\[\s*(\d+)\.(\d+)\] )?(.*)$"
)
BOOT_A, BOOT_B = "a" * 32, "b" * 32


def entries(text: str) -> list[dict[str, str]]:
    """The syslog / journalctl lines of `text` as journal entries: `_TRANSPORT` `kernel` for the
    kernel's lines (`stdout` for the others, with their program as SYSLOG_IDENTIFIER), MESSAGE
    the text after the program and the stamp, `_SOURCE_MONOTONIC_TIMESTAMP` the stamp in
    microseconds where the line has one, `_BOOT_ID` BOOT_A, BOOT_B after a `-- Reboot --` line;
    the kernel's lines with one stamp are one entry, their messages joined by a newline (one
    printk of several lines, as journald keeps it)."""
    out: list[dict[str, str]] = []
    boot = BOOT_A
    for line in text.splitlines():
        if line.strip() == "-- Reboot --":
            boot = BOOT_B
            continue
        m = _SYSLOG.match(line)
        assert m, line
        _, _, program, _, secs, micros, message = m.groups()
        entry = {"_BOOT_ID": boot, "_TRANSPORT": "kernel" if program == "kernel" else "stdout"}
        entry["SYSLOG_IDENTIFIER"] = program
        if secs is not None:
            entry["_SOURCE_MONOTONIC_TIMESTAMP"] = str(int(secs) * 1_000_000 + int(micros))
        last = out[-1] if out else {}
        if (
            secs is not None
            and last.get("_SOURCE_MONOTONIC_TIMESTAMP") == entry["_SOURCE_MONOTONIC_TIMESTAMP"]
        ):
            last["MESSAGE"] += "\n" + message
            continue
        out.append({**entry, "MESSAGE": message})
    return out


def as_json(text: str) -> str:
    """journalctl -o json: one entry a line."""
    return "".join(json.dumps(e) + "\n" for e in entries(text))


def as_export(text: str) -> str:
    """journalctl -o export: each entry's fields as KEY=value lines (a __CURSOR first), a blank
    line after it (a MESSAGE of several lines is the export format's binary field: joined here
    by spaces instead, as no text field holds a newline)."""
    out = []
    for i, e in enumerate(entries(text)):
        fields = {"__CURSOR": f"s=0;i={i}", **e, "MESSAGE": e["MESSAGE"].replace("\n", " ")}
        out.append("".join(f"{k}={v}\n" for k, v in fields.items()) + "\n")
    return "".join(out)


def test_hgx_fallen_off_bus_as_journal_json_fails_gpu_xid(tmp_path: Path) -> None:
    """The HGX syslog as `journalctl -o json` (entries() of it; saved as `kernel.json`): before,
    not a recognised command output (the file refused); now the entry reads as dmesg prints it
    and the GPU at 0000:5d:00.0 fails."""
    got = verdicts(tmp_path, "kernel.json", as_json(HGX))
    assert got["gpu_xid"][0] == "fail", got["gpu_xid"]
    assert "0000:5d:00.0" in got["gpu_xid"][1] and "fallen off the bus" in got["gpu_xid"][1]


@pytest.mark.parametrize("shape", ["json-seq", "json-sse", "json-pretty"])
def test_hgx_fallen_off_bus_in_journal_json_variants(shape: str) -> None:
    """The same entries in journalctl's other JSON shapes (-o json-seq: RS before each entry;
    json-sse: `data: ` before it and a blank line after; json-pretty: indented over lines): the
    same fault, of the same GPU, as the plain syslog (the parser found it before too, reading the
    JSON text's `NVRM:` words: a guard that the shapes' reading keeps it)."""
    items = entries(HGX)
    text = {
        "json-seq": "".join("\x1e" + json.dumps(e) + "\n" for e in items),
        "json-sse": "".join("data: " + json.dumps(e) + "\n\n" for e in items),
        "json-pretty": "".join(json.dumps(e, indent=8) + "\n" for e in items),
    }[shape]
    faults = [(e.fault, e.pci) for e in parse_kernel_log(text).nvrm_faults()]
    assert ("fallen_off_bus", "0000:5d:00.0") in faults
    assert faults == [(e.fault, e.pci) for e in parse_kernel_log(HGX).nvrm_faults()]


def test_hgx_fallen_off_bus_as_journal_export_fails_gpu_xid(tmp_path: Path) -> None:
    """The HGX syslog as `journalctl -o export` (as_export; saved as `kernel.export`): before, not
    a recognised command output (the file refused); now the GPU fallen off the bus fails."""
    got = verdicts(tmp_path, "kernel.export", as_export(HGX))
    assert got["gpu_xid"][0] == "fail", got["gpu_xid"]
    assert "0000:5d:00.0" in got["gpu_xid"][1]


def test_hgx_fallen_off_bus_as_dmesg_raw_and_syslog_without_space(tmp_path: Path) -> None:
    """The HGX syslog's stamps and messages as `dmesg -r` prints them (`<3>` before each line's
    `[17257.355375] ...`, the syslog prefix removed), and the syslog with `kernel:[` (its space
    after `kernel:` removed, as rsyslog templates without it write): each is a kernel log, the
    GPU fallen off the bus fails. Before, both were not a recognised command output."""
    raw = re.sub(r"(?m)^.*? kernel: ", "<3>", HGX)
    tight = HGX.replace("kernel: [", "kernel:[")
    for name, text in (("raw.txt", raw), ("tight.txt", tight)):
        got = verdicts(tmp_path, name, text)
        assert got["gpu_xid"][0] == "fail", (name, got["gpu_xid"])
        assert "0000:5d:00.0" in got["gpu_xid"][1]


def _delta_stamps(text: str, show_both: bool) -> str:
    """The HGX syslog's kernel lines as dmesg prints them (prefix up to `kernel: ` removed) with
    each `[17257.355375]` stamp as `dmesg --time-format=delta` prints it, the time since the line
    before (`[<    0.047840>]`, the first line's `[<17256.647980>]`), or as `dmesg -d` does, both
    (`[17257.355375 <    0.047840>]`)."""
    before = [0.0]

    def stamp(m: re.Match[str]) -> str:
        at = float(m.group(1))
        delta, before[0] = at - before[0], at
        return f"[{m.group(1)} <{delta:12.6f}>]" if show_both else f"[<{delta:12.6f}>]"

    return re.sub(r"(?m)^\[\s*(\d+\.\d+)\]", stamp, re.sub(r"(?m)^.*? kernel: ", "", text))


@pytest.mark.parametrize("show_both", [False, True], ids=["time-format-delta", "show-delta"])
def test_hgx_fallen_off_bus_with_delta_stamps_fails_gpu_xid(tmp_path: Path, show_both: bool) -> None:
    """_delta_stamps of the HGX syslog (saved as `kernel.txt`): before, its stamps were no kernel
    log's (`not a recognised command output`); now the GPU fallen off the bus fails."""
    got = verdicts(tmp_path, "kernel.txt", _delta_stamps(HGX, show_both))
    assert got["gpu_xid"][0] == "fail", got["gpu_xid"]
    assert "0000:5d:00.0" in got["gpu_xid"][1]


def test_two_boots_as_journal_json_keep_their_boundary() -> None:
    """The two-boot journal as `journalctl -o json` (entries(): BOOT_A, then BOOT_B after its
    `-- Reboot --`; the other programs' lines as `stdout` entries): the other programs' entries
    are left out, the new `_BOOT_ID` is journalctl's separator, the log spans two boots and its
    last boot starts at the kernel's banner (it reaches back to boot)."""
    plain = plain_kernel_text(as_json(TWO_BOOTS))
    assert f"-- Boot {BOOT_B} --" in plain.splitlines()
    assert "PackageKit" not in plain and "CRON" not in plain
    log = parse_kernel_log(as_json(TWO_BOOTS))
    assert log.boots == 2 and log.covers_boot is True


def test_journal_json_cut_inside_an_xid_entry_is_no_pass(tmp_path: Path) -> None:
    """The HGX journal as `-o json` with a real Xid line of that driver generation appended as one
    more kernel entry (`NVRM: Xid (PCI:0000:5d:00): 79, pid=..., GPU has fallen off the bus.`
    from the nvswitch capture dmesg__xid-79-sxid-20034__nvswitch.txt, its address made
    0000:5d:00), then the text cut inside that entry's MESSAGE after `79`: the entry is read as
    far as it goes and marked cut, never dropped."""
    xid = (REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt").read_text().splitlines()[2]
    message = xid.split("] ", 1)[1].replace("0000:91:00", "0000:5d:00")
    text = as_json(HGX) + json.dumps({"_TRANSPORT": "kernel", "MESSAGE": message})
    cut = text[: text.rindex("79, ") + 2]
    log = parse_kernel_log(cut)
    assert [e.kind for e in log.events][-1] in ("xid_unread", "cut"), log.events[-1]
    assert log.events[-1].cut is not None


def test_plain_logs_are_left_as_they_are() -> None:
    """A log in dmesg's, syslog's and journalctl's own text shapes is not changed."""
    for name in (
        "dmesg__xid-79-sxid-20034__nvswitch.txt",
        "dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt",
        "dmesg-decode-iso__xid-13-43__plus-oom.txt",
    ):
        text = (REAL / name).read_text()
        assert plain_kernel_text(text) == text, name


def test_a_journal_of_other_programs_only_is_no_kernel_log(tmp_path: Path) -> None:
    """The pop-os#3363 syslog's 6 gdm-x-session lines, then a sudo line of the same box whose
    COMMAND quotes `NVRM: Xid (PCI:0000:01:00): 48, DBE` (as tests/unit/api/
    test_offline_syslog_programs.py builds it), as `journalctl -o json` entries (entries():
    `_TRANSPORT` `stdout`, no kernel entry; saved as `journal.json`): it was refused as "not a
    recognised command output", then (reading journal JSON, its other programs' entries left out)
    passed "no Xid in the kernel log" on a journal without one kernel line; it is unverified,
    saying why."""
    name = "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel__last-line-cut"
    pop = (REAL / f"{name}__pop-os-3363.txt").read_text()
    sudo = (
        "Sep 23 18:37:04 xxx sudo[40301]:   ubuntu : TTY=pts/0 ; USER=root ;"
        " COMMAND=/usr/bin/grep 'NVRM: Xid (PCI:0000:01:00): 48, DBE' /var/log/kern.log"
    )
    text = as_json("\n".join([*pop.splitlines()[5:11], sudo]) + "\n")
    assert '"_TRANSPORT": "kernel"' not in text
    verdict, actual = verdicts(tmp_path, "journal.json", text)["gpu_xid"]
    assert verdict == "unverified", actual
    assert "all of other programs than the kernel" in actual, actual


# the HGX syslog without its fault's lines (those of 0000:5d:00.0, its probe and the fall): a
# kernel log with no Xid, whose whole reading passes gpu_xid
# (the fallen GPU's message left out whole: its middle line, `NVRM: (PCI ID: 10de:2330) installed in
# this system has`, left alone starts inside that message, a sign of lines left out (facts/
# kernel_headless.py, round 39); another driver's line stands in its place, as a whole log has them)
HGX_CLEAN = "".join(
    line + "\n" for line in HGX.splitlines() if not re.search(r"5d:00|probe|fallen", line)
).replace("NVRM: (PCI ID: 10de:2330) installed in this system has", "ipmi_si IPI0001:00: IPMI handler")
PERSISTENCED = {
    "_TRANSPORT": "stdout",
    "SYSLOG_IDENTIFIER": "nvidia-persistenced",
    "MESSAGE": "Started NVIDIA Persistence Daemon",
}


def _cut_shapes() -> dict[str, tuple[str, str]]:
    """(file name, text) of the clean HGX journal in each shape, cut where no kernel line is."""
    items = entries(HGX_CLEAN)
    other_json = json.dumps(PERSISTENCED)
    other_export = "__CURSOR=s=0;i=99\n" + "".join(f"{k}={v}\n" for k, v in PERSISTENCED.items())
    return {
        "json, cut in another program's MESSAGE": (
            "kernel.json",
            as_json(HGX_CLEAN) + other_json[: other_json.index("Started") + 7],
        ),
        "export, cut in another program's MESSAGE": (
            "kernel.export",
            as_export(HGX_CLEAN) + other_export[: other_export.index("Started") + 7],
        ),
        "export, cut in a new entry's __CURSOR": ("kernel.export", as_export(HGX_CLEAN) + "__CUR"),
        "json-seq, cut after a record separator": (
            "kernel.json",
            "".join("\x1e" + json.dumps(e) + "\n" for e in items) + "\x1e",
        ),
        "json-sse, cut after `data: `": (
            "kernel.json",
            "".join("data: " + json.dumps(e) + "\n\n" for e in items) + "data: ",
        ),
    }


@pytest.mark.parametrize("shape", list(_cut_shapes()))
def test_a_journal_cut_outside_a_kernel_entry_is_no_whole_log(tmp_path: Path, shape: str) -> None:
    """The HGX syslog without its fault's lines (HGX_CLEAN) as `journalctl -o json` / `-o export`
    (no -k) with an nvidia-persistenced entry after it cut inside its MESSAGE, as `-o export` cut
    inside the `__CURSOR` key of a next entry, and as json-seq / json-sse cut right after the
    record separator / `data: ` of a next entry: each passed "no Xid in the kernel log", read as
    whole (the cut entry left out as another program's, or not seen); the cut is kept: the log
    is read as cut short, never a pass."""
    name, text = _cut_shapes()[shape]
    verdict, actual = verdicts(tmp_path, name, text)["gpu_xid"]
    assert verdict == "unverified", actual
    assert [e.cut is not None for e in parse_kernel_log(text).events][-1:] == [True]


@pytest.mark.parametrize("shape", ["json", "export", "json-seq", "json-sse"])
def test_a_whole_clean_journal_passes_gpu_xid(tmp_path: Path, shape: str) -> None:
    """HGX_CLEAN whole in each shape, an nvidia-persistenced entry after it: no cut is read into
    it, and gpu_xid passes (a guard of the cut marks above)."""
    items = [*entries(HGX_CLEAN), PERSISTENCED]
    text = {
        "json": "".join(json.dumps(e) + "\n" for e in items),
        "export": as_export(HGX_CLEAN),
        "json-seq": "".join("\x1e" + json.dumps(e) + "\n" for e in items),
        "json-sse": "".join("data: " + json.dumps(e) + "\n\n" for e in items),
    }[shape]
    assert all(e.cut is None for e in parse_kernel_log(text).events)
    name = "kernel.export" if shape == "export" else "kernel.json"
    assert verdicts(tmp_path, name, text)["gpu_xid"][0] == "pass"
