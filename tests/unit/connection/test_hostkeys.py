"""Our known_hosts reader keeps paramiko's HostKeys answers (issue 28: it holds paramiko's public
HostKeyEntry in a list of its own instead of appending to HostKeys' private entry list): for
every name, the same key per type (the first line of a type wins, a repeated line is dropped,
hashed names match), before and after a key is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import paramiko
import pytest
from rich.console import Console

from gpuonboard.connection import HostKeyPolicy, KnownHosts, fingerprint
from gpuonboard.errors import HostKeyError, PlaybookError
from gpuonboard.inventory import Host
from gpuonboard.report.terminal import print_results
from gpuonboard.results import HostResult, conclude
from gpuonboard.runner.playbook import Playbook, StepSpec, instantiate
from gpuonboard.steps.base import Check, StepResult


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    return {
        "ec1": paramiko.ECDSAKey.generate(),
        "ec2": paramiko.ECDSAKey.generate(),
        "rsa": paramiko.RSAKey.generate(1024),
    }


def _line(names: str, key: Any) -> str:
    return f"{names} {key.get_name()} {key.get_base64()}"


def _paramiko_view(path: Path, name: str) -> dict[str, bytes]:
    """What paramiko's own HostKeys (public API) answers for `name`: key blob by type."""
    found = paramiko.HostKeys(str(path)).lookup(name)
    if found is None:
        return {}
    return {t: found[t].asbytes() for t in set(found.keys())}


def _our_view(store: KnownHosts, name: str) -> dict[str, bytes]:
    return {t: k.asbytes() for t, k in store.lookup(name).items()}


NAMES = ["a.example", "b.example", "[c.example]:2222", "d.example", "e.example", "10.0.0.1"]


def test_lookups_match_paramikos_hostkeys(tmp_path: Path, keys: dict[str, Any]) -> None:
    hashed_d = paramiko.HostKeys.hash_host("d.example")
    path = tmp_path / "known_hosts"
    path.write_text(
        "\n".join(
            [
                "# a comment",
                _line("a.example", keys["ec1"]),
                _line("a.example", keys["ec2"]),  # a second key of the type: the first wins
                _line("b.example,[c.example]:2222", keys["rsa"]),
                _line("a.example,b.example", keys["ec1"]),  # a.example's copy is dropped
                _line(hashed_d, keys["ec2"]),
                _line("d.example", keys["ec1"]),  # after the hashed line: it loses
                "",
            ]
        )
    )
    store = KnownHosts(path)
    for name in NAMES:
        assert _our_view(store, name) == _paramiko_view(path, name), name
    assert _our_view(store, "d.example") == {"ecdsa-sha2-nistp256": keys["ec2"].asbytes()}


def test_lookups_match_paramikos_hostkeys_on_every_line_shape_it_reads(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    """The store reads the file without paramiko; on well-formed lines it answers as paramiko's
    HostKeys does: a tab between fields, hashed names, an RSA key under a signature name, and
    key types paramiko cannot log in with (DSA, FIDO), which it skips."""
    import base64
    import random

    ed = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, "ed25519")))
    pool = [keys["ec1"], keys["ec2"], keys["rsa"], ed]
    other = base64.b64encode(b"\0\0\0\x07ssh-dss" + bytes(40)).decode()  # (its shape is not read)
    rng = random.Random(7)
    for trial in range(300):
        lines = []
        for _ in range(rng.randint(1, 6)):
            key = rng.choice(pool)
            kind = key.get_name()
            if kind == "ssh-rsa" and rng.random() < 0.3:
                kind = rng.choice(["rsa-sha2-256", "rsa-sha2-512"])
            names = ",".join(rng.sample(["a.example", "b.example", "[c.example]:2222"], rng.randint(1, 2)))
            if rng.random() < 0.2:
                names = paramiko.HostKeys.hash_host(rng.choice(["a.example", "b.example"])) + "," + names
            sep = rng.choice([" ", "\t"])
            blob = key.get_base64()
            if rng.random() < 0.1:
                kind, blob = rng.choice(["ssh-dss", "sk-ssh-ed25519@openssh.com"]), other
            lines.append(f"{names}{sep}{kind} {blob}")
        path = tmp_path / f"known_hosts_{trial}"
        path.write_text("\n".join(lines) + "\n")
        store = KnownHosts(path)
        for name in ("a.example", "b.example", "[c.example]:2222"):
            assert _our_view(store, name) == _paramiko_view(path, name), (name, lines)


