"""An age identity file whose key line is indented (or has trailing blanks) passes every local
check (its key lines are read stripped), so the host's `age -i -` must get the same stripped
lines: it refuses an indented key (`unknown identity type`), which failed the upload after
sending. Real sshd test host, real rsync, real age, as in test_dataset.py."""

from __future__ import annotations

from pathlib import Path

from conftest import Project
from test_dataset import _age_key, needs_age, setup, step, tree_digest


@needs_age
def test_an_indented_key_decrypts_on_the_host(project: Project, tmp_path: Path) -> None:
    key, pub = _age_key(tmp_path)
    lines = key.read_text().splitlines()
    key.write_text("".join(f"  {ln}  \n" if ln.startswith("AGE-SECRET-KEY-") else ln + "\n" for ln in lines))
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0, r.stdout + r.stderr
    assert step(project)["status"] == "changed", step(project)
    want = {k: v for k, v in tree_digest(src).items() if not v.startswith("link:")}
    assert tree_digest(data_dir / "my data") == want
