"""QA: an image pinned by digest only and pulled through a mirror keeps the mirror's name (a digest
reference is no tag target); docker's `image inspect` finds it only under that name, so the probe
must ask for it there too, else every rerun pulls and smoke-runs it again."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.container import ContainerStep, parse_state, plan_from, probe_command, smoke_file
from gpuonboard.steps.container.state import INSPECT_FORMAT
from gpuonboard.testing import add_executable

DIGEST = "sha256:" + "ab" * 32
IMAGE = f"nvcr.io/nvidia/pytorch@{DIGEST}"
MIRROR_COPY = f"mirror.example.cn:5000/nvidia/pytorch@{DIGEST}"
ID = "sha256:" + "12" * 32


def _settings(**vars: object):  # type: ignore[no-untyped-def]
    return ContainerStep({}).settings({"container_image": IMAGE, **vars}, None)


def test_local_names_of_a_digest_only_pin_include_each_mirrors_copy() -> None:
    s = _settings(
        registry_mirror=["mirror.example.cn:5000", "https://m2.example.cn/pre"], pull_fallback_origin=True
    )
    assert s.local_names == (IMAGE, MIRROR_COPY, f"m2.example.cn/pre/nvidia/pytorch@{DIGEST}")
    assert _settings().local_names == (IMAGE,)
    # a tag is tagged back to the canonical name after a pull: that one name only
    tagged = ContainerStep({}).settings(
        {"container_image": f"nvcr.io/nvidia/pytorch:24.08-py3@{DIGEST}", "registry_mirror": "m.example.cn"},
        None,
    )
    assert tagged.local_names == ("nvcr.io/nvidia/pytorch:24.08-py3",)


def _docker_knowing(bin_dir: Path, name: str) -> None:
    """A `docker` that, like docker's reference store, inspects an image only by the exact name it
    was pulled as (`name`); podman would match any name carrying the digest."""
    add_executable(
        bin_dir,
        "docker",
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  info) echo \'{"DockerRootDir": "/var/lib/docker", "ServerVersion": "27.0.3"}\' ;;\n'
        f'  image) [ "$4 $5" = "{INSPECT_FORMAT} {name}" ] || exit 1\n'
        f"    echo '{ID} [\"{name}\"] linux/amd64' ;;\n"
        "  *) exit 1 ;;\n"
        "esac\n",
    )


def test_the_probe_finds_a_digest_only_pin_under_its_mirrors_name(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _docker_knowing(bin_dir, MIRROR_COPY)
    s = _settings(registry_mirror="mirror.example.cn:5000")
    cache = tmp_path / "cache"
    record = f"docker /var/lib/docker {ID} gpus=0"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(cache)}
    path = Path(smoke_file(s.ref.canonical).replace("${XDG_CACHE_HOME:-$HOME/.cache}", str(cache)))
    path.parent.mkdir(parents=True)
    path.write_text(record + "\n")
    step = ContainerStep({})
    probe = step.probe_for(s.ref.canonical, s.local_names)
    out = subprocess.run(["sh", "-c", probe.command], env=env, capture_output=True, text=True, timeout=30)
    state = parse_state(out.stdout)
    assert state.cli == "docker" and state.image_id == ID, out.stdout
    assert state.image_name == MIRROR_COPY and state.digests == (DIGEST,)
    assert state.smoke_record == record
    # the canonical name alone (as before): not found, so each rerun pulled it again
    alone = subprocess.run(["sh", "-c", probe_command(IMAGE)], env=env, capture_output=True, text=True)
    assert parse_state(alone.stdout).image_id is None
    # present with the pinned digest and its smoke run recorded: ok, nothing to do
    plan = plan_from(state, s, parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)}))
    assert not plan.changes and not plan.failed and DIGEST in plan.msg, plan.msg