def test_a_line_whose_key_is_not_of_its_types_shape_refuses_the_file_naming_it(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    """paramiko skipped some such lines, read others padded with zero bytes (a key no server
    holds: the host's real key was then "DIFFERENT") and refused the file for the rest; each
    is now the one sentence naming its line, its text not shown."""
    import base64

    ec = base64.b64decode(keys["ec1"].get_base64())
    off_curve = ec[:-1] + bytes([ec[-1] ^ 1])  # (Y's last bit flipped: no point of P-256)
    rsa = keys["rsa"].get_base64()
    bad = {
        "cut short": ("ecdsa-sha2-nistp256", base64.b64encode(ec[:-3]).decode()),
        "another type's key": ("ecdsa-sha2-nistp256", rsa),
        "bytes after it": ("ecdsa-sha2-nistp256", base64.b64encode(ec + b"\0\0\0\0").decode()),
        "off its curve": ("ecdsa-sha2-nistp256", base64.b64encode(off_curve).decode()),
        "a plain key under a certificate's type": ("ssh-rsa-cert-v01@openssh.com", rsa),
    }
    for why, (kind, blob) in bad.items():
        path = tmp_path / "known_hosts"
        path.write_text(f"{_line('a.example', keys['ec2'])}\nb.example {kind} {blob}\n")
        with pytest.raises(
            HostKeyError, match=r"\(line 2 is no host key entry; its text is not shown\)"
        ) as err:
            KnownHosts(path)
        assert blob not in str(err.value), why


def test_keys_are_held_as_paramiko_encodes_them_and_a_tab_separated_revocation_counts(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    """Every NIST curve's key is read (each point checked on its curve); an RSA number written
    with leading zero bytes is the same key as paramiko's asbytes() gives it (it was then a false
    DIFFERENT); `@revoked<TAB>...` revokes, as OpenSSH reads it (it was ignored)."""
    import base64

    ecs = [paramiko.ECDSAKey.generate(bits=bits) for bits in (256, 384, 521)]
    fields = base64.b64decode(keys["rsa"].get_base64())
    e_at = 4 + 7  # after the type's string: e's length, e, n's length, n
    e_len = int.from_bytes(fields[e_at : e_at + 4], "big")
    n_at = e_at + 4 + e_len
    n = fields[n_at + 4 :]
    padded = fields[:n_at] + (len(n) + 2).to_bytes(4, "big") + b"\0\0" + n
    path = tmp_path / "known_hosts"
    path.write_text(
        "".join(f"{_line(f'ec{i}.example', k)}\n" for i, k in enumerate(ecs))
        + f"r.example ssh-rsa {base64.b64encode(padded).decode()}\n"
        + f"@revoked\t*\t{keys['ec1'].get_name()}\t{keys['ec1'].get_base64()}\n"
    )
    store = KnownHosts(path)
    for i, k in enumerate(ecs):
        assert _our_view(store, f"ec{i}.example") == {k.get_name(): k.asbytes()}
    assert _our_view(store, "r.example") == {"ssh-rsa": keys["rsa"].asbytes()}
    assert store.revoked(keys["ec1"]) and not store.revoked(keys["ec2"])
    policy = HostKeyPolicy("r", None, store, trust_new=False)
    policy.missing_host_key(None, "r.example", keys["rsa"])  # (accepted: the recorded key)


def test_an_rsa_certificate_line_gives_the_key_inside_and_a_revoked_certificate_is_read(
    tmp_path: Path,
) -> None:
    """`ssh-keyscan -c` prints host certificates: paramiko read an RSA one as the RSA key inside
    it (and skipped others), and so does the store; a `@revoked` certificate line loads (it
    stopped every run in a first version of the reader)."""
    import subprocess

    for kind in ("rsa", "ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(tmp_path / kind)], check=True)
    argv = ["ssh-keygen", "-q", "-s", str(tmp_path / "rsa"), "-h", "-I", "host", "-n", "h"]
    subprocess.run([*argv, str(tmp_path / "rsa.pub"), str(tmp_path / "ed25519.pub")], check=True)
    rsa_cert, ed_cert = ((tmp_path / f"{k}-cert.pub").read_text().split()[:2] for k in ("rsa", "ed25519"))
    plain, path = tmp_path / "plain", tmp_path / "known_hosts"  # (paramiko reads no markers)
    plain.write_text(f"r.example {rsa_cert[0]} {rsa_cert[1]}\ne.example {ed_cert[0]} {ed_cert[1]}\n")
    path.write_text(
        plain.read_text() + f"@revoked * {rsa_cert[0]} {rsa_cert[1]}\n@revoked * {ed_cert[0]} {ed_cert[1]}\n"
    )
    store = KnownHosts(path)
    inside = paramiko.RSAKey(filename=str(tmp_path / "rsa"))
    assert (
        _our_view(store, "r.example") == _paramiko_view(plain, "r.example") == {"ssh-rsa": inside.asbytes()}
    )
    assert _our_view(store, "e.example") == _paramiko_view(plain, "e.example") == {}


def test_reading_the_known_hosts_file_imports_no_paramiko(tmp_path: Path, keys: dict[str, Any]) -> None:
    """An upload's OpenSSH master starts, for a host whose key is recorded, before the run's
    first login; paramiko's import (~60 ms) came before it, for this file's reading alone."""
    import subprocess
    import sys

    path = tmp_path / "known_hosts"
    hashed = paramiko.HostKeys.hash_host("b.example")
    path.write_text(f"{_line('a.example', keys['ec1'])}\n{_line(hashed, keys['rsa'])}\n")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpuonboard.connection import KnownHosts, fingerprint\n"
        f"store = KnownHosts(Path({str(path)!r}))\n"
        "found = {n: sorted(store.lookup(n)) for n in ('a.example', 'b.example')}\n"
        "key = store.lookup('a.example')['ecdsa-sha2-nistp256']\n"
        "print(found, fingerprint(key), 'paramiko' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    expected = {"a.example": ["ecdsa-sha2-nistp256"], "b.example": ["ssh-rsa"]}
    assert out.stdout.strip() == f"{expected} {fingerprint(keys['ec1'])} False"


def test_a_recorded_key_is_found_at_once_and_by_the_next_run(tmp_path: Path, keys: dict[str, Any]) -> None:
    path = tmp_path / "known_hosts"
    path.write_text(_line("a.example", keys["ec1"]))  # no final newline: the store adds one
    store = KnownHosts(path)
    store.add("a.example", keys["rsa"])
    store.add("[e.example]:2222", keys["ec2"])
    again = KnownHosts(path)
    for name in [*NAMES, "[e.example]:2222"]:
        assert _our_view(store, name) == _our_view(again, name) == _paramiko_view(path, name), name
    assert set(store.lookup("a.example")) == {"ecdsa-sha2-nistp256", "ssh-rsa"}


# Regression tests for security and robustness fixes found in review.


def test_a_key_of_another_type_for_a_known_host_is_refused(tmp_path: Path) -> None:
    store = KnownHosts(tmp_path / "known_hosts")
    ed = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, "ed25519")))
    ec = paramiko.ECDSAKey.generate()
    store.add("[10.0.0.1]:2222", ed)
    policy = HostKeyPolicy("gpu-1", None, KnownHosts(tmp_path / "known_hosts"), trust_new=True)
    with pytest.raises(HostKeyError, match="DIFFERENT host key"):
        policy.missing_host_key(None, "[10.0.0.1]:2222", ec)
    # pinned to exactly that new key: accepted
    pinned = HostKeyPolicy("gpu-1", fingerprint(ec), KnownHosts(tmp_path / "known_hosts"), trust_new=False)
    pinned.missing_host_key(None, "[10.0.0.1]:2222", ec)


