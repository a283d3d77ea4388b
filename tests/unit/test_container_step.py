"""Pure parts of the container step: image references, the probe parser and the plan."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.container import (
    ContainerStep,
    _credentials,
    mirror_host,
    parse_ref,
    parse_state,
    plan_from,
    pull_command,
)

M = "##gpuonboard-container "
DIGEST = "sha256:" + "ab" * 32


def test_image_references_split_for_mirrors() -> None:
    ref = parse_ref("nvcr.io/nvidia/pytorch:24.08-py3")
    assert (ref.registry, ref.path, ref.tag, ref.digest) == ("nvcr.io", "nvidia/pytorch", "24.08-py3", None)
    assert ref.on("mirror.example.cn:5000") == "mirror.example.cn:5000/nvidia/pytorch:24.08-py3"
    pinned = parse_ref(f"nvcr.io/nvidia/pytorch:24.08-py3@{DIGEST}")
    assert pinned.canonical == "nvcr.io/nvidia/pytorch:24.08-py3" and pinned.pull_name.endswith(DIGEST)
    assert parse_ref("127.0.0.1:5000/a/b:t").registry == "127.0.0.1:5000"
    assert parse_ref("ubuntu").canonical == "ubuntu:latest"
    assert mirror_host("https://nvcr.mirror.example.cn/") == "nvcr.mirror.example.cn"
    assert mirror_host("HTTPS://nvcr.mirror.example.cn/") == "nvcr.mirror.example.cn"
    with pytest.raises(StepArgsError):
        parse_ref("nvcr.io/x; rm -rf /")


def _facts(os_id: str = "ubuntu") -> object:
    return parse_facts({"os_release": ProbeOutput(f"ID={os_id}\n", "", 0)})


def _settings(**vars: object):  # type: ignore[no-untyped-def]
    return ContainerStep({}).settings({"image_size_estimate": "10GB", **vars}, None)


def test_probe_output_parsed_and_planned() -> None:
    text = (
        f"{M}error docker 1 Cannot connect to the Docker daemon\n{M}cdi\n/etc/cdi/nvidia.yaml\n"
        f'{M}info podman\n{{"store": {{"graphRoot": "/var/lib/containers/storage"}}, "host": {{}},'
        f' "version": {{"Version": "4.3.1"}}}}\n'
        f"{M}df\n/dev/vda 100 50 20000000 50% /\n{M}image\n"
        f'sha256:1234 ["nvcr.io/nvidia/pytorch@{DIGEST}"]\n'
        f"{M}smoke\npodman /var/lib/containers/storage sha256:1234 gpus=0\n"
    )
    state = parse_state(text)
    assert state.cli == "podman" and state.info.engine == "podman"
    assert state.errors == {"docker": "Cannot connect to the Docker daemon"}
    assert state.nvidia_toolkit and state.free_bytes == 20000000 * 1024 and state.digests == (DIGEST,)
    plan = plan_from(state, _settings(), _facts())  # type: ignore[arg-type]
    assert not plan.changes and not plan.failed and DIGEST in plan.msg
    other = parse_ref("nvcr.io/nvidia/pytorch:24.08-py3@sha256:" + "cd" * 32)
    s = _settings(container_image=f"nvcr.io/nvidia/pytorch:24.08-py3@{other.digest}")
    assert plan_from(state, s, _facts()).changes  # type: ignore[arg-type]
    small = _settings(image_size_estimate="100GB")
    absent = parse_state(text.split(f"{M}image")[0])
    plan = plan_from(absent, small, _facts())  # type: ignore[arg-type]
    assert plan.failed and "needed (image estimate 100.0 GB x 1.5" in plan.msg


def test_missing_runtime_remediation_by_os() -> None:
    state = parse_state(f"{M}error docker 127 sh: docker: not found\n{M}error podman 127 x\n{M}cdi\n")
    rhel = plan_from(state, _settings(), _facts("rocky"))  # type: ignore[arg-type]
    assert rhel.failed and "sudo dnf install -y docker-ce" in rhel.msg
    deb = plan_from(state, _settings(), _facts("debian"))  # type: ignore[arg-type]
    assert "sudo apt-get install -y docker.io" in deb.msg
    down = parse_state(f"{M}error docker 1 Cannot connect\n{M}error podman 127 x\n{M}cdi\n")
    assert "docker is installed but does not answer" in plan_from(down, _settings(), _facts()).msg  # type: ignore[arg-type]


# --- pull progress, manifests, sudo, the GPU python check -------------------------------

DOCKER_PULL = """24.08-py3: Pulling from nvidia/pytorch
aece8493d397: Already exists
45f7ea5367fe: Pulling fs layer
3d97a47c3c73: Pulling fs layer
12cca292b13c: Pulling fs layer
3d97a47c3c73: Waiting
45f7ea5367fe: Downloading [=====>     ]  10.5MB/20MB
45f7ea5367fe: Verifying Checksum
45f7ea5367fe: Download complete
45f7ea5367fe: Pull complete
3d97a47c3c73: Download complete
"""


def test_docker_pull_output_parsed() -> None:
    from gpuonboard.steps.container.pull import format_pull_progress, parse_pull_progress

    sizes = {
        "sha256:aece8493d397" + "0" * 52: 30_000_000,
        "sha256:45f7ea5367fe" + "0" * 52: 20_000_000,
        "sha256:3d97a47c3c73" + "0" * 52: 1_000_000,
        "sha256:12cca292b13c" + "0" * 52: 5_000_000,
    }
    p = parse_pull_progress(DOCKER_PULL.splitlines(), sizes)
    assert (p.layers_done, p.layers_total) == (2, 4)  # one already there, one pulled
    assert p.bytes_done == 21_000_000 and p.bytes_total == 26_000_000 and not p.finished
    assert format_pull_progress(p, 2.0) == "pull 2/4 layers, 20.0 MiB of 24.8 MiB, 10.0 MiB/s"
    # without a manifest: the Downloading line's own numbers
    q = parse_pull_progress(DOCKER_PULL.splitlines()[:7])
    assert (q.layers_done, q.layers_total, q.bytes_done) == (1, 4, 10_500_000)
    done = parse_pull_progress([*DOCKER_PULL.splitlines(), "Digest: sha256:" + "a" * 64, "Status: x"])
    assert done.finished
    assert format_pull_progress(parse_pull_progress([]), 1.0) == "pull 0/? layers"


def test_podman_pull_output_parsed() -> None:
    from gpuonboard.steps.container.pull import parse_pull_progress

    blob_a, blob_b = "a" * 64, "b" * 64
    lines = [
        "Trying to pull 127.0.0.1:5000/x:y...",
        "Getting image source signatures",
        f"Copying blob sha256:{blob_a}",
        f"Copying blob sha256:{blob_b} skipped: already exists",
    ]
    sizes = {f"sha256:{blob_a}": 100, f"sha256:{blob_b}": 50}
    p = parse_pull_progress(lines, sizes)
    assert (p.layers_done, p.layers_total, p.bytes_done, p.bytes_total) == (1, 2, 0, 100)
    p = parse_pull_progress([*lines, f"Copying blob sha256:{blob_a} done"], sizes)
    assert (p.layers_done, p.bytes_done) == (2, 100)
    p = parse_pull_progress(
        [*lines, "Copying config sha256:" + "c" * 64, "Writing manifest to image destination"]
    )
    assert p.layers_done == 2 and p.finished


def test_manifest_parsing_picks_amd64_and_sums_layers() -> None:
    import json

    from gpuonboard.steps.container.pull import MANIFEST_MARK, parse_manifest

    index = {
        "manifests": [
            {"digest": "sha256:arm", "platform": {"os": "linux", "architecture": "arm64"}},
            {"digest": "sha256:amd", "platform": {"os": "linux", "architecture": "amd64"}},
        ]
    }
    assert parse_manifest(f"{MANIFEST_MARK}ok\n{json.dumps(index)}").platform_digest == "sha256:amd"
    image = {"layers": [{"digest": "sha256:1", "size": 10}, {"digest": "sha256:2", "size": 32}]}
    assert parse_manifest(f"{MANIFEST_MARK}ok\n{json.dumps(image)}").size == 42
    assert parse_manifest(f"{MANIFEST_MARK}error unreachable\n").error == "unreachable"
    assert parse_manifest("").size is None


def test_manifest_size_drives_the_free_space_check() -> None:
    from gpuonboard.steps.container.pull import Manifest

    text = f"{M}user 1000 alice alice,sudo\n{M}cdi\n{M}info docker\n{{}}\n{M}df\n/dev/vda 1 1 1000 1% /\n"
    state = parse_state(text)
    small = Manifest(layers=(("sha256:1", 100_000),))
    plan = plan_from(state, _settings(), _facts(), small)  # type: ignore[arg-type]
    assert plan.changes and plan.diff and plan.diff["size_from"] == "manifest"
    assert plan.diff["needed_bytes"] == 300_000
    big = Manifest(layers=(("sha256:1", 10**9),))
    plan = plan_from(state, _settings(), _facts(), big)  # type: ignore[arg-type]
    assert plan.failed and "(registry manifest: 1.0 GB compressed x 3.0 for unpacking)" in plan.msg
    plan = plan_from(state, _settings(), _facts(), Manifest(error="unreachable"))  # type: ignore[arg-type]
    assert plan.failed and "manifest size unavailable (unreachable)" in plan.msg


def test_runtime_only_through_sudo() -> None:
    text = f"{M}error docker 1 permission denied while trying to connect to the Docker daemon socket\n"
    denied = parse_state(text + f"{M}error podman 127 x\n{M}user 1000 alice alice\n{M}cdi\n")
    msg = plan_from(denied, _settings(), _facts()).msg  # type: ignore[arg-type]
    assert "sudo usermod -aG docker alice" in msg and "container_sudo" in msg
    via = parse_state(text + f"{M}user 1000 alice alice\n{M}cdi\n{M}info docker sudo\n{{}}\n")
    assert via.sudo and via.access == "sudo -n"
    assert via.command(["docker", "pull", "x"]) == "sudo -n sh -c 'docker pull x'"
    plan = plan_from(via, _settings(), _facts())  # type: ignore[arg-type]
    assert plan.failed and "sudo usermod -aG docker alice" in plan.msg
    plan = plan_from(via, _settings(container_sudo=True), _facts())  # type: ignore[arg-type]
    assert (
        plan.changes
        and plan.checks[0].verdict == "warn"
        and "usermod -aG docker alice" in plan.checks[0].detail
    )
    group = parse_state(f"{M}user 1000 bob bob,docker\n{M}cdi\n{M}info docker\n{{}}\n")
    assert group.access == "docker group" and group.command(["docker", "ps"]) == "docker ps"
    assert parse_state(f"{M}user 0 root root\n{M}cdi\n{M}info docker\n{{}}\n").access == "root"


def test_credentials_file_mode_and_lookup(tmp_path: object) -> None:
    from pathlib import Path

    from gpuonboard.steps.container import read_credentials_file

    path = Path(str(tmp_path)) / "creds.json"
    path.write_text('{"https://mirror.example.cn/": {"username": "u", "password": "p@ss"}}')
    path.chmod(0o640)
    assert "mode 0640" in str(read_credentials_file(path, Path("/"), "mirror.example.cn"))
    path.chmod(0o600)
    got = read_credentials_file(path, Path("/"), "mirror.example.cn")
    assert isinstance(got, tuple) and got[0] == "u" and got[1].reveal() == "p@ss" and "p@ss" not in repr(got)
    assert read_credentials_file(path, Path("/"), "nvcr.io") is None


class _FakeTorch:
    """Just enough of torch for the GPU check's logic."""

    def __init__(self, n: int, nccl: bool = True) -> None:
        import types

        self.cuda = types.SimpleNamespace(device_count=lambda: n)
        self.distributed = types.SimpleNamespace(is_nccl_available=lambda: nccl)

    @staticmethod
    def ones(rows: int, cols: int, device: str) -> object:
        class T:
            def __matmul__(self, other: object) -> object:
                return types_ns(rows * cols * cols)

        def types_ns(total: float) -> object:
            import types

            return types.SimpleNamespace(sum=lambda: types.SimpleNamespace(item=lambda: float(total)))

        return T()


