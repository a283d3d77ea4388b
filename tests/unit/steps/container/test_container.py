"""Pure parts of the container step: image references, the probe parser and the plan."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuonboard import masking
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import StepArgsError
from gpuonboard.steps.container import (
    _MARK,
    _PULL_TIMED_OUT,
    ContainerStep,
    ImageRef,
    _credentials,
    gpu_check_command,
    host_gpu_count,
    mirror_host,
    parse_ref,
    parse_state,
    plan_from,
    pull_command,
    read_credentials_file,
)
from gpuonboard.testing.hosts import process_alive

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


# An image reference the docker grammar refuses is a clear error when the settings are read,
# not a pull retried with backoff that could only fail (`foo:bar/x`: a port that is no number).


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("foo:bar/x", "the registry 'foo:bar' must be a host name with an optional numeric port"),
        ("nvcr.io:99999/nvidia/pytorch:24.08-py3", "the registry 'nvcr.io:99999' must be a host name"),
        ("nvcr.io:/nvidia/pytorch", "the registry 'nvcr.io:' must be a host name"),
        ("nvidia/pytorch:24.08:py3", "a ':' may stand only before the tag and in the registry's port"),
        ("nvcr.io/nvidia//pytorch:24.08-py3", "an empty path component"),
        ("nvcr.io/nvidia/-pytorch:24.08-py3", "the path component '-pytorch' must be lowercase letters"),
        ("nvcr.io/nvidia/pytorch.:24.08-py3", "the path component 'pytorch.' must be lowercase letters"),
    ],
)
def test_a_reference_the_grammar_refuses_is_named_with_why(ref: str, why: str) -> None:
    with pytest.raises(StepArgsError) as err:
        parse_ref(ref)
    assert str(err.value).startswith(
        f"{ref!r} is not an image reference like nvcr.io/nvidia/pytorch:24.08-py3 ("
    )
    assert why in str(err.value)


@pytest.mark.parametrize(
    ("ref", "parsed"),
    [
        ("nvcr.io/nvidia/pytorch:24.08-py3", ImageRef("nvcr.io", "nvidia/pytorch", "24.08-py3", None)),
        ("localhost:5000/a/b:c", ImageRef("localhost:5000", "a/b", "c", None)),
        (
            "127.0.0.1:5000/nvidia/pytorch:tiny-py3",
            ImageRef("127.0.0.1:5000", "nvidia/pytorch", "tiny-py3", None),
        ),
        ("my_org/my__img:1", ImageRef(None, "my_org/my__img", "1", None)),
        (
            "harbor.corp/nvcr-proxy/nvidia/py---torch",
            ImageRef("harbor.corp", "nvcr-proxy/nvidia/py---torch", None, None),
        ),
        ("ubuntu", ImageRef(None, "ubuntu", None, None)),
    ],
)
def test_valid_references_still_parse(ref: str, parsed: ImageRef) -> None:
    assert parse_ref(ref) == parsed


# Step `container` QA: the registry credentials file never puts a password into an error
# message (PyYAML quotes the text it stopped at), and a password YAML reads as a number, a
# true/false value or a date is refused instead of being sent as another string.

SECRET = "Secr3tPW9"


def _read(tmp_path: Path, password: str) -> object:
    f = tmp_path / "registries.yml"
    f.write_text(f"nvcr.io:\n  username: $oauthtoken\n  password: {password}\n")
    f.chmod(0o600)
    return read_credentials_file(f, tmp_path, "nvcr.io")


@pytest.mark.parametrize(
    "password", [f"*{SECRET}", f"!{SECRET}", f"!!{SECRET}", f"!a!{SECRET}", f'"{SECRET}']
)
def test_invalid_yaml_never_quotes_the_password(tmp_path: Path, password: str) -> None:
    got = _read(tmp_path, password)
    assert isinstance(got, str), got
    assert SECRET not in got and "Secr3t" not in got
    assert got.startswith(f"registry credentials file {tmp_path / 'registries.yml'}, line ")
    assert "invalid YAML" in got and "password: '...'" in got


@pytest.mark.parametrize(
    ("password", "kind"),
    [
        ("0123", "number"),
        ("3.14", "number"),
        ("12:30", "number"),
        ("yes", "true/false value"),
        ("2024-01-02", "date"),
    ],
)
def test_a_password_yaml_reads_as_no_text_is_refused(tmp_path: Path, password: str, kind: str) -> None:
    got = _read(tmp_path, password)
    assert got == (
        f"registry credentials file {tmp_path / 'registries.yml'}: the password for nvcr.io is read as a"
        f" {kind}, not as text (YAML turns 0123 into 83, yes into true); put it in single quotes:"
        " password: '...'"
    )
    assert password not in str(got).split("(YAML turns")[0]


def test_a_quoted_password_is_read_as_written(tmp_path: Path) -> None:
    got = _read(tmp_path, "'0123'")
    assert isinstance(got, tuple)
    user, password = got
    assert user == "$oauthtoken" and isinstance(password, masking.Secret) and password.reveal() == "0123"
    got = _read(tmp_path, f"'*{SECRET}'")
    assert isinstance(got, tuple) and got[1].reveal() == f"*{SECRET}"


@pytest.mark.parametrize(
    "key", ["harbor.corp:8443", "harbor.corp:8443/nvcr-proxy", "https://Harbor.Corp:8443/nvcr-proxy/"]
)
def test_the_mirror_entry_is_found_as_registry_mirror_names_it(tmp_path: Path, key: str) -> None:
    """The file's key may be the registry_mirror value itself (with its /prefix) or the host:
    docker logs in per host; missing the entry would pull anonymously and fail as unauthorized."""
    f = tmp_path / "registries.yml"
    f.write_text(f"'{key}':\n  username: robot\n  password: '{SECRET}'\n")
    f.chmod(0o600)
    s = ContainerStep({}).settings(
        {"registry_mirror": "https://harbor.corp:8443/nvcr-proxy", "registry_credentials_file": str(f)}, None
    )
    assert s.login_registry == "harbor.corp:8443"
    got = read_credentials_file(f, tmp_path, s.login_registry)
    assert isinstance(got, tuple) and got[0] == "robot" and got[1].reveal() == SECRET
    # another host's entry is never used for this mirror
    assert read_credentials_file(f, tmp_path, "harbor.corp:9443") is None


# Step `container` QA: the GPU smoke run asks each engine for the GPUs the way it honours:
# docker `--gpus all`, podman (also behind the `docker` shim) the CDI device nvidia.com/gpu=all,
# as podman 4 accepts `--gpus` and ignores it. Also: a host whose nvidia-smi failed has an
# unknown GPU count, recorded as no passed smoke run.

PODMAN_INFO = '{"store": {"graphRoot": "/s"}, "host": {}, "version": {"Version": "4.3.1"}}'
DOCKER_INFO = '{"ServerVersion": "27.1.1", "DockerRootDir": "/var/lib/docker", "Runtimes": {"nvidia": {}}}'


def _state(cli: str, info: str) -> object:
    return parse_state(f"{_MARK}cdi\n/etc/cdi/nvidia.yaml\n{_MARK}info {cli}\n{info}\n")


def _run_flags(command: str) -> list[str]:
    argv = shlex.split(command)
    return argv[argv.index("run") + 2 : argv.index("run") + 4]


def test_podman_gets_the_cdi_device_and_docker_gets_gpus_all() -> None:
    podman = _state("podman", PODMAN_INFO)
    shim = _state("docker", PODMAN_INFO)  # podman-docker: `docker info` answers podman's JSON
    docker = _state("docker", DOCKER_INFO)
    assert _run_flags(gpu_check_command(podman, "img", 1)) == ["--device", "nvidia.com/gpu=all"]  # type: ignore[arg-type]
    assert _run_flags(gpu_check_command(shim, "img", 1)) == ["--device", "nvidia.com/gpu=all"]  # type: ignore[arg-type]
    assert _run_flags(gpu_check_command(docker, "img", 1)) == ["--gpus", "all"]  # type: ignore[arg-type]


def test_a_failed_nvidia_smi_is_an_unknown_gpu_count_never_a_recorded_pass() -> None:
    broken = parse_facts(
        {
            "nvidia_smi": ProbeOutput("Failed to initialize NVML: Driver/library version mismatch\n", "", 18),
            "os_release": ProbeOutput("ID=ubuntu\n", "", 0),
        }
    )
    none = parse_facts({"os_release": ProbeOutput("ID=ubuntu\n", "", 0)})  # nvidia-smi not installed
    assert host_gpu_count(broken) is None and host_gpu_count(none) == 0
    s = ContainerStep({}).settings({}, None)
    # a pass recorded while the box had no driver (gpus=0) does not make a broken driver `ok`
    state = parse_state(
        f"{_MARK}smoke\npodman /s sha256:1234 gpus=0\n{_MARK}info podman\n{PODMAN_INFO}\n"
        f'{_MARK}image\nsha256:1234 ["nvcr.io/nvidia/pytorch@sha256:{"ab" * 32}"]\n'
    )
    assert not plan_from(state, s, none).changes
    plan = plan_from(state, s, broken)
    assert plan.changes and "no smoke run has passed for it on this host" in plan.msg


# The container step's remote pull wrapper stops the pull when its session ends early.
#
# Run here with `sh -c` as the SSH server would run it: the client going away (Ctrl-C or
# SIGTERM of gpuonboard, a dropped link) shows on the host only as the channel's pipes being
# closed by sshd, which sends no signal to a command without a tty; a Ctrl-C with `connection:
# local` is a SIGINT to the terminal's process group. Either way the stand-in `docker pull`
# (silent, hanging) and the temporary auth dir of the registry login must be gone at once.

STATE = parse_state('##gpuonboard-container info docker\n{"DockerRootDir": "/var/lib/docker"}\n')


def _start(tmp_path: Path, login: bool) -> tuple[subprocess.Popen[bytes], list[int], str]:
    """The pull command with a stand-in `docker` whose pull hangs; -> (process, the stand-in's
    pid and its child's, the temporary auth dir or '-')."""
    tmp_path.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stalled = tmp_path / "stalled"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = pull ]; then\n'
        "  sleep 300 &\n"
        f'  echo "$$ $! ${{DOCKER_CONFIG:--}}" > {stalled}.tmp && mv {stalled}.tmp {stalled}\n'
        "  wait; exit 1\n"
        "fi\n"
        'cat >/dev/null; echo "Login Succeeded"\n'
    )
    docker.chmod(0o755)
    runtime = tmp_path / "run"
    runtime.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(runtime)}
    cmd = pull_command(STATE, "registry.example:5000/a:b", ("u1", "registry.example:5000") if login else None)
    proc = subprocess.Popen(
        ["sh", "-c", cmd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own process group: a terminal's Ctrl-C reaches it alone
    )
    assert proc.stdin is not None
    proc.stdin.write(b"SECRET-PW\n")
    proc.stdin.close()
    deadline = time.monotonic() + 10
    while not stalled.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stalled.exists(), "the stand-in pull never started"
    pid, child, auth_dir = stalled.read_text().split()
    pids = [int(pid), int(child)]
    assert all(process_alive(p) for p in pids)
    if login:
        assert Path(auth_dir).is_dir() and Path(auth_dir).parent == runtime
    return proc, pids, auth_dir


def _gone_soon(pids: list[int], auth_dir: str, seconds: float = 5.0) -> tuple[list[int], bool]:
    """Wait until the pids are gone and the auth dir removed; -> (pids alive, dir left)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(process_alive(p) for p in pids) and not (auth_dir != "-" and Path(auth_dir).exists()):
            break
        time.sleep(0.05)
    left = [p for p in pids if process_alive(p)]
    for p in left:  # nothing stays behind for the next test
        os.kill(p, signal.SIGKILL)
    return left, auth_dir != "-" and Path(auth_dir).exists()  # (under tmp_path: removed with it)


@pytest.mark.parametrize("login", [True, False])
def test_a_ctrl_c_of_a_local_run_stops_the_pull(tmp_path: Path, login: bool) -> None:
    proc, pids, auth_dir = _start(tmp_path, login)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=30)  # (a loaded CI machine took over 10 s once)
    left, dir_left = _gone_soon(pids, auth_dir)
    assert not left, "the pull still runs after Ctrl-C"
    assert not dir_left, "the temporary auth dir outlived Ctrl-C"
    assert proc.returncode != 0


@pytest.mark.parametrize("login", [True, False])
def test_the_pull_stops_when_its_session_closes_and_is_unchanged_when_it_ends_by_itself(
    tmp_path: Path, login: bool
) -> None:
    """A pull that ends by itself: its output (stderr folded in) on stdout, its exit code, the
    auth dir removed, no wait added. A hanging one: stopped once sshd closes the channel's
    pipes (what the host sees of a client that has gone)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(
        '#!/bin/sh\n[ "$1" = pull ] || { cat >/dev/null; exit 0; }\n'
        'echo "a1b2c3d4e5f6: Pull complete"; echo "Error: manifest unknown" >&2; exit 3\n'
    )
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(tmp_path)}
    cmd = pull_command(STATE, "registry.example:5000/a:b", ("u1", "registry.example:5000") if login else None)
    start = time.monotonic()
    r = subprocess.run(
        ["sh", "-c", cmd],
        input=b"pw\n",
        capture_output=True,
        env=env,
        timeout=30,
    )
    assert time.monotonic() - start < 0.9  # the watcher's one-second beat never delays the end
    assert r.returncode == 3
    assert r.stdout.decode().endswith("a1b2c3d4e5f6: Pull complete\nError: manifest unknown\n")
    assert not r.stderr.strip()
    assert not list(tmp_path.glob("gpuonboard-auth.*"))

    proc, pids, auth_dir = _start(tmp_path / "stalled", login)
    time.sleep(0.3)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # what sshd does when the client has gone
    proc.stderr.close()
    left, dir_left = _gone_soon(pids, auth_dir)
    proc.wait(timeout=10)
    assert not left, "the pull still runs after its session ended"
    assert not dir_left, "the temporary auth dir outlived the session"


