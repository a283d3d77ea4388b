"""The README never lies: every command block of its tour and first-box sections runs, as
written, against a simulated server, and shows what the text says.

A block is marked by an HTML comment on the line before its fence: `<!-- readme-test: tour -->`
or `<!-- readme-test: first-box -->` for a ```console block, `<!-- readme-test: first-box
file=PATH -->` for a file the reader writes. In a console block a `$ ` line is a command (run by
bash in the project dir, with `.venv/bin` first on PATH, as `. .venv/bin/activate` does; it
must exit 0), and the lines after it are lines of its output, where `...` stands for anything:
each must match a line of the command's stdout or stderr.

The tour runs in a temp project (the repo's tasks.py, playbooks, templates and inventory linked
in), so `.gpuonboard/sim` and `reports/` are its own. The first-box section is written for a real
vendor box; it runs against a simulated server started here, with these substitutions, and
nothing else changed: the documentation address 203.0.113.7 -> the simulated server's address
(and port, where not 22), `~/.ssh/id_ed25519` -> its client key, `host_key: SHA256:...` -> its
host key's fingerprint (what the reader pastes after comparing), the data disk `/data` -> the
mount the simulated box's `df` capture shows, and the simulated host's `data_dir` and `vars`
added, so that nothing is written outside the temp dir (a test host shares this machine's
file system and runs as root). The `provision` of a real box (step 4) is not run: it needs a
container engine with the NVIDIA toolkit, which a simulated server does not have.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MARK = re.compile(r"^\s*<!-- readme-test: (?P<section>[a-z-]+)(?: file=(?P<file>\S+))? -->\s*$")
FIRST_BOX_ADDRESS = "203.0.113.7"


@dataclass
class Command:
    """One `$ ` line of a console block and the output lines shown under it."""

    line: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    """A marked block: commands to run, or (with `file`) a file to write."""

    section: str
    file: str | None
    text: str
    commands: list[Command]


def readme_blocks(text: str) -> list[Block]:
    """The marked blocks of the README, in order."""
    lines = text.splitlines()
    blocks: list[Block] = []
    for i, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        start = next(j for j in range(i + 1, len(lines)) if lines[j].strip())
        assert lines[start].lstrip().startswith("```"), (
            f"README line {i + 1}: a marker not followed by a fence"
        )
        end = next(j for j in range(start + 1, len(lines)) if lines[j].strip() == "```")
        body = textwrap.dedent("\n".join(lines[start + 1 : end])) + "\n"
        commands: list[Command] = []
        for row in body.splitlines() if lines[start].strip() == "```console" else []:
            if row.startswith("$ "):
                commands.append(Command(row[2:]))
            elif row.strip():
                assert commands, f"README line {start + 1}: output before any command"
                commands[-1].expected.append(row.strip())
        assert m["file"] or commands, f"README line {start + 1}: a marked block with no `$ ` command"
        blocks.append(Block(m["section"], m["file"], body, commands))
    return blocks


def matches(pattern: str, output: str) -> bool:
    """Whether a shown output line (`...` = anything) matches a line of `output`."""
    parts = [re.escape(p.strip()) for p in pattern.split("...")]
    regex = re.compile(".*".join(parts))
    return any(regex.search(line) for line in output.splitlines())


def env() -> dict[str, str]:
    """The reader's shell after `. .venv/bin/activate`: the venv's bin first on PATH."""
    venv_bin = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(Path(venv_bin).parent),
        "COLUMNS": "200",  # tables unwrapped, so a row is one line
        "GPUONBOARD_SSH_CONFIG": "/dev/null",
    }


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one README command in bash, as the reader would."""
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=90, env=env()
    )


def check(cmd: Command, cwd: Path, shown: str | None = None) -> None:
    """Run a command; it must exit 0 and print every output line the README shows under it."""
    r = run(cmd.line, cwd)
    out = r.stdout + r.stderr
    where = f"README: `$ {shown or cmd.line}`"
    assert r.returncode == 0, f"{where} exited {r.returncode}:\n{out[-3000:]}"
    for pattern in cmd.expected:
        assert matches(pattern, out), f"{where} did not print a line like {pattern!r}:\n{out[-3000:]}"


