"""The nvidia-smi outputs of one box that say nvidia-smi failed as a whole (it could not talk to
the driver, NVML would not start, it found no GPU) beside another that listed GPUs: two answers
of the box that cannot both be true at one time, so a disagreement, never a failure dropped.
Pure: no I/O.

A GPU named as unopenable ("Unable to determine the device handle for gpu ADDR: ...") is no
whole failure: that GPU is a fault of the set (gpu_unopened). A format's own refusal (a bare
"Insufficient Permissions" for one query, a provider's policy) is no whole failure either: the
driver answered the others (gpu_merge.Refusal, the driver rule's "failed" note).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from gpuonboard.facts import gpu_agree
from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.gpu_probes import GPU_SOURCES, LIST_PROBE
from gpuonboard.facts.gpu_unopened import unopened_gpus
from gpuonboard.facts.may_hold import folded, may_hold
from gpuonboard.facts.nvidia_smi import GpuReport
from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

# nvidia-smi's own sentences when it read no GPU at all, at a line's start: "NVIDIA-SMI has
# failed because it couldn't communicate with the NVIDIA driver ...", NVML's "Failed to
# initialize NVML: <reason>" (Driver/library version mismatch, Driver Not Loaded, Unknown
# Error ...), "No devices were found", and a device handle it could not get for a GPU it does
# not place (no PCI address: gpu_unopened places those that name one)
_WHOLE_FAILURE = lazy_re(
    r"^[\s|]*(?:NVIDIA-SMI has failed|Failed to initialize NVML\b|No devices were found"
    r"|Unable to determine the device handle)",
    re.IGNORECASE | re.MULTILINE,
)
# the words each _WHOLE_FAILURE sentence's match holds (facts/may_hold: a text without them is
# not searched; the anchored pattern tries each character of an 8-GPU `-q -x`, ~2.6 ms a host)
_WHOLE_FAILURE_WORDS = (
    ("nvidia-smi has failed",),
    ("failed to initialize nvml",),
    ("no devices were found",),
    ("unable to determine the device handle",),
)


def smis_own_failure(line: str) -> bool:
    """Whether the failure `line` (nvidia_smi_failure's) is nvidia-smi's own sentence, which it
    prints where it ran (in a container, a job step), not a container engine's hook's on the host
    (`nvidia-container-cli: initialization error: nvml error: ...`: NVML on the host failed)."""
    return _WHOLE_FAILURE.match(line) is not None


def failed_as_a_whole(text: str) -> bool:
    """Whether an nvidia-smi output says it failed as a whole (`Failed to initialize NVML: ...`,
    `No devices were found`, ...), naming no GPU it could not open."""
    return _WHOLE_FAILURE.search(text) is not None and not unopened_gpus([text])


def listed_before(text: str) -> str:
    """A clause ("; it listed GPU 0 (NVIDIA GeForce RTX 4090) before it failed: ...") where an
    output that ends failing as a whole listed GPUs above its failure (a container's log of
    `nvidia-smi -L` run in a loop: that line five times, then `Failed to initialize NVML: Unknown
    Error`); "" where it listed none. A call whose NVML did not start lists no GPU, so those lines
    are an earlier call's: the GPU was there and was lost later (nvidia-container-toolkit#381)."""
    failure = whole_failure(text)
    if failure is None:
        return ""
    listed = sorted(
        {(gpu.index, gpu.name) for gpu in parse_gpu_list(text[: failure.start()]).gpus if gpu.name}
    )
    if not listed:
        return ""
    gpus = ", ".join(f"GPU {index} ({name})" for index, name in listed)
    said = f"; it listed {gpus} before it failed: the container saw the GPU, then lost it"
    if "unknown error" in said_line(text, failure).lower():
        said += (
            ", as a container does when its host runs `systemctl daemon-reload` (a known NVIDIA"
            " Container Toolkit issue): only a restarted container gets it back"
        )
    return said


def said_line(text: str, said: re.Match[str]) -> str:
    """The whole line of `text` the match `said` starts in."""
    end = text.find("\n", said.end())
    return text[text.rfind("\n", 0, said.start()) + 1 : end if end >= 0 else len(text)]


# NVML refused to start for the login's rights ("Failed to initialize NVML: Insufficient
# Permissions", "No permission"): a refusal of that call, never the driver failing as a whole
_PERMISSION = lazy_re(r"Insufficient Permissions|\bNo permission\b|Permission denied", re.IGNORECASE)
# "No devices were found": nvidia-smi found no GPU at the index or id it was asked for
_NO_DEVICES = lazy_re(r"No devices were found", re.IGNORECASE)
# the GPU index a saved file's name says it asked for (`nvidia-smi-q-i8.txt`, `smi_id_3.log`)
_NAMED_INDEX = lazy_re(
    r"smi(?:[-_.][a-z]+)*?[-_.]-?(?:i|id)[-_=]?(\d+)(?=[-_.\s]|$)", re.IGNORECASE
)  # (after the command's name: `nvidia-smi-q-i8`, never a host's `node-id12_nvidia-smi`)


# a session's output, as offline names it: "session.txt line 5 (`nvidia-smi -q`)"
_SESSION_LINE = lazy_re(r"^(?P<file>.+) line (?P<line>\d+) \(")


def failed_outputs(
    raw: Mapping[str, ProbeOutput],
    parse: Callable[[str], GpuReport],
    listed: int = 0,
    notes: list[str] | None = None,
) -> list[tuple[str, str, str]]:
    """(who, its failure line, its file) for each nvidia-smi output that failed as a whole and
    read no GPU: who is its file offline ("nvidia-smi in nvidia-smi-wsl.txt"), its call live.
    `listed`: how many GPUs the box's own output listed. None of a call's own, each said in
    `notes`: one narrowed to some GPUs (`-i 8`, its file's name `nvidia-smi-q-i8.txt` on a box of
    8: no GPU 8 is a true answer), one run in a container or as another user, or NVML refused for
    the login's rights."""
    out = []
    for name, label in [(n, label) for n, label, _ in GPU_SOURCES] + [(LIST_PROBE, "list")]:
        got = raw.get(name)
        if got is None or got.absent:
            continue
        text = f"{got.stdout}\n{got.stderr}"
        said = whole_failure(text)
        if said is None or unopened_gpus([text]) or (name != LIST_PROBE and parse(got.stdout).gpus):
            continue
        line = " ".join((nvidia_smi_failure(got.stdout, got.stderr)[0] or said.group(0)).split())[:160]
        who = f"nvidia-smi in {got.saved_as}" if got.saved_as else gpu_agree.format_call(label)
        if why := _its_own(got, line, listed):
            if notes is not None:
                notes.append(f"{who} failed ({line}): {why}, not a failure of the box")
            continue
        out.append((who, line, got.saved_as))
    return out


def whole_failure(text: str) -> re.Match[str] | None:
    """_WHOLE_FAILURE.search(text), the same match, without the search where the text lacks
    the words of every sentence it matches (_WHOLE_FAILURE_WORDS)."""
    if not may_hold(folded(text), *_WHOLE_FAILURE_WORDS):
        return None
    return _WHOLE_FAILURE.search(text)


def _its_own(got: ProbeOutput, line: str, listed: int) -> str:
    """Why the failure `line` of `got` is that call's own, not the box's: a narrowed call's
    (got.partial), a container's or another user's (got.ran_elsewhere), NVML refused for the
    login's rights, or no GPU at an index the file's name asks for at or past the listed count;
    "" where it is the box's."""
    if got.partial or got.ran_elsewhere:
        return got.partial or got.ran_elsewhere
    if _PERMISSION.search(line):
        return "NVML refused the login's rights"
    index = _NAMED_INDEX.search(got.saved_as.rsplit("/", 1)[-1].rsplit(".", 1)[0])
    if index and _NO_DEVICES.search(line) and int(index.group(1)) >= listed > 0:
        return f"its file's name asks for GPU {index.group(1)}, of {listed} listed"
    return ""


def failure_clashes(
    failed: Sequence[tuple[str, str, str]],
    lister: tuple[str, str, int] | None,
    notes: list[str] | None = None,
) -> list[tuple[str, str]]:
    """The disagreement of each whole failure with the output that listed GPUs (`lister`: its
    format label, its file or "", its GPU count), as gpu_agree's clashes ("gpus", sentence). A
    failure earlier in the session that listed the GPUs later (a driver reloaded between them)
    is superseded: said in `notes`, no clash; one after the listing is the box now."""
    if lister is None:
        return []
    label, saved_as, count = lister
    listed = gpu_agree.format_call(label) + (f" in {saved_as}" if saved_as else "")
    clashes = []
    for who, line, where in failed:
        if (later := _answered_later(where, saved_as)) is not None:
            if notes is not None:
                notes.append(f"{who} failed ({line}) at line {later[0]}, answered at line {later[1]}")
            continue
        plural = "s" if count != 1 else ""
        clashes.append(("gpus", f"{who} failed ({line}) while {listed} listed {count} GPU{plural}"))
    return clashes


def _answered_later(failed_at: str, listed_at: str) -> tuple[int, int] | None:
    """(the failure's line, the listing's line) where both are outputs of one saved session and
    the listing came after the failure; None otherwise."""
    failed, listed = _SESSION_LINE.match(failed_at), _SESSION_LINE.match(listed_at)
    if failed is None or listed is None or failed["file"] != listed["file"]:
        return None
    lines = int(failed["line"]), int(listed["line"])
    return lines if lines[0] < lines[1] else None


def missing_in_session(raw: Mapping[str, ProbeOutput], lister: tuple[str, str, int] | None) -> list[str]:
    """A note for each nvidia-smi output of a saved session that says the tool was not found
    (`-bash: nvidia-smi: command not found`) beside a listing of the same session: before it, the
    driver's tools installed (or another image booted) between them, "nvidia-smi was not found at
    line 1 (...), answered at line 7"; after it, said with the listing's line. It was dropped
    unsaid where the listing was read (measure39a 19)."""
    if lister is None:
        return []
    listed = _SESSION_LINE.match(lister[1])
    notes = []
    for name, _, _ in [*GPU_SOURCES, (LIST_PROBE, "list", None)]:
        got = raw.get(name)
        if got is None or not got.absent or (at := _SESSION_LINE.match(got.saved_as)) is None:
            continue
        if listed is None or at["file"] != listed["file"]:
            continue
        said = next((line.strip() for line in got.stderr.splitlines() if line.strip()), "")
        shown = f" (`{said[:120]}`)" if said else ""
        lines = int(at["line"]), int(listed["line"])
        notes.append(
            f"nvidia-smi was not found at line {lines[0]}{shown}, answered at line {lines[1]}"
            if lines[0] < lines[1]
            else f"nvidia-smi was not found at line {lines[0]}{shown}, after line {lines[1]} listed the GPUs"
        )
    return notes
