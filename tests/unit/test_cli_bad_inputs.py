"""Bad-input corpus: every malformed inventory or playbook under tests/fixtures/bad/ makes the REAL
CLI exit 2 with exactly one line `error: <sentence>` on stderr, and never a traceback.

Each case runs `invoke` as a subprocess (as a user would); the subprocesses run concurrently so
the whole corpus takes a few seconds. `{path}` in an expected sentence stands for the absolute
path of the case (a file, or the directory holding hosts.yml + vendors/).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BAD = REPO / "tests" / "fixtures" / "bad"
INVENTORY_CASES = BAD / "inventory"
PLAYBOOK_CASES = BAD / "playbooks"


@dataclass(frozen=True)
class Case:
    """One malformed input and the exact sentence the CLI must print for it."""

    kind: str  # "inventory" or "playbook"
    name: str  # file or directory name under BAD/<kind-dir>/
    expected: str

    @property
    def path(self) -> Path:
        return (INVENTORY_CASES if self.kind == "inventory" else PLAYBOOK_CASES) / self.name

    def sentence(self) -> str:
        return self.expected.replace("{path}", str(self.path))


def inv(name: str, expected: str) -> Case:
    return Case("inventory", name, expected)


def pb(name: str, expected: str) -> Case:
    return Case("playbook", name, expected)


CASES = [
    # ---- YAML itself
    inv(
        "yaml-syntax.yml",
        "{path}, line 5: invalid YAML: expected ',' or '}', but got ':' (in the flow mapping that starts"
        " on line 4); check the indentation, quotes and brackets around that line.",
    ),
    inv("empty.yml", "{path}: the inventory is empty; define at least one host under 'hosts:'."),
    inv("top-level-list.yml", "{path}, line 1: the inventory must be a mapping with a 'hosts:' key."),
    inv(
        "duplicate-host.yml",
        "{path}, line 6: duplicate key 'gpu-1' (first on line 2); remove or rename one of them.",
    ),
    # ---- shape and unknown keys
    inv(
        "unknown-top-key.yml",
        "{path}, line 1: the inventory has an unknown key 'host'; did you mean 'hosts'?",
    ),
    inv("hosts-not-mapping.yml", "{path}, line 1: 'hosts' must be a mapping of name: value, not a list."),
    inv(
        "unknown-host-key.yml",
        "{path}, line 3: host 'gpu-1' has an unknown key 'adress'; did you mean 'address'?",
    ),
    inv(
        "unknown-order-key.yml",
        "{path}, line 6: host 'gpu-1' order has an unknown key 'gpu_cnt'; did you mean 'gpu_count'?",
    ),
    # ---- wrong types and values
    inv(
        "port-not-number.yml",
        "{path}, line 4: host 'gpu-1' field 'port' must be a number from 1 to 65535, not 'abc'.",
    ),
    inv(
        "gpu-count-negative.yml",
        "{path}, line 5: host 'gpu-1' order field 'gpu_count' must be a whole number of at least 1, not -1.",
    ),
    inv(
        "gpu-count-word.yml",
        "{path}, line 5: host 'gpu-1' order field 'gpu_count' must be a whole number of at least 1,"
        " not 'eight'.",
    ),
    inv(
        "missing-address.yml",
        "{path}, line 2: host 'gpu-1' has no 'address' and no Host entry in the SSH config;"
        " add address: <IP or DNS name>.",
    ),
    inv(
        "size-bad-unit.yml",
        "{path}, line 5: host 'gpu-1' order field 'vram' is not a valid size: '80GG' has an unknown unit"
        " 'GG'; use B, MB, GB, TB, MiB, GiB or TiB.",
    ),
    inv(
        "size-negative.yml",
        "{path}, line 5: host 'gpu-1' order field 'ram' is not a valid size: '-5GB' is negative;"
        " a size must be zero or more.",
    ),
    inv(
        "interconnect-infiniband.yml",
        "{path}, line 5: host 'gpu-1' order field 'interconnect' must be one of nvlink, pcie (the link"
        " between the GPUs), not 'infiniband'; the RDMA fabric goes in `rdma` with its ports and rate,"
        ' like "8x400G InfiniBand".',
    ),
    inv(
        "min-driver-float.yml",
        "{path}, line 5: host 'gpu-1' order field 'min_driver' must be quoted text like \"550.90\";"
        " unquoted, YAML reads it as the number 550.9.",
    ),
    inv(
        "data-disk-root.yml",
        "{path}, line 5: host 'gpu-1' order data_disk 'mount' must not be '/' (the system disk);"
        " give the data disk's own mount point, like /data.",
    ),
    inv(
        "data-disk-relative.yml",
        "{path}, line 6: host 'gpu-1' order data_disk 'mount' must be an absolute path like /data,"
        " not 'data'.",
    ),
    inv(
        "host-key-not-sha256.yml",
        "{path}, line 4: host 'gpu-1' field 'host_key' is an MD5 fingerprint; pin the SHA256 one, SHA256:"
        " and 43 base64 characters (`ssh-keyscan -p PORT HOST | ssh-keygen -lf -` prints it).",
    ),
    inv(
        "connect-timeout-negative.yml",
        "{path}, line 2: defaults field 'connect_timeout' must be a positive number of seconds, not -3.",
    ),
    # ---- references between entries
    inv(
        "unknown-group-member.yml",
        "{path}, line 3: group 'a100' lists unknown host 'gpu-3'; define it under 'hosts:' or remove it"
        " from the group; did you mean 'gpu-2'?",
    ),
    inv(
        "jump-self.yml",
        "{path}, line 4: host 'gpu-1' lists itself as its own jump host; remove it from 'jump'.",
    ),
    inv(
        "unknown-vendor",
        "{path}/hosts.yml, line 4: host 'gpu-1' names unknown vendor 'wuhan-icd'; vendor profiles are the"
        " files <name>.yml in {path}/vendors; did you mean 'wuhan-idc'?",
    ),
    # ---- vendor profiles
    inv(
        "vendor-bad-billing-unit",
        "{path}/vendors/wuhan-idc.yml, line 3: vendor 'wuhan-idc' billing 'unit' must be one of second,"
        " minute, hour, not 'day'.",
    ),
    inv(
        "vendor-negative-rate",
        "{path}/vendors/wuhan-idc.yml, line 4: vendor 'wuhan-idc' billing 'rate' must be a non-negative"
        " number, not -58.",
    ),
    inv(
        "vendor-unknown-key",
        "{path}/vendors/wuhan-idc.yml, line 2: vendor 'wuhan-idc' has an unknown key 'licens';"
        " did you mean 'licence'?",
    ),
    # ---- Ansible inventories
    inv(
        "ansible-ini-malformed.ini",
        "{path}, line 3: host 'gpu-2' variable 'ansible_host' must be written name=value, with no spaces"
        " around '='.",
    ),
    inv(
        "ansible-ini-bad-section.ini",
        "{path}, line 1: malformed section header '[gpus'; write [group], [group:vars] or [group:children].",
    ),
    inv(
        "ansible-yaml-unknown-key.yml",
        "{path}, line 7: Ansible group 'gpus' has an unknown key 'var'; did you mean 'vars'?",
    ),
    # ---- playbooks (validated before any connection)
    pb(
        "yaml-syntax.yml",
        "{path}, line 4: invalid YAML: expected <block end>, but found '<block sequence start>' (in the"
        " block collection that starts on line 3); check the indentation, quotes and brackets around"
        " that line.",
    ),
    pb("empty.yml", "{path}: the playbook is empty; add a 'steps:' list like '- step: acceptance'."),
    pb(
        "unknown-top-key.yml", "{path}, line 2: the playbook has an unknown key 'step'; did you mean 'steps'?"
    ),
    pb(
        "steps-not-list.yml",
        "{path}, line 2: 'steps' must be a non-empty list of steps, each written like '- step: acceptance'.",
    ),
    pb(
        "step-not-mapping.yml",
        "{path}, line 2: step 1 must be a mapping like 'step: acceptance', not 'acceptance'.",
    ),
    pb("unknown-step-type.yml", "{path}, line 3: unknown step type 'acceptence'; did you mean 'acceptance'?"),
    pb(
        "unknown-step-argument.yml",
        "{path}, line 5: step 'acceptance' has an unknown argument 'ram_tolerence';"
        " did you mean 'ram_tolerance'?",
    ),
    pb(
        "duplicate-step-names.yml",
        "{path}, line 5: step name 'accept' is used twice; give each step a unique 'name:'"
        " (the journal and --only/--skip refer to steps by name).",
    ),
    pb(
        "bad-argument-value.yml",
        "{path}, line 3: step 'acceptance': argument 'ram_tolerance' must be a fraction from 0 to 1,"
        " like 0.05, not 5.",
    ),
    pb(
        "undefined-variable.yml",
        "{path}, line 3: step 'make-dir' for host 'dead' uses an undefined variable ('dict object' has no"
        " attribute 'state_dirr'); define it in the inventory's vars.",
    ),
]

# A valid inventory whose only host can never answer: playbook cases must fail before connecting.
UNREACHABLE_INVENTORY = """\
hosts:
  dead:
    address: 127.0.0.1
    port: 1
    connect_timeout: 1
