"""QA: prove's `train_in_container` finds and runs the training image under the name the
container step left it as.

An image pinned by digest only and pulled through a registry mirror keeps the mirror's name
(`MIRROR/<path>@sha256:...`, a digest reference is no tag target); docker finds it only under that
exact name. prove probed the image's own name alone, so after a successful container step it said
"image ... is not on the host", and it ran the image under the name the user wrote, which docker
would pull from the image's own registry (the one the mirror stands in for). The probe is the real
one (`container.probe_command`), run through a real local runner against a `docker` that, like
docker's reference store, knows an image only by the exact name it was pulled as.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection import LocalRunner
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.steps.base import StepContext
from gpuonboard.steps.prove import Launch, run_script
from gpuonboard.testing import add_executable

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
IMAGE = f"nvcr.io/nvidia/pytorch@{DIGEST}"
MIRROR = "mirror.example.cn:5000"
MIRROR_COPY = f"{MIRROR}/nvidia/pytorch@{DIGEST}"
TAGGED = "nvcr.io/nvidia/pytorch:24.08-py3"
ID = "sha256:" + "12" * 32


def _docker(tmp_path: Path, name: str, digest: str) -> Path:
    """A `docker` holding one image, known only by the exact name `name` (its repo digest: that
    name's repository with `digest`): `image inspect` finds it by that name alone, `run` runs it
    only under that name (printing the result line with the name it ran); any other name is not
    found."""
    bin_dir = tmp_path / "bin"
    repo = name.partition("@")[0].removesuffix(":24.08-py3")
    add_executable(
        bin_dir,
        "docker",
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  info) echo \'{"DockerRootDir": "/var/lib/docker", "ServerVersion": "27.0.3"}\' ;;\n'
        f'  image) [ "$5" = "{name}" ] || exit 1\n'
        f"    echo '{ID} [\"{repo}@{digest}\"]' ;;\n"
        "  run) for a; do\n"
        f'      if [ "$a" = "{name}" ]; then\n'
        '        printf \'GPUONBOARD_RESULT {"ok": true, "ran": "%s"}\\n\' "$a"; exit 0; fi\n'
        "    done\n"
        "    echo 'Unable to find image locally; pulling from its registry' >&2; exit 125 ;;\n"
        "  *) exit 0 ;;\n"
        "esac\n",
    )
    return bin_dir


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, image: str, **vars: object) -> tuple[object, str]:
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    host = Host("box", "127.0.0.1", connection="local", vars={"container_image": image, **vars})
    facts = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})
    ctx = StepContext(host, LocalRunner(host), facts, False, tmp_path)
    launch = Launch("python3", True, image, str(tmp_path), 30)
    return run_script(ctx, launch, "smoke_train.py", ["--steps", "1"])


def test_a_digest_only_pin_through_a_mirror_runs_under_the_mirrors_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _docker(tmp_path, MIRROR_COPY, DIGEST)
    data, why = _run(tmp_path, monkeypatch, IMAGE, registry_mirror=MIRROR)
    assert why == "" and data == {"ok": True, "ran": MIRROR_COPY}, why
    # a list of mirrors: the copy of any of them is found (here the second's)
    data, why = _run(tmp_path, monkeypatch, IMAGE, registry_mirror=["m1.example.cn", MIRROR])
    assert why == "" and data == {"ok": True, "ran": MIRROR_COPY}, why


def test_an_image_on_no_name_it_may_have_says_which_names_were_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _docker(tmp_path, "other.example.cn/nvidia/pytorch@" + DIGEST, DIGEST)
    data, why = _run(tmp_path, monkeypatch, IMAGE, registry_mirror=MIRROR)
    assert data is None
    assert why == (
        f"image {IMAGE} is not on the host (looked for it as {IMAGE}, {MIRROR_COPY});"
        " run the container step first"
    )
    data, why = _run(tmp_path, monkeypatch, IMAGE)  # no mirror: its own name only
    assert (data, why) == (None, f"image {IMAGE} is not on the host; run the container step first")


def test_a_tag_and_digest_pin_runs_the_local_tag_when_it_holds_the_pinned_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the container step tags a pull back to the image's tag name: run that, not `name:tag@digest`
    # (docker looks that up as `name@digest`, which it does not hold, and pulls from nvcr.io)
    _docker(tmp_path, TAGGED, DIGEST)
    data, why = _run(tmp_path, monkeypatch, f"{TAGGED}@{DIGEST}", registry_mirror=MIRROR)
    assert why == "" and data == {"ok": True, "ran": TAGGED}, why
    # the tag now names another image (moved since): not the pinned one, so it is not run
    _docker(tmp_path, TAGGED, OTHER)
    data, why = _run(tmp_path, monkeypatch, f"{TAGGED}@{DIGEST}")
    assert data is None
    assert why == (
        f"image {TAGGED}@{DIGEST} is on the host as {TAGGED} but not with the pinned digest ({OTHER});"
        " run the container step first"
    )
