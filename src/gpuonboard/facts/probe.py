"""ONE batched probe script per host: every read-only command in one remote execution.

The script runs the probes concurrently on the host (a real `nvidia-smi -q -x` on 8 GPUs
takes a second or two), then prints each probe's stdout, exit code and stderr between
lines that start with a random per-run boundary token, so no output can forge a section.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from .. import shell

MAX_STDERR = 4096


@dataclass(frozen=True)
class Probe:
    """A named read-only command whose raw output becomes a fact."""

    name: str
    command: str  # built with gpuonboard.shell (a constant or shell.join(...))


@dataclass(frozen=True)
class ProbeOutput:
    """Raw result of one probe; exit code 127 means the tool is absent."""

    stdout: str
    stderr: str
    exit_code: int

    @property
    def absent(self) -> bool:
        """True when the probed command does not exist on the host."""
        return self.exit_code == 127


def build_script(probes: Sequence[Probe], token: str) -> str:
    """The sh script that runs all probes concurrently and frames their outputs."""
    lines = [
        "T=$(mktemp -d 2>/dev/null) || { echo 'gpuonboard: mktemp failed' >&2; exit 97; }",
        "trap 'rm -rf \"$T\"' EXIT",
        "export LC_ALL=C",
    ]
    for i, probe in enumerate(probes):
        lines.append(f'( {probe.command} ) >"$T/{i}.o" 2>"$T/{i}.e" </dev/null; echo $? >"$T/{i}.c" &')
    lines.append("wait")
    for i, probe in enumerate(probes):
        tag = shell.quote(f"{token} {probe.name}")
        lines.append(
            f'printf \'%s %s\\n\' {tag} "$(cat "$T/{i}.c")"; cat "$T/{i}.o"; '
            f"printf '\\n%s\\n' {shell.quote(token + ' stderr')}; head -c {MAX_STDERR} \"$T/{i}.e\"; "
            "printf '\\n'"
        )
    return "\n".join(lines) + "\n"


def new_token() -> str:
    """A boundary no probe output can contain by chance or by design."""
    return "@@gpuonboard-" + secrets.token_hex(12)


def split_output(text: str, token: str, names: Sequence[str]) -> dict[str, ProbeOutput]:
    """Cut the framed script output back into one ProbeOutput per probe name."""
    results: dict[str, ProbeOutput] = {}
    current: str | None = None
    code = 0
    out: list[str] = []
    err: list[str] = []
    target = out
    prefix = token + " "

    def flush() -> None:
        if current is not None:
            results[current] = ProbeOutput(_strip_one(out), _strip_one(err), code)

    for line in text.splitlines(keepends=True):
        if line.startswith(prefix):
            rest = line[len(prefix) :].strip()
            if rest == "stderr":
                target = err
                continue
            flush()
            name, _, rc = rest.rpartition(" ")
            current, code = name, int(rc) if rc.lstrip("-").isdigit() else -1
            out, err = [], []
            target = out
            continue
        target.append(line)
    flush()
    for name in names:
        results.setdefault(name, ProbeOutput("", "probe produced no output", -1))
    return results


def _strip_one(parts: list[str]) -> str:
    """Join, dropping the single newline the framing added after each block."""
    text = "".join(parts)
    return text[:-1] if text.endswith("\n") else text