"""


def _command(case: Case, inventory: Path) -> list[str]:
    base = [sys.executable, "-m", "invoke", "--search-root", str(REPO)]
    if case.kind == "inventory":
        return [*base, "inventory", "--inventory", str(case.path)]
    return [*base, "provision", "--check", "--playbook", str(case.path), "--inventory", str(inventory)]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[Case, subprocess.CompletedProcess[str]]:
    """Run every case's CLI command at once (each in its own empty working directory)."""
    root = tmp_path_factory.mktemp("bad-inputs")
    inventory = root / "unreachable.yml"
    inventory.write_text(UNREACHABLE_INVENTORY)
    env = {k: v for k, v in os.environ.items() if k != "GPUONBOARD_DEBUG"}
    env["GPUONBOARD_SSH_CONFIG"] = "/dev/null"  # ignore the user's ~/.ssh/config

    def run(item: tuple[int, Case]) -> subprocess.CompletedProcess[str]:
        index, case = item
        cwd = root / f"cwd-{index}"
        cwd.mkdir()
        return subprocess.run(
            _command(case, inventory), cwd=cwd, env=env, capture_output=True, text=True, timeout=60
        )

    with ThreadPoolExecutor(max_workers=min(16, 2 * (os.cpu_count() or 2))) as pool:
        results = list(pool.map(run, enumerate(CASES)))
    return dict(zip(CASES, results, strict=True))


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}:{c.name}" for c in CASES])
def test_bad_input_gives_one_sentence(
    case: Case, outcomes: dict[Case, subprocess.CompletedProcess[str]]
) -> None:
    result = outcomes[case]
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr == f"error: {case.sentence()}\n"
    assert result.returncode == 2