def _keygen(tmp_path: Path, kind: str) -> Path:
    import subprocess

    key = tmp_path / f"id_{kind}"
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)], check=True)
    return key


def test_template_probes_are_never_rendered_from_host_values() -> None:
    host = Host(name="g", address="10.0.0.1", vars={"f": "a; touch /tmp/pwn $(id)"})
    spec = StepSpec(
        "template", "t", {"src": "x.j2", "dest": "/tmp/x", "probes": {"p": "cat {{ vars.f }}"}}, 3
    )
    step = instantiate(Playbook(Path("p.yml"), "p", (spec,)), spec, host)
    assert [p.command for p in step.probes()][1] == "cat {{ vars.f }}"


def test_unquoted_mode_is_refused_before_connecting() -> None:
    host = Host(name="g", address="10.0.0.1")
    spec = StepSpec("template", "t", {"src": "x.j2", "dest": "/tmp/x", "mode": 420}, 7)
    with pytest.raises(PlaybookError, match=r"line 7: step 't': argument 'mode' must be quoted"):
        instantiate(Playbook(Path("p.yml"), "p", (spec,)), spec, host)


def test_host_text_is_not_rich_markup() -> None:
    host = Host(name="g[/x]", address="10.0.0.1")
    check = Check("foreign_processes", "none", "GPU 0: pid 1 [/x] (10 MiB)", "fail", "[bold]advice")
    result = HostResult(host, "failed", "step [/red]: x", [StepResult("gpu_health", "failed", "m", [check])])
    con = Console(record=True, width=200)
    print_results(conclude([result]), con)
    text = con.export_text()
    assert "pid 1 [/x]" in text and "[bold]advice" in text