# A pull running past `pull_timeout` is stopped by the host itself (the same watcher that stops
# it when the session ends), says so on the channel's stderr, and leaves no process and no
# temporary auth dir behind; a pull that ends in time is not touched.


@pytest.mark.parametrize("login", [True, False])
def test_a_pull_past_its_time_limit_is_stopped_on_the_host(tmp_path: Path, login: bool) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stalled = tmp_path / "stalled"
    (bin_dir / "docker").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = pull ]; then\n'
        "  sleep 300 &\n"
        f'  echo "$$ $! ${{DOCKER_CONFIG:--}}" > {stalled}.tmp && mv {stalled}.tmp {stalled}\n'
        "  wait; exit 1\n"
        "fi\n"
        'cat >/dev/null; echo "Login Succeeded"\n'
    )
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_RUNTIME_DIR": str(tmp_path)}
    cmd = pull_command(
        STATE, "registry.example:5000/a:b", ("u1", "registry.example:5000") if login else None, 2
    )
    start = time.monotonic()
    r = subprocess.run(["sh", "-c", cmd], input=b"pw\n", capture_output=True, env=env, timeout=30)
    took = time.monotonic() - start
    assert 2 <= took < 10, took
    assert r.returncode != 0
    assert _PULL_TIMED_OUT in r.stderr.decode()
    pid, child, _ = stalled.read_text().split()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(process_alive(int(p)) for p in (pid, child)):
        time.sleep(0.05)
    assert not [p for p in (pid, child) if process_alive(int(p))], "the timed-out pull still runs"
    assert not list(tmp_path.glob("gpuonboard-auth.*"))


def test_a_pull_that_ends_in_time_is_unchanged(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text('#!/bin/sh\nsleep 1.5; echo "Status: Downloaded newer image"\n')
    (bin_dir / "docker").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    r = subprocess.run(
        ["sh", "-c", pull_command(STATE, "r.example/a:b", None, 3)], capture_output=True, env=env, timeout=30
    )
    assert r.returncode == 0 and r.stdout.decode().endswith("Status: Downloaded newer image\n")
    assert _PULL_TIMED_OUT not in r.stderr.decode()