def project(root: Path) -> Path:
    """A project dir as a checkout's root looks to the tasks (code and data linked in)."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("tasks.py", "playbooks", "templates", "inventory"):
        (root / name).symlink_to(REPO / name)
    return root


@pytest.fixture
def readme() -> list[Block]:
    blocks = readme_blocks((REPO / "README.md").read_text(encoding="utf-8"))
    assert {b.section for b in blocks} == {"tour", "first-box"}, "README: tour and first-box blocks marked"
    return blocks


@pytest.fixture
def tour_dir(tmp_path: Path) -> Iterator[Path]:
    """The tour's project dir; whatever the tour leaves running is stopped at the end."""
    root = project(tmp_path / "tour")
    try:
        yield root
    finally:
        run("invoke sim.down", root)


def test_the_readme_tour_runs_as_written(readme: list[Block], tour_dir: Path) -> None:
    commands = [c for b in readme if b.section == "tour" for c in b.commands]
    lines = [c.line for c in commands]
    assert any(x.startswith("invoke sim.up") for x in lines) and lines[-1] == "invoke sim.down", lines
    for cmd in commands:
        check(cmd, tour_dir)


@dataclass
class SimBox:
    """The simulated server standing in for the reader's first box."""

    root: Path
    address: str
    port: int
    host: dict[str, object]


@pytest.fixture
def sim_box(tmp_path: Path) -> Iterator[SimBox]:
    root = project(tmp_path / "first-box")
    r = run("invoke sim.up --name stand-in", root)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        inv = yaml.safe_load((root / ".gpuonboard/sim/inventory/hosts.yml").read_text())
        host = inv["hosts"]["stand-in"]
        yield SimBox(root, str(host["address"]), int(host.get("port", 22)), host)
    finally:
        run("invoke sim.down", root)


def first_box_file(text: str, box: SimBox) -> str:
    """The README's inventory with the simulated box's connection details (module docstring)."""
    doc = yaml.safe_load(text)
    (name, host), *more = doc["hosts"].items()
    assert not more and host["address"] == FIRST_BOX_ADDRESS, doc
    assert str(host["host_key"]) == "SHA256:...", host
    host["address"] = box.address
    host["port"] = box.port
    host["key_file"] = box.host["key_file"]
    host["host_key"] = box.host["host_key"]
    host["order"]["data_disk"]["mount"] = "/mnt/nvme0n1p1"  # the mount of the replayed df capture
    host["data_dir"] = box.host["data_dir"]
    host["vars"] = box.host["vars"]
    return yaml.safe_dump(doc, sort_keys=False)


def test_the_readme_first_box_runs_against_a_simulated_box(readme: list[Block], sim_box: SimBox) -> None:
    target = sim_box.address if sim_box.port == 22 else f"-p {sim_box.port} {sim_box.address}"
    shown_address = sim_box.address if sim_box.port == 22 else f"[{sim_box.address}]:{sim_box.port}"
    ran = 0
    for block in (b for b in readme if b.section == "first-box"):
        if block.file:
            path = sim_box.root / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(first_box_file(block.text, sim_box))
            continue
        for cmd in block.commands:
            real = Command(
                cmd.line.replace(FIRST_BOX_ADDRESS, target),
                [x.replace(FIRST_BOX_ADDRESS, shown_address) for x in cmd.expected],
            )
            check(real, sim_box.root, shown=cmd.line)
            ran += 1
    assert ran >= 2  # the fingerprint and the check


def test_shown_output_lines_match_with_ellipses() -> None:
    """The matcher itself: `...` is anything within one line, the rest is literal."""
    out = "│ gpu_count │ 8 │ 8 │ PASS │\nverdict for h: GO with 2 warnings: a, b\n"
    assert matches("... gpu_count ... 8 ... PASS ...", out)
    assert matches("verdict for h: GO ...", out)
    assert not matches("verdict for h: NO-GO ...", out)
    assert not matches("gpu_count ... FAIL", out)
