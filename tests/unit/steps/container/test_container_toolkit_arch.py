"""The NVIDIA Container Toolkit as docker uses it (its hook; csv mode on Tegra), and the image's
platform against the host's CPU (real `lscpu` and `docker info` captures)."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.container import ContainerStep, gpu_flags, parse_state, plan_from, probe_command
from gpuonboard.steps.container.pull import MANIFEST_MARK, parse_manifest
from gpuonboard.testing import add_executable

REAL = Path(__file__).parents[3] / "fixtures" / "real"
SMI_L = (REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt").read_text()
# the real `docker info` of a box with nvidia-container-toolkit 1.17.6, its `nvidia` runtime
# entry taken out: the toolkit installed, `nvidia-ctk runtime configure` never run
INFO = (REAL / "docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt").read_text()
NO_RUNTIME = INFO.replace(
    " Runtimes: runc io.containerd.runc.v2 nvidia", " Runtimes: runc io.containerd.runc.v2"
)
M = "##gpuonboard-container "
HOOK = "/usr/bin/nvidia-container-runtime-hook"


def _facts(lscpu: str | None = None) -> object:
    raw = {"os_release": ProbeOutput("ID=ubuntu\n", "", 0), "nvidia_smi_list": ProbeOutput(SMI_L, "", 0)}
    if lscpu:
        raw["lscpu"] = ProbeOutput((REAL / lscpu).read_text(), "", 0)
    return parse_facts(raw)


def _state(toolkit: str, info: str = NO_RUNTIME, cli: str = "docker") -> object:
    df = "/dev/sda1 1000000000 1 900000000 1% /"
    return parse_state(
        f"{M}user 0 root root\n{M}cdi\n{M}toolkit\n{toolkit}{M}info {cli}\n{info}\n{M}df\n{df}\n"
    )


def _settings():  # type: ignore[no-untyped-def]
    return ContainerStep({}).settings({}, None)


def test_the_toolkits_hook_without_the_runtime_entry_is_enough_for_docker() -> None:
    assert (
        " Runtimes: runc io.containerd.runc.v2 nvidia" in INFO
        and "nvidia" not in parse_state(f"{M}info docker\n{NO_RUNTIME}").info.runtimes
    )
    with_hook = _state(f"{HOOK}\nmode \n")
    plan = plan_from(with_hook, _settings(), _facts())  # type: ignore[arg-type]
    assert not plan.failed and plan.changes, plan.msg  # the GPU smoke run decides
    assert gpu_flags(with_hook) == ["--gpus", "all"]  # type: ignore[arg-type]
    # neither hook, runtime nor CDI spec: refused, with the install commands
    bare = plan_from(_state("mode \n"), _settings(), _facts())  # type: ignore[arg-type]
    assert bare.failed and "no nvidia-container-runtime-hook, no 'nvidia' runtime" in bare.msg
    assert "sudo apt-get install -y nvidia-container-toolkit" in bare.msg


def test_podman_needs_a_cdi_spec_even_with_the_hook() -> None:
    podman = '{"store": {"graphRoot": "/s"}, "host": {}, "version": {"Version": "4.3.1"}}'
    plan = plan_from(_state(f"{HOOK}\n", podman, "podman"), _settings(), _facts())  # type: ignore[arg-type]
    assert plan.failed and f"is installed ({HOOK}) but there is no nvidia CDI spec" in plan.msg
    assert "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in plan.msg


@pytest.mark.parametrize(
    ("toolkit", "flags"),
    [
        (f"{HOOK}\nmode auto\n", ["--gpus", "all"]),
        (f"{HOOK}\nmode legacy\ntegra\n", ["--gpus", "all"]),
        # Jetson: "auto" resolves to csv on a Tegra system, whose hook refuses --gpus
        (f"{HOOK}\nmode auto\ntegra\n", ["--runtime", "nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all"]),
        (f"{HOOK}\ntegra\n", ["--runtime", "nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all"]),
        (f"{HOOK}\nmode csv\n", ["--runtime", "nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all"]),
        (f"{HOOK}\nmode cdi\n", ["--runtime", "nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all"]),
    ],
)
def test_docker_gets_the_nvidia_runtime_where_the_hook_refuses_gpus(toolkit: str, flags: list[str]) -> None:
    assert gpu_flags(_state(toolkit, INFO)) == flags  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "toolkit",
    [f"{HOOK}\nmode auto\ntegra\n", f"{HOOK}\ntegra\n", f"{HOOK}\nmode csv\n", f"{HOOK}\nmode cdi\n"],
)
def test_a_hook_that_refuses_gpus_needs_the_runtime_entry_before_any_pull(toolkit: str) -> None:
    # before: the hook alone counted, gpu_flags gave `--runtime nvidia`, which docker did not
    # know, and the smoke run failed "unknown or invalid runtime name" after the (multi-GB) pull
    plan = plan_from(_state(toolkit), _settings(), _facts())  # type: ignore[arg-type]
    assert plan.failed and not plan.changes, plan.msg
    assert "which refuses docker's --gpus, and docker has no 'nvidia' runtime" in plan.msg
    assert "run `sudo nvidia-ctk runtime configure --runtime=docker` and restart docker" in plan.msg
    assert ("its 'auto' on a Tegra system" in plan.msg) == ("tegra" in toolkit and "csv" not in toolkit)
    # an nvidia CDI spec does not help: docker is given `--runtime nvidia`, not a CDI device
    with_cdi = replace(_state(toolkit), cdi_specs=("/etc/cdi/nvidia.yaml",))  # type: ignore[type-var]
    assert plan_from(with_cdi, _settings(), _facts()).failed  # type: ignore[arg-type]
    # with the entry, the plan goes on (the GPU smoke run decides)
    ready = plan_from(_state(toolkit, INFO), _settings(), _facts())  # type: ignore[arg-type]
    assert not ready.failed and ready.changes, ready.msg


def test_the_probe_finds_the_hook_on_the_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    add_executable(bin_dir, "nvidia-container-runtime-hook", "#!/bin/sh\nexit 0\n")
    for name in ("docker", "podman"):  # (no runtime answers: only the toolkit part is read)
        add_executable(bin_dir, name, f'#!/bin/sh\necho "sh: 1: {name}: not found" >&2\nexit 127\n')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(["sh", "-c", probe_command("img:1")], env=env, capture_output=True, text=True).stdout
    state = parse_state(out)
    assert state.hook == str(bin_dir / "nvidia-container-runtime-hook"), out


# ---- the image's platform against the host's CPU ----


@pytest.mark.parametrize(
    ("lscpu", "machine", "arch"),
    [
        ("lscpu__gh200-grace-neoverse-v2__aarch64.txt", "aarch64", "arm64"),
        ("lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt", "aarch64", "arm64"),
        ("lscpu__intel-xeon-16vcpu__h200-vm.txt", "x86_64", "amd64"),
    ],
)
def test_the_hosts_platform_comes_from_lscpu(lscpu: str, machine: str, arch: str) -> None:
    from gpuonboard.steps.container.planning import host_platform
    from gpuonboard.steps.container.pull import oci_arch

    assert host_platform(_facts(lscpu)) == (machine, arch)  # type: ignore[arg-type]
    assert oci_arch(machine) == arch


def _index(*arches: str) -> str:
    entries = [
        {"digest": f"sha256:{a[:2] * 32}", "size": 1, "platform": {"os": "linux", "architecture": a}}
        for a in arches
    ]
    attestation = {
        "digest": "sha256:" + "ee" * 32,
        "size": 1,
        "platform": {"os": "unknown", "architecture": "unknown"},
    }
    return f"{MANIFEST_MARK}ok\n" + json.dumps({"schemaVersion": 2, "manifests": [*entries, attestation]})


def test_an_index_is_followed_to_the_hosts_platform_or_found_without_it() -> None:
    from gpuonboard.steps.container.pull import parse_config_platform

    assert parse_manifest(_index("amd64", "arm64"), "arm64").platform_digest == "sha256:" + "ar" * 32
    missing = parse_manifest(_index("amd64"), "arm64")
    assert missing.missing == "linux/arm64" and missing.platforms == ("linux/amd64",)
    config = f'{MANIFEST_MARK}ok\n{{"architecture":"amd64","os":"linux","config":{{}}}}'
    assert parse_config_platform(config) == "linux/amd64"


def test_no_build_for_the_host_is_refused_before_the_pull_in_one_sentence() -> None:
    s = ContainerStep({}).settings({"registry_mirror": "mirror.example.cn"}, None)
    state = _state(f"{HOOK}\n", INFO)
    plan = plan_from(
        state,  # type: ignore[arg-type]
        s,
        _facts("lscpu__gh200-grace-neoverse-v2__aarch64.txt"),  # type: ignore[arg-type]
        parse_manifest(_index("amd64"), "arm64"),
    )
    assert plan.failed and plan.msg == (
        "the image at mirror.example.cn (mirror.example.cn/nvidia/pytorch:24.08-py3) has no linux/arm64"
        " build (it has linux/amd64); this host is aarch64: pull from nvcr.io (its -py3 tags are"
        " multi-arch) or have the mirror copy all platforms"
    )


def test_a_present_image_for_another_platform_is_refused() -> None:
    pinned = f"nvcr.io/nvidia/pytorch@sha256:{'ab' * 32}"
    image = f'{M}image nvcr.io/nvidia/pytorch:24.08-py3\nsha256:1234 ["{pinned}"] linux/amd64\n'
    state = parse_state(f"{M}cdi\n/etc/cdi/nvidia.yaml\n{M}info docker\n{INFO}\n{image}")
    assert state.image_platform == "linux/amd64" and state.repo_digests == (
        f"nvcr.io/nvidia/pytorch@sha256:{'ab' * 32}",
    )
    on_arm = plan_from(state, _settings(), _facts("lscpu__gh200-grace-neoverse-v2__aarch64.txt"))  # type: ignore[arg-type]
    assert on_arm.failed and "is present but is a linux/amd64 image; this host is aarch64" in on_arm.msg
    on_x86 = plan_from(state, _settings(), _facts("lscpu__intel-xeon-16vcpu__h200-vm.txt"))  # type: ignore[arg-type]
    assert not on_x86.failed


@pytest.mark.parametrize(
    ("platform", "read"),
    [
        ("/", None),
        ("linux/", None),
        ("/amd64", None),
        ("linux/arm64", "linux/arm64"),
        ("windows/amd64", "windows/amd64"),
    ],
)
def test_an_unknown_platform_keeps_the_digests(platform: str, read: str | None) -> None:
    # an image whose config has no os/architecture: `{{.Os}}/{{.Architecture}}` prints "/",
    # which was left in the JSON: it failed to parse and the digests were dropped (a re-pull,
    # or "digest differs" for an image present with the pinned digest)
    pinned = f"nvcr.io/nvidia/pytorch@sha256:{'ab' * 32}"
    state = parse_state(f'{M}image nvcr.io/nvidia/pytorch:24.08-py3\nsha256:1234 ["{pinned}"] {platform}\n')
    assert state.repo_digests == (pinned,) and state.digests == (f"sha256:{'ab' * 32}",)
    assert state.image_platform == read and state.image_id == "sha256:1234"
    assert parse_state(f"{M}image x\nsha256:1234 null {platform}\n").repo_digests == ()
    # (podman's JSON has a space after each comma: its last word is no platform)
    two = f'["{pinned}", "localhost/pytorch@sha256:{"cd" * 32}"]'
    assert len(parse_state(f"{M}image x\nsha256:1234 {two} {platform}\n").repo_digests) == 2
    assert len(parse_state(f"{M}image x\nsha256:1234 {two}\n").repo_digests) == 2


def test_a_pull_refused_for_the_platform_is_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The product's pull command, run on this machine, with a `docker` answering as docker does
    on an arm64 host for a list without its platform; the step's retry loop runs it once."""
    from types import SimpleNamespace

    from gpuonboard.connection import LocalRunner
    from gpuonboard.inventory import Host
    from gpuonboard.steps.base import Plan
    from gpuonboard.steps.container.pullrun import pull_from
    from gpuonboard.steps.container.state import Applied

    said = (REAL.parent / "container-runs" / "docker-pull__no-matching-manifest-arm64.out").read_text()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    add_executable(
        bin_dir,
        "docker",
        f"#!/bin/sh\necho pull >> {tmp_path}/pulls\nprintf '%s' {shlex.quote(said)}\nexit 1\n",
    )
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    s = ContainerStep({}).settings({"retry_backoff": "0"}, None)
    out = Applied()
    ctx = SimpleNamespace(runner=LocalRunner(Host("l", "127.0.0.1", connection="local")), progress=None)
    got = pull_from(ctx, Plan(True, "x"), s, _state(""), None, None, out)  # type: ignore[arg-type]
    assert got == "next" and out.attempts == 1 and (tmp_path / "pulls").read_text() == "pull\n"
    assert (
        out.fail
        and "has no build of it for this host's platform (no matching manifest for linux/arm64/v8" in out.fail
    )
