"""A command's output carried on one line with its exit code: a writer's or a harness's record
of what a command answered, its exit status written before the output.

Real forms: a session whose writer put the status before each answer (`rc=255   Failed to
initialize NVML: Unknown Error` below `$ nvidia-smi --list-gpus`), a harness's record of the
command, its return code and its stdout (`nvidia-smi returncode=15; stdout=Unable to determine
the device handle for GPU0000:C3:00.0: GPU is lost. ...`, `nvidia-smi returncode=9
output=...`). The output is read as the command printed it, under the command where the record
names one; the exit status itself is no output of the command, and a record of an empty stdout
(`returncode=0; stdout=`) leaves nothing.
"""

from __future__ import annotations

from dataclasses import replace

from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.once import lazy_re

_STATUS = r"(?:rc|returncode|return[ _]code|exit[ _]code|exit[ _]status|exit)"
# a record naming its stream: [command] returncode=N; stdout=TEXT [; stderr=TEXT]
_RECORD = lazy_re(
    rf"^(?P<indent>\s*)(?:(?P<command>\S.*?)\s+)?{_STATUS}\s*[=:\s]\s*(?P<code>-?\d{{1,3}})\s*[;,]?\s*"
    r"(?:stdout|output)\s*[=:]\s*(?P<out>.*?)\s*(?:[;,]\s*stderr\s*[=:]\s*(?P<err>.*?))?\s*$"
)
# the status alone before the output, two spaces or a colon apart (`rc=255   Failed ...`,
# `rc=1: No devices were found`); never `rc=0 errno=5` (a key=value log), nor `exit 0` typed
_PREFIX = lazy_re(r"^(?P<indent>\s*)rc\s*=\s*-?\d{1,3}(?:\s{2,}|\s*:\s+)(?P<out>[^\s=]+(?:\s.*)?)$")


def _line(line: str) -> str:
    """The line with its exit-status label dropped (and its command above its output)."""
    if "=" not in line and ":" not in line:
        return line
    if (found := _RECORD.match(line)) is not None:
        said = [s for s in (found.group("out"), found.group("err")) if s]
        indent = found.group("indent")
        command = [indent + found.group("command")] if found.group("command") else []
        return "\n".join(command + [indent + s for s in said])
    if (found := _PREFIX.match(line)) is not None:
        return found.group("indent") + found.group("out")
    return line


def unlabelled(text: str) -> str:
    """The text with each output its line records beside an exit status read as that output."""
    if "rc" not in text and "code" not in text and "exit" not in text:
        return text
    return "\n".join(_line(line) for line in text.split("\n"))


def recorded_codes(text: str) -> list[tuple[str, int]]:
    """(command, status) of each record in the text that names its command and a non-zero
    status (`nvidia-smi -L returncode=255; stdout=...`): the status the output is read with, as
    a live probe's exit code is."""
    if "code" not in text and "exit" not in text and "rc" not in text:
        return []
    found = (_RECORD.match(line) for line in text.split("\n") if "=" in line or ":" in line)
    return [
        (m.group("command").strip(), int(m.group("code")))
        for m in found
        if m is not None and m.group("command") and int(m.group("code")) != 0
    ]


def with_codes(
    found: list[tuple[str, ProbeOutput, str]], codes: list[tuple[str, int]]
) -> list[tuple[str, ProbeOutput, str]]:
    """Each output read (kind, output, where) with the non-zero status its record gave (`codes`,
    recorded_codes) as its exit code: the record's command named where it was read (a session's
    `line 3 (`nvidia-smi -L`)`), or the one record of a file that held one output."""
    if not codes:
        return found

    def code_of(where: str) -> int | None:
        named = [code for command, code in codes if f"(`{command}`)" in where]
        if named:
            return named[0]
        return codes[0][1] if len(codes) == 1 and len(found) == 1 else None

    return [
        (
            kind,
            replace(out, exit_code=code) if out.exit_code == 0 and (code := code_of(where)) else out,
            where,
        )
        for kind, out, where in found
    ]


def no_output_said(why: str, codes: list[tuple[str, int]]) -> str:
    """The refusal of a copied command line with no output below it, where a record gave the
    command a non-zero status (`nvidia-smi returncode=9; stdout=`): the status named."""
    if len(codes) != 1 or "with no output below it" not in why:
        return why
    command, code = codes[0]
    where = why.split(": a copied command line", 1)[0]
    return (
        f"{where}: a record of `{command}` with exit status {code} and no output: the command"
        " failed, printing nothing to its stdout (its error message not saved): save the command's"
        " error message too (`2>&1`), or run it again on the box."
    )