def test_an_early_upload_connection_needs_a_recorded_key_matching_the_pin(tmp_path: Path) -> None:
    """The dataset step may open its OpenSSH master before our login only when that login's
    check would pass anyway: the key is recorded, matches the pin if one is set, and no jump
    host is involved (their keys are checked hop by hop by our login)."""
    from gpuonboard.steps.base import Warm

    store = KnownHosts(tmp_path / "known_hosts")
    ed = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path, "ed25519")))

    def warm(**kw: object) -> Warm:
        host = Host(name="gpu-1", address="10.0.0.1", port=2222, **kw)  # type: ignore[arg-type]
        return Warm(host, None, tmp_path, tmp_path / "known_hosts", False, store=store)

    assert not warm().key_known()  # first contact: wait for our login
    store.add("[10.0.0.1]:2222", ed)
    assert warm().key_known()
    assert warm(host_key=fingerprint(ed)).key_known()
    assert not warm(host_key="SHA256:" + "A" * 43).key_known()  # the pin says another key
    assert not warm(jump=("bastion",)).key_known()
    no_store = Warm(Host(name="gpu-1", address="10.0.0.1", port=2222), None, tmp_path, None, False)
    assert not no_store.key_known()


@pytest.mark.parametrize("trusted", [False, True])
def test_a_refusal_names_the_users_setting_that_would_have_accepted_the_key(
    tmp_path: Path, keys: dict[str, Any], trusted: bool
) -> None:
    """Where the user's SSH config or Ansible args say `StrictHostKeyChecking no`, `ssh HOST`
    connects and gpuonboard refuses: the refusal says which setting it did not follow (was: the
    same words as without it, the user's setting silently ignored)."""
    note = "/home/u/.ssh/config: `StrictHostKeyChecking no` for this host"
    store = KnownHosts(tmp_path / "known_hosts")
    if trusted:  # (a different key of the same type recorded: the man-in-the-middle refusal)
        store.add("[10.0.0.1]:22", keys["ec2"])
    policy = HostKeyPolicy("gpu-1", None, store, trust_new=False, note=note)
    with pytest.raises(HostKeyError) as err:
        policy.missing_host_key(None, "[10.0.0.1]:22", keys["ec1"])
    assert err.value.message.endswith(
        f" (gpuonboard does not follow {note}, which has ssh accept a host key it does not know: it"
        " never accepts one silently)."
    )


def test_a_refusal_says_ssh_would_ask_where_only_the_known_hosts_file_is_dev_null(
    tmp_path: Path, keys: dict[str, Any]
) -> None:
    """`UserKnownHostsFile /dev/null` alone (StrictHostKeyChecking left at `ask`) has ssh ask
    about the key every time, not accept it (was: "which has ssh accept a host key")."""
    note = "hosts.ini, line 2: `-o UserKnownHostsFile=/dev/null` in the ansible_ssh_args of host 'gpu-1'"
    policy = HostKeyPolicy("gpu-1", None, KnownHosts(tmp_path / "known_hosts"), trust_new=False, note=note)
    with pytest.raises(HostKeyError) as err:
        policy.missing_host_key(None, "[10.0.0.1]:22", keys["ec1"])
    assert err.value.message.endswith(
        f" (gpuonboard does not follow {note}, which has ssh forget every host key and ask about it"
        " each time: it never accepts one silently)."
    )
