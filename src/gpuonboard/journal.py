"""Per-host journal under `.gpuonboard/state/` so that `--resume` continues at the failed step."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Journal:
    """What the last run of one playbook did on one host."""

    host: str
    playbook: str
    run_id: str = ""
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed_step: str | None = None
    finished: bool = False

    def done_steps(self) -> set[str]:
        """Steps that ended ok or changed (not failed, not skipped) in the recorded run."""
        return {name for name, rec in self.steps.items() if rec.get("status") in ("ok", "changed")}


def _path(state_dir: Path, host: str, playbook: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{host}__{playbook}")
    return state_dir / f"{safe}.json"


def load(state_dir: Path, host: str, playbook: str) -> Journal | None:
    """The recorded journal, or None when absent or unreadable."""
    try:
        data = json.loads(_path(state_dir, host, playbook).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    steps = data.get("steps") or {}
    failed = data.get("failed_step")
    # a journal edited by hand or cut short is "unreadable" too: --resume then starts afresh
    # (it crashed the host's run with an internal error)
    if not isinstance(steps, dict) or not all(isinstance(r, dict) for r in steps.values()):
        return None
    if failed is not None and not isinstance(failed, str):
        return None
    return Journal(
        host=host,
        playbook=playbook,
        run_id=str(data.get("run_id", "")),
        steps=dict(steps),
        failed_step=failed,
        finished=bool(data.get("finished")),
    )


def save(state_dir: Path, journal: Journal) -> None:
    """Write atomically (temp file + rename): a crash never leaves a half journal."""
    state_dir.mkdir(parents=True, exist_ok=True)
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
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "steps": journal.steps,
        "failed_step": journal.failed_step,
        "finished": journal.finished,
    }
    fd, tmp = tempfile.mkstemp(dir=state_dir, prefix=".journal.")
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f, indent=1)
    os.replace(tmp, _path(state_dir, journal.host, journal.playbook))
