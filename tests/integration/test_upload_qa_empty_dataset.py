"""`invoke sync` of an empty dataset directory in plain mode: said as empty, never "up to date
at" a copy the host does not have (real sshd test host, real rsync)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import Project, host_entry

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")


def test_an_empty_dataset_is_said_to_be_empty_not_up_to_date(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (--encrypt's keys are checked before connecting, whatever the dataset holds: issue 27)
    monkeypatch.setenv("QA_EMPTY_PASS", "a passphrase")
    src = tmp_path / "local" / "corpus"
    src.mkdir(parents=True)
    data_dir = tmp_path / "remote data"
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_passphrase_env": "QA_EMPTY_PASS"})
    project.write_inventory({"dataset": entry})
    for args in ((), ("--check",), ("--encrypt",)):
        r = project.cli("sync", "--host", "dataset", *args)
        s = project.summary()["hosts"][0]["steps"][0]
        assert r.returncode == 0 and s["status"] == "ok", (args, s)
        where = data_dir / ("corpus.encrypted" if args == ("--encrypt",) else "corpus")
        assert s["msg"] == (
            f"the dataset {src} is empty; nothing sent (what dataset:{where} holds is left as it is)"
        ), (args, s["msg"])
        assert "up to date" not in s["msg"]
    assert not data_dir.exists()  # nothing was made there, and nothing claimed to be
    # one file later: sent as usual
    (src / "a.txt").write_text("a\n")
    r = project.cli("sync", "--host", "dataset")
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", s
    assert (data_dir / "corpus" / "a.txt").read_text() == "a\n"
