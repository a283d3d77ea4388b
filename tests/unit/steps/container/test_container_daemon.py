"""The container probe on a docker that cannot reach its daemon, and a pull whose free space is unknown.

docker >= 23 exits 0 from `docker info --format '{{json .}}'` when it cannot reach its daemon,
printing `{"ServerErrors":[...],"ClientInfo":{...}}` (a real capture); the probe (the product's
own shell script, run here with `sh`) must take that for no answer, keep docker's own words as
the error, and the plan must give the advice for them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.container import ContainerStep, parse_state, plan_from, probe_command
from gpuonboard.testing import add_executable

REAL = Path(__file__).parents[3] / "fixtures" / "real"
SERVER_ERRORS = (
    REAL.parent / "container-runs" / "docker-info-json__daemon-down__server-errors.json"
).read_text()
SMI_L = (REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt").read_text()
M = "##gpuonboard-container "
DENIED = (
    "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock:"
    ' Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.48/info": dial unix /var/run/docker.sock: connect:'
    " permission denied"
)


def _gpu_facts() -> object:
    return parse_facts(
        {"os_release": ProbeOutput("ID=ubuntu\n", "", 0), "nvidia_smi_list": ProbeOutput(SMI_L, "", 0)}
    )


def _host(tmp_path: Path, info_json: str, error: str) -> dict[str, str]:
    """A PATH whose `docker` answers `info --format` as docker 28 does without its daemon: exit
    0, the JSON on stdout (its error on stderr); its plain `info` ends with "errors pretty
    printing info". podman is absent (127), and `sudo -n` asks for a password."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    add_executable(
        bin_dir,
        "docker",
        "#!/bin/sh\n"
        f'if [ "$1" = info ] && [ "$2" = --format ]; then echo {_q(error)} >&2\n'
        f"  echo {_q(info_json.strip())}; exit 0; fi\n"
        f'if [ "$1" = info ]; then echo {_q("ERROR: " + error)} >&2\n'
        '  echo "errors pretty printing info" >&2; exit 1; fi\n'
        f"echo {_q(error)} >&2; exit 1\n",
    )
    add_executable(bin_dir, "podman", '#!/bin/sh\necho "sh: 1: podman: not found" >&2\nexit 127\n')
    add_executable(bin_dir, "sudo", '#!/bin/sh\necho "sudo: a password is required" >&2\nexit 1\n')
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}


def _q(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _probe(env: dict[str, str]) -> str:
    cmd = probe_command("nvcr.io/nvidia/pytorch:24.08-py3")
    return subprocess.run(["sh", "-c", cmd], env=env, capture_output=True, text=True, timeout=30).stdout


def test_a_stopped_daemon_is_no_answer_with_dockers_own_words(tmp_path: Path) -> None:
    out = _probe(_host(tmp_path, SERVER_ERRORS, json.loads(SERVER_ERRORS)["ServerErrors"][0]))
    state = parse_state(out)
    assert state.cli is None, out
    assert state.errors["docker"] == (
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
    )
    assert state.errors["podman"] == "not installed"
    plan = plan_from(state, ContainerStep({}).settings({}, None), _gpu_facts())  # type: ignore[arg-type]
    assert plan.failed and "docker is installed but does not answer; start it" in plan.msg, plan.msg
    assert "NVIDIA container toolkit" not in plan.msg


def test_a_refused_socket_is_no_answer_and_gets_the_docker_group_advice(tmp_path: Path) -> None:
    # the same JSON shape with docker's permission-denied sentence (as docker writes it: JSON-escaped)
    info = json.dumps({"ServerErrors": [DENIED], "ClientInfo": {"Debug": False}}, separators=(",", ":"))
    state = parse_state(_probe(_host(tmp_path, info, DENIED)))
    assert state.cli is None and state.errors["docker"] == DENIED
    plan = plan_from(state, ContainerStep({}).settings({}, None), _gpu_facts())  # type: ignore[arg-type]
    assert plan.failed and "may not use docker without sudo; add the user to the docker group" in plan.msg


def test_server_errors_in_the_info_are_no_answer_to_the_parser_too() -> None:
    state = parse_state(f"{M}user 1000 a a\n{M}cdi\n{M}info docker\n{SERVER_ERRORS}")
    assert state.cli is None and "Is the docker daemon running?" in state.errors["docker"]


@pytest.mark.parametrize("df", ["", "/dev/vda 300000000 50 200000000 50% /\n"])
def test_unknown_free_space_is_a_warning_with_how_to_check(df: str) -> None:
    info = '{"ServerVersion": "28.0.1", "DockerRootDir": "/var/lib/docker", "Runtimes": {"nvidia": {}}}'
    state = parse_state(f"{M}cdi\n/etc/cdi/nvidia.yaml\n{M}info docker\n{info}\n{M}df\n{df}")
    plan = plan_from(state, ContainerStep({}).settings({}, None), _gpu_facts())  # type: ignore[arg-type]
    assert plan.changes and not plan.failed
    warned = [c for c in plan.checks if c.name == "free space for the pull"]
    if df:
        assert not warned and "204.8 GB free under /var/lib/docker" in plan.msg, plan.msg
        return
    assert "free space unknown (not checked) under /var/lib/docker" in plan.msg, plan.msg
    assert warned and warned[0].verdict == "warn" and "df -h /var/lib/docker" in warned[0].detail


@pytest.mark.parametrize(("others", "said"), [(("apptainer",), "apptainer"), (("enroot",), "enroot")])
def test_a_box_with_only_an_hpc_runtime_is_told_so(
    tmp_path: Path, others: tuple[str, ...], said: str
) -> None:
    """An HPC box (a Slurm node) with apptainer or enroot and neither docker nor podman (the
    probe, the product's own script, run with `sh` on such a PATH): the plan said only "install
    Docker", which such a box's users cannot; it names the runtime that is there and how to run
    the image with it, the Docker install still offered."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for missing in ("docker", "podman"):
        add_executable(bin_dir, missing, f'#!/bin/sh\necho "sh: 1: {missing}: not found" >&2\nexit 127\n')
    for name in others:
        add_executable(bin_dir, name, "#!/bin/sh\nexit 0\n")
    state = parse_state(_probe({"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}))
    assert state.cli is None and state.others == others, state
    plan = plan_from(state, ContainerStep({}).settings({}, None), _gpu_facts())  # type: ignore[arg-type]
    assert plan.failed
    assert f"this host has {said}, which gpuonboard's container step does not drive" in plan.msg, plan.msg
    assert "install Docker: " in plan.msg
