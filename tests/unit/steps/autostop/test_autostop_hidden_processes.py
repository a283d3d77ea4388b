"""/proc mounted with hidepid: a login other than root sees only its own processes there, so
the watcher's `pgrep -f` (--job) and `ps` (--ssh-sessions) miss a job another user runs (through
sudo, in a container as root) and the box is shut down under it. The install says so. The probe
reads /proc's options from /proc/mounts; the kernel writes them as in `proc /proc proc
rw,relatime,hidepid=invisible 0 0` (5.8 and later: invisible, noaccess, ptraceable; earlier
kernels 2, 1)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuonboard.steps.autostop import parse_settings
from gpuonboard.steps.autostop.install import hidden_processes_note

from .test_autostop_install import probe


@pytest.mark.parametrize("hide", ["2", "invisible", "1", "noaccess", "ptraceable"])
def test_a_job_another_user_runs_is_said_to_go_unseen_under_hidepid(tmp_path: Path, hide: str) -> None:
    r = probe(tmp_path, as_nobody=False)  # (the real probe: this machine's /proc options)
    assert r.proc_options.startswith("rw"), r.proc_options
    hidden = dataclasses.replace(r, uid="1000", user="alice", proc_options=f"rw,relatime,hidepid={hide}")
    settings = parse_settings({"job": "train.py", "ssh_sessions": True})
    assert hidden_processes_note(settings, hidden) == (
        f"/proc is mounted hidepid={hide} there, so the watcher, running as alice (not root), sees only"
        " its own processes: --job 'train.py' keeps the box up only while this login runs it and"
        " --ssh-sessions counts only this login's SSH sessions (and `who`); a job run by another user"
        " (through sudo, in a container as root) goes unseen and the box is shut down under it:"
        " connect as root, or give --pid or --container"
    )
    # root sees every process; without hidepid, or with nothing that reads processes: no note
    assert hidden_processes_note(settings, dataclasses.replace(hidden, uid="0")) is None
    assert hidden_processes_note(settings, dataclasses.replace(hidden, proc_options="rw,relatime")) is None
    assert hidden_processes_note(settings, dataclasses.replace(hidden, proc_options="rw,hidepid=0")) is None
    assert hidden_processes_note(parse_settings({"pid": "4711"}), hidden) is None
