"""ONE batched probe script per host: every read-only command in one remote execution.

The script runs the probes concurrently on the host (a real `nvidia-smi -q -x` on 8 GPUs
takes a second or two), then prints each probe's stdout, exit code and stderr between
lines that start with a random per-run boundary token, so no output can forge a section.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpuonboard import shell

MAX_STDERR = 4096


@dataclass(frozen=True)
class Probe:
    """A named read-only command whose raw output becomes a fact.

    `slow` probes (a real `nvidia-smi -q -x` takes seconds) run in the background while
    the quick ones run inline; quick probes cost one process each and no temp file.
    """

    name: str
    command: str  # built with gpuonboard.shell (a constant or shell.join(...))
    slow: bool = False
    # its output is the playbook's own data (a template's value: a token `cat`, a password),
    # not evidence about the box: reports keep its sha256, never its text (Facts.private)
    private: bool = False


@dataclass(frozen=True)
class ProbeOutput:
    """Raw result of one probe; exit code 127 means the tool is absent."""

    stdout: str
    stderr: str
    exit_code: int
    # why the output shows only part of the box, "" when whole: a saved output whose copied
    # command narrowed it (offline: `df -h /workspace`, `nvidia-smi -i 0`, `... | grep nvme`)
    partial: str = ""
    # offline: the copied command was `nvidia-smi topo -mp` (`--matrix_pci`), whose matrix shows the
    # PCIe paths only, never NVLink (`partial` says so in words)
    pcie_paths_only: bool = False
    # the command's own non-zero exit code where its output is read as answered all the same
    # (exit_code is then 0): df's 1 over the filesystems it could read, nvidia-smi's 14 (a
    # corrupted infoROM, a warning) beside a whole answer; None where exit_code is its own
    exited: int | None = None
    # offline: the copied command read the kernel log of a boot before the one the box runs now
    # (`journalctl -k -b -1`: api/kernel_command.py); its faults are that boot's (`partial` says so)
    earlier_boot: bool = False
    # offline: the copied command ran a host tool inside a container (`docker exec app free -h`,
    # `lxc exec c1 -- lscpu`): that container's view, not the box's, said in words ("" on the box)
    in_container: str = ""
    # offline: the kernel logs of earlier boots of this box given beside this one (`journalctl -k
    # -b -1` and `dmesg`: api/unread.joined_boots), each read apart, its faults history
    history: tuple[str, ...] = ()
    # offline: the same probe's outputs in other formats given beside this one (an RDMA port
    # listing of `ibstat` beside `ibv_devinfo`: api/unread.joined_formats), each read and merged
    beside: tuple[ProbeOutput, ...] = ()
    # offline: where the copied command ran nvidia-smi other than on the box as its login (`docker
    # run ... nvidia-smi`, `sudo -u nobody nvidia-smi -q`), said in words ("" on the box): a
    # failure it printed is that call's, never the box's (facts/gpu_failed.py)
    ran_elsewhere: str = ""
    # offline: the name of the saved file this output was read from ("" live), so that a sentence
    # about two outputs of one box (one failed, one listed GPUs) names the files the user gave
    saved_as: str = ""
    # offline: the copied command was `nvidia-smi topo -m` (`--matrix`, no `p`), whose matrix
    # prints NV# wherever NVLink joins two GPUs: a whole row without one is a GPU without NVLink
    nvlink_matrix: bool = False
    # offline: the copied command was `nvidia-smi nvlink -s` (or `-e`, `-c`) at the box's login with
    # no `-i`: its listing names every GPU nvidia-smi sees, a count as `-L` is (api/narrowed.py)
    nvlink_whole: bool = False
    # offline: the box's host name this output shows ("" where none): its copied prompt line's
    # host (`admini@5002544:~$`, not a container's), `uname -a`'s node name; what a `docker info`'s
    # daemon `Name:` is matched against (facts/docker_memory.py)
    host_name: str = ""

    @property
    def own_exit_code(self) -> int:
        """The exit code the command itself gave (what a run's saved raw output records)."""
        return self.exit_code if self.exited is None else self.exited

    @property
    def absent(self) -> bool:
        """True when the probed command does not exist on the host."""
        return self.exit_code == 127

    def failure(self, stdout: bool = True) -> str:
        """'exit 4: Insufficient Permissions': its exit code and the first line it printed (on
        stderr, else stdout; stderr only where stdout holds the rows read in part, df's), as a
        rule says a command that failed."""
        line = first_line(self.stderr + ("\n" + self.stdout if stdout else ""))
        return f"exit {self.exit_code}" + (f": {line[:120]}" if line else "")


def first_line(text: str) -> str:
    """The first line of `text` that is not blank, stripped ("" for none): what a tool's message
    says first (`df: /mnt/s3: Transport endpoint is not connected`)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def build_script(probes: Sequence[Probe], token: str) -> str:
    """The sh script: slow probes in the background, quick ones inline, all outputs framed.

    stdout carries `TOKEN begin NAME` / output / `TOKEN end NAME RC` blocks; stderr carries
    `TOKEN stderr NAME` / output blocks. Few processes: with 50 hosts on one 2-core box the
    per-probe forks dominate the cost, so no per-probe cat, head or $(...) is spawned.
    """
    tag = shell.quote(token)
    slow = [p for p in probes if p.slow]
    lines = ["export LC_ALL=C"]
    if slow:
        tmp = '"${TMPDIR:-/tmp}/.gpuonboard.$$.' + token[-8:] + '"'
        lines += [
            f'T={tmp}; mkdir -m 700 "$T" || exit 97',
            "trap 'rm -rf \"$T\"' EXIT",
            # a closed channel (SIGPIPE on our own printf), a hang-up or a kill: exit through
            # the EXIT trap, or the dir stays in the host's /tmp (dash runs no EXIT trap on
            # death by signal)
            "trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM",
            # stdout and stderr each pass through a `dd obs=16384`, which writes whole 16 KiB
            # blocks: sshd sends each as one SSH packet, where the probes' own small writes
            # (two framing lines per probe, each quick probe's output) were one packet each: an
            # 8-GPU host's ~200 KB arrived in ~90 packets, 34-36 with stdout's dd alone, now 9
            # (each packet costs the client ~0.1 ms of CPU to decrypt, queue and wake the
            # reader). Through pipes, not files: a host whose /tmp is full still answers every
            # probe. No dd: cat passes it on unbuffered. The fds are moved with `exec` inside
            # the pipeline's subshells (the body's stderr into the inner pipe, its stdout to fd
            # 3, the outer pipe), never by a redirection on a `{ }` group: dash and busybox keep
            # a group's saved fds open in every subshell a probe forks, so a probe's background
            # subshell held both pipes and the script waited for it.
            "{ exec 3>&1; { exec 2>&1 1>&3 3>&-",
        ]
        for i, probe in enumerate(slow):
            lines.append(
                # (off both pipes: a reader gone mid-output ends the script at once, not
                # when the slow probes end)
                f'( ( {probe.command} ) >"$T/{i}.o" 2>"$T/{i}.e" </dev/null; echo $? >"$T/{i}.c" )'
                " >/dev/null 2>&1 &"
            )

    # one printf closes a probe's block and opens the next one's (fewer writes, fewer
    # processes; with no slow probe, no temp files, each write is an SSH packet)
    pending_end: list[str] = []  # [format, args] of the previous probe's end line

    def frame(name: str, body: str, rc: str) -> None:
        q = shell.quote(name)
        fmt, args = pending_end or ["", ""]
        lines.append(
            f"printf '{fmt}%s begin %s\\n'{args} {tag} {q}; printf '\\n%s stderr %s\\n' {tag} {q} >&2"
        )
        lines.append(body)
        pending_end[:] = ["\\n%s end %s %s\\n", f" {tag} {q} {rc}"]

    for probe in probes:
        if not probe.slow:
            frame(probe.name, f"( {probe.command} ) </dev/null; rc=$?", '"$rc"')
    if slow:
        lines.append("wait")
        for i, probe in enumerate(slow):
            frame(probe.name, f'read rc <"$T/{i}.c"; cat "$T/{i}.o"; cat "$T/{i}.e" >&2', '"$rc"')
    if pending_end:
        lines.append(f"printf '{pending_end[0]}'{pending_end[1]}")
    lines.append(f"printf '\\n%s stderr %s\\n' {tag} {shell.quote(_END)} >&2")
    if slow:
        blocks = "dd obs=16384 2>/dev/null || cat"
        lines.append(f"}} | {{ exec >&2 3>&-; {blocks}; }}; }} | {{ {blocks}; }}")
    return "\n".join(lines) + "\n"


_END = "__end__"


def _lines(text: str) -> list[str]:
    """Split on \\n only (str.splitlines also splits on \\r, \\x0c, \\u2028 ...)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def new_token() -> str:
    """A boundary no probe output can contain by chance or by design."""
    return "@@gpuonboard-" + secrets.token_hex(12)


def split_output(stdout: str, stderr: str, token: str, names: Sequence[str]) -> dict[str, ProbeOutput]:
    """Cut the framed script output back into one ProbeOutput per probe name.

    Lines are split on \\n only; only the framing lines (those that start with the token) are
    looked at one by one: the text between them is cut out whole (an 8-GPU XML is ~4,000 lines)."""
    outs: dict[str, tuple[str, int]] = {}
    errs: dict[str, str] = {}
    prefix = token + " "
    current: str | None = None
    block: list[str] = []
    pos = 0
    for begin, end in _framing(stdout, prefix):
        if current is not None:
            block.append(stdout[pos:begin])
        pos = end
        kind, _, rest = stdout[begin + len(prefix) : end].strip().partition(" ")
        if kind == "begin":
            current, block = rest, []
        elif kind == "end" and current is not None:
            _, _, rc_text = rest.rpartition(" ")
            outs[current] = (_strip_one(block), int(rc_text) if rc_text.lstrip("-").isdecimal() else -1)
            current = None
    current = None
    pos = 0
    for begin, end in _framing(stderr, prefix + "stderr "):
        if current is not None:
            errs[current] = _strip_one([*block, stderr[pos:begin]])
        current, block, pos = stderr[begin + len(prefix) + 7 : end].strip(), [], end
    if current is not None:
        errs[current] = _strip_one([*block, stderr[pos:]])
    results: dict[str, ProbeOutput] = {}
    for name in names:
        if name in outs:
            text, code = outs[name]
            results[name] = ProbeOutput(text, errs.get(name, "")[:MAX_STDERR], code)
        else:
            results[name] = ProbeOutput("", "probe produced no output", -1)
    return results


def _framing(text: str, start: str) -> Iterator[tuple[int, int]]:
    """(begin, end) of each line of `text` (split on \\n only, its \\n included) that starts
    with `start`, found by str.find rather than line by line."""
    needle = "\n" + start
    line = 0 if text.startswith(start) else _past(text.find(needle))
    while line is not None:
        nl = text.find("\n", line)
        yield line, len(text) if nl < 0 else nl + 1
        line = None if nl < 0 else _past(text.find(needle, nl))


def _past(newline: int) -> int | None:
    """The line after the \\n at `newline`; None for none found (-1)."""
    return None if newline < 0 else newline + 1


def _strip_one(parts: list[str]) -> str:
    """Join, dropping the single newline the framing added after each block."""
    text = "".join(parts)
    return text[:-1] if text.endswith("\n") else text
