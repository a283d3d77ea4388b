"""Per-host journal under `.gpuonboard/state/` so that `--resume` continues at the failed step."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard import atomicfile
from gpuonboard.units import rfc3339


@dataclass
class Journal:
    """What the last run of one playbook did on one host."""

    host: str
    playbook: str
    run_id: str = ""
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed_step: str | None = None
    finished: bool = False
    # the host key the box presented (None: a local connection, or a journal written before)
    host_key: str | None = None

    def done_steps(self) -> set[str]:
        """Steps that ended ok or changed (not failed, not skipped) in the recorded run."""
        return {name for name, rec in self.steps.items() if rec.get("status") in ("ok", "changed")}

    def same_args(self, label: str, digest: str) -> bool:
        """Whether step `label` ran with the arguments whose digest is `digest` (a journal
        written before digests were recorded vouches for its steps as it did then)."""
        recorded = self.steps.get(label, {}).get("args")
        return recorded is None or recorded == digest


def args_digest(kind: str, args: dict[str, Any]) -> str:
    """sha256 of a step's type and rendered arguments: a --resume skips a done step only when
    it would run with the same ones (a changed `dest` or image is work not done yet)."""
    text = json.dumps([kind, args], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _path(state_dir: Path, host: str, playbook: str) -> Path:
    """`HOST__PLAYBOOK.json`; a name whose characters had to be replaced (`gpu 1`, `gpu/1`) gets
    a digest of the real names, so it never shares the file of another host (`gpu_1`): that
    host's run overwrote its journal, and --resume skipped steps done only on the other box."""
    raw = f"{host}__{playbook}"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in raw)
    if safe != raw or host.count("__") or playbook.count("__"):
        safe += "-" + hashlib.sha256(json.dumps([host, playbook]).encode()).hexdigest()[:10]
    return state_dir / f"{safe}.json"


def load(state_dir: Path, host: str, playbook: str) -> Journal | None:
    """The recorded journal, or None when absent or unreadable."""
    try:
        data = json.loads(_path(state_dir, host, playbook).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("host", host) != host or data.get("playbook", playbook) != playbook:
        return None  # another host's or playbook's journal (a file copied, an older name clash)
    steps = data.get("steps") or {}
    failed = data.get("failed_step")
    # a journal edited by hand or cut short is "unreadable" too: --resume then starts afresh
    # (it crashed the host's run with an internal error)
    if not isinstance(steps, dict) or not all(isinstance(r, dict) for r in steps.values()):
        return None
    if failed is not None and not isinstance(failed, str):
        return None
    host_key = data.get("host_key")
    return Journal(
        host=host,
        playbook=playbook,
        run_id=str(data.get("run_id", "")),
        steps=dict(steps),
        failed_step=failed,
        # only a real `true` (a hand-edited "no" is no finished run: resume continues)
        finished=data.get("finished") is True,
        host_key=host_key if isinstance(host_key, str) else None,
    )


def save(state_dir: Path, journal: Journal) -> None:
    """Write atomically (temp file + rename): a crash never leaves a half journal."""
    # the first run ever recorded survives later runs (teardown's cost summary starts there)
    first = journal.run_id
    try:
        old = json.loads(_path(state_dir, journal.host, journal.playbook).read_text())
        if isinstance(old, dict):
            recorded = str(old.get("first_run_id") or old.get("run_id") or "")
            first = min(x for x in (recorded, first) if x) if (recorded or first) else ""
    except (OSError, ValueError):
        pass
    payload = {
        "host": journal.host,
        "playbook": journal.playbook,
        "run_id": journal.run_id,
        "first_run_id": first,
        "updated": rfc3339(),
        "steps": journal.steps,
        "failed_step": journal.failed_step,
        "finished": journal.finished,
        "host_key": journal.host_key,
    }
    # serialised before the temp file exists: a value JSON cannot hold (a step's diff) is written
    # as its text, and a failure leaves no temp file behind
    text = json.dumps(payload, indent=1, default=str)
    atomicfile.write_text(_path(state_dir, journal.host, journal.playbook), text, prefix=".journal.")