def test_corpus_is_big_enough_and_every_fixture_has_a_case() -> None:
    assert len(CASES) >= 20
    assert len({(c.kind, c.name) for c in CASES}) == len(CASES)
    on_disk = {("inventory", p.name) for p in INVENTORY_CASES.iterdir()}
    on_disk |= {("playbook", p.name) for p in PLAYBOOK_CASES.iterdir()}
    assert on_disk == {(c.kind, c.name) for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}:{c.name}" for c in CASES])
def test_expected_sentence_is_one_plain_sentence(case: Case) -> None:
    sentence = case.sentence()
    assert "\n" not in sentence
    assert sentence.endswith((".", "?"))
    assert str(case.path) in sentence


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check", "--forks", "abc"], "--forks takes a whole number, not 'abc'"),
        (["sync", "--connect-retries", "x"], "--connect-retries takes a whole number, not 'x'"),
        (["provision", "--bogus"], "No idea what '--bogus' is!"),
        (["nosuchtask"], "No idea what 'nosuchtask' is!"),
    ],
)
def test_malformed_command_line_is_one_sentence_exit_2(argv: list[str], message: str, tmp_path: Path) -> None:
    """The console script: a usage error, no traceback, exit 2 (`invoke` itself exits 1)."""
    code = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"{message} (see `gpuonboard --help` or `gpuonboard --help TASK`)"
    via_invoke = subprocess.run(
        [sys.executable, "-m", "invoke", "--search-root", str(REPO), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert via_invoke.returncode == 1 and via_invoke.stderr.strip() == message, via_invoke.stderr


def test_task_help_and_a_reader_that_leaves_early(tmp_path: Path) -> None:
    """`facts --help` printed "--help: cannot read this file" (its positional took it); help piped
    into a reader that closes early (`| head -1`) ended in a BrokenPipeError traceback."""
    code = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "facts", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout.startswith("Usage: gpuonboard [--core-opts] facts"), (
        r.stdout + r.stderr
    )
    via_invoke = subprocess.run(  # invoke's own parser gives --help to PATHS: say where help is
        [sys.executable, "-m", "invoke", "--search-root", str(REPO), "facts", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert via_invoke.returncode == 2 and via_invoke.stderr.strip() == (
        "error: for this task's help run `invoke --help facts` (or `gpuonboard facts --help`)."
    ), via_invoke.stderr
    # the reader is gone before the first line: exit 141, nothing said
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_text("hosts:\n  a: {address: 10.0.0.1}\n")
    gpuonboard = [sys.executable, "-c", code]
    invoke = [sys.executable, "-m", "invoke", "--search-root", str(REPO)]  # (its main: an excepthook)
    for argv in (
        [*gpuonboard, "--help"],
        [*gpuonboard, "sync", "--help"],
        # a task's own output (rich): rich's reaction was a silent exit 1, read as a failed host
        [*gpuonboard, "inventory", "--inventory", str(inv)],
        [*invoke, "--list"],
        [*invoke, "--help", "sync"],
    ):
        p = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()
        err = p.stderr.read().decode()
        assert p.wait(timeout=60) == 141 and err == "", (argv, err)


# The new flags' bad values, through the real CLI: one sentence on stderr naming the flag and
# the fix, exit 2, nothing connected (the inventory's hosts are unroutable TEST-NET addresses).

CLI = "from gpuonboard.cli import main; main()"


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    if "PYTHONPATH" in os.environ:  # (the checkout under test, where it is not the one installed)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run(
        [sys.executable, "-c", CLI, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_a_bad_reconnect_for_is_exit_2_naming_the_flag(tmp_path: Path) -> None:
    r = _run(tmp_path, "tensorboard", "--host", "x", "--reconnect-for", "5x")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "error: --reconnect-for: '5x' is not a duration like 30s, 5m or 2h."


def test_a_limit_typo_is_exit_2_with_did_you_mean(tmp_path: Path) -> None:
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "hosts.yml").write_text("hosts:\n  node01: {address: 192.0.2.1}\n  node02: {address: 192.0.2.2}\n")
    r = _run(tmp_path, "check", "--limit", "node*,!nod02")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        f"error: --limit pattern '!nod02' names no host or group in {inv / 'hosts.yml'}; fix the name"
        " (run `invoke inventory` to list hosts and groups); did you mean 'node02'?"
    )


# `sim.up --name "a b"` (a typo, a space) was "internal error (TestHostError: invalid host
# name 'a b'); rerun with --debug and report it", exit 70: a usage error, exit 2, naming the flag.


@pytest.mark.parametrize("name", ["a b", "h1;id", ".hidden"])
def test_a_bad_sim_host_name_is_a_usage_error(tmp_path: Path, name: str) -> None:
    base = tmp_path / "sim"
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()"]
        + ["sim.up", "--name", name, "--base", str(base)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"error: --name {name!r} is not a host name; use letters, digits, '.', '_' and '-',"
        " starting with a letter or digit."
    )
    assert not base.exists()


def test_a_path_with_a_line_break_stays_on_the_one_line_of_its_error(tmp_path: Path) -> None:
    """A path holding a line break (a file name made by a script, pasted with its newline) was
    quoted as it is, so the one-sentence error became two lines, the second one reading as an
    error of its own (`error: fake`). Every control character in the sentence, line breaks and
    tabs too, is written as its escape now: one line, exit 2."""
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text("hosts:\n  a: {address: 192.0.2.1}\n")
    cases = [
        (
            ("check", "--inventory", "/nowhere\nerror: fake", "--host", "a"),
            "error: /nowhere\\nerror: fake: inventory not found; pass --inventory PATH"
            " (default ./inventory).",
        ),
        (
            ("facts", "no\tsuch\nfile"),
            "error: no\\tsuch\\nfile: cannot read this file (No such file or directory).",
        ),
        (
            ("sync", "--host", "a", "--dataset", "gone\nx"),
            f"error: --dataset {tmp_path}/gone\\nx does not exist; check the path.",
        ),
    ]
    for argv, line in cases:
        r = _run(tmp_path, *argv)
        assert r.returncode == 2 and r.stderr == line + "\n", (argv, r.stderr)