def test_gpu_python_check_checks_count_matmul_and_nccl(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from gpuonboard.steps.container import gpu_check_command, gpu_python_check

    state = parse_state(f"{M}user 1000 a a,docker\n{M}cdi\n{M}info docker\n{{}}\n")
    cmd = gpu_check_command(state, "nvcr.io/nvidia/pytorch:24.08-py3", 8)
    assert cmd.startswith("docker run --rm --gpus all nvcr.io/nvidia/pytorch:24.08-py3 python -c ")
    assert "if n != 8: sys.exit(" in cmd and "assert" not in cmd

    def run(n: int, have: int, nccl: bool = True) -> None:
        fake = _FakeTorch(have, nccl)
        mod = types.ModuleType("torch")
        mod.__dict__.update(cuda=fake.cuda, distributed=fake.distributed, ones=fake.ones)
        monkeypatch.setitem(sys.modules, "torch", mod)
        monkeypatch.setitem(sys.modules, "torch.distributed", fake.distributed)
        # optimize=2 as in an image with PYTHONOPTIMIZE set: the checks must not be asserts
        exec(compile(gpu_python_check(n), "<check>", "exec", optimize=2), {})

    run(2, 2)
    with pytest.raises(SystemExit, match="torch sees 1 GPUs, nvidia-smi lists 2"):
        run(2, 1)
    with pytest.raises(SystemExit, match="no NCCL"):
        run(2, 2, nccl=False)


def test_local_runner_streams_stdout_chunks() -> None:
    from gpuonboard.connection import LocalRunner
    from gpuonboard.inventory import Host

    chunks: list[bytes] = []
    r = LocalRunner(Host("l", "127.0.0.1", connection="local")).run(
        "printf a; cat; sleep 0.3; printf b; echo err >&2", stdin=b"-in-", on_output=chunks.append
    )
    assert r.ok and r.stdout == "a-in-b" and r.stderr == "err\n" and len(chunks) >= 2


def test_present_image_without_a_passed_smoke_run_is_smoke_run_again() -> None:
    base = (
        f'{M}info podman\n{{"store": {{"graphRoot": "/s"}}, "host": {{}},'
        f' "version": {{"Version": "4.3.1"}}}}\n'
        f"{M}df\n/dev/vda 100 50 20000000 50% /\n{M}image\n"
        f'sha256:1234 ["nvcr.io/nvidia/pytorch@{DIGEST}"]\n'
    )
    # no record (a failed or never-run smoke run): changed, a smoke run without a pull
    plan = plan_from(parse_state(base), _settings(), _facts())  # type: ignore[arg-type]
    assert plan.changes and plan.msg.startswith("smoke run nvcr.io/nvidia/pytorch:24.08-py3: present")
    # a record for another image id (re-pulled since): smoke run again
    other = base + f"{M}smoke\npodman /s sha256:9999 gpus=0\n"
    assert plan_from(parse_state(other), _settings(), _facts()).changes  # type: ignore[arg-type]
    # the record of this image: ok; smoke: false never asks for it
    good = base + f"{M}smoke\npodman /s sha256:1234 gpus=0\n"
    assert not plan_from(parse_state(good), _settings(), _facts()).changes  # type: ignore[arg-type]
    assert not plan_from(parse_state(base), _settings(smoke=False), _facts()).changes  # type: ignore[arg-type]


def test_credentials_for_the_image_registry_never_go_to_a_mirror(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pathlib import Path

    monkeypatch.setenv("U_ENV", "ngc-user")
    monkeypatch.setenv("P_ENV", "pw")
    env = {"registry_user_env": "U_ENV", "registry_password_env": "P_ENV"}
    direct = _settings(container_image="nvcr.io/nvidia/pytorch:24.08-py3", **env)
    got = _credentials(direct, Path(str(tmp_path)))
    assert isinstance(got, tuple) and got[0] == "ngc-user" and direct.login_registry == "nvcr.io"
    mirrored = _settings(registry_mirror="http://mirror.example.cn:5000", **env)
    assert _credentials(mirrored, Path(str(tmp_path))) is None  # nvcr.io's password stays home
    f = Path(str(tmp_path)) / "creds.yml"
    f.write_text("nvcr.io: {username: a, password: b}\nmirror.example.cn:5000: {username: m, password: n}\n")
    f.chmod(0o600)
    named = _settings(
        registry_mirror="https://mirror.example.cn:5000", registry_credentials_file=str(f), **env
    )
    got = _credentials(named, Path(str(tmp_path)))
    assert isinstance(got, tuple) and got[0] == "m"  # only an entry named for the mirror


def test_pull_command_logs_in_to_a_temporary_auth_dir() -> None:
    state = parse_state(f'{M}info docker\n{{"DockerRootDir": "/var/lib/docker"}}\n')
    plain = pull_command(state, "nvcr.io/a:b", None)
    assert "login" not in plain and plain.endswith("2>&1")
    cmd = pull_command(state, "nvcr.io/a:b", ("ngc-user", "nvcr.io"))
    assert "--password-stdin" in cmd and "mktemp -d" in cmd and "rm -rf" in cmd
    assert 'DOCKER_CONFIG="$d"' in cmd and "REGISTRY_AUTH_FILE=" in cmd


_FAKE_DAEMON = r"""
import http.server, json, os, socketserver, sys
path = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, body):
        b = json.dumps(body).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Api-Version", "1.43"); self.send_header("Content-Length", str(len(b)))
        self.end_headers(); self.wfile.write(b)
    def do_HEAD(self): self.reply({})
    def do_GET(self): self.reply({"ApiVersion": "1.43", "Version": "24.0.0"})
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply({"Status": "Login Succeeded", "IdentityToken": ""})
    def address_string(self): return "unix"
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer): pass
S(path, H).serve_forever()
"""


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI on this machine")
def test_a_login_never_reaches_the_platforms_credential_helper(tmp_path: Path) -> None:
    """The real docker CLI stores a login in the platform's default credential helper
    (secretservice, pass) when its config holds no auth entry: the password then outlived the
    temporary auth dir. A recording `docker-credential-secretservice` on PATH must never be
    asked to store it; the daemon is a stand-in answering the login."""
    sock = tmp_path / "d.sock"
    daemon = subprocess.Popen([sys.executable, "-c", _FAKE_DAEMON, str(sock)])
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.05)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        log = tmp_path / "helper.log"
        helper = bin_dir / "docker-credential-secretservice"
        helper.write_text(f'#!/bin/sh\necho "$1 $(cat)" >> {log}\n[ "$1" = get ] && exit 1\nexit 0\n')
        helper.chmod(0o755)
        state = parse_state(f'{M}info docker\n{{"DockerRootDir": "/var/lib/docker"}}\n')
        cmd = pull_command(state, "registry.example:5000/a:b", ("u1", "registry.example:5000"))
        env = {
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "DOCKER_HOST": f"unix://{sock}",
            "XDG_RUNTIME_DIR": str(tmp_path),
            "HOME": str(tmp_path),
        }
        r = subprocess.run(
            ["sh", "-c", cmd], input="SECRET-PW\n", env=env, capture_output=True, text=True, timeout=60
        )
        assert "Login Succeeded" in r.stdout, r.stdout + r.stderr
        said = log.read_text() if log.exists() else ""
        assert "store" not in said and "SECRET-PW" not in said, said
        assert not list(tmp_path.glob("gpuonboard-auth.*"))  # the temporary dir went
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
