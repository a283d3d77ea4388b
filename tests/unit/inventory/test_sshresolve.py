"""Hosts resolved from the user's SSH config as OpenSSH resolves them (issue 30): `ssh -G` per
alias whenever `ssh` is installed, the own reader otherwise (refusing in one sentence what it
cannot read). The corpus under tests/fixtures/ssh_config/ is compared alias by alias with the
real `ssh -G`."""

from __future__ import annotations

import getpass
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.sshresolve import OpenSSHConfig, bad_token, expand_tokens

SSH = shutil.which("ssh")
needs_ssh = pytest.mark.skipif(SSH is None, reason="OpenSSH's ssh client is not installed")
BENCH = Path(__file__).resolve().parents[3] / "bench" / "ssh_g_agreement.py"


def _agreement() -> object:
    spec = importlib.util.spec_from_file_location("ssh_g_agreement", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ssh_g_agreement"] = module
    spec.loader.exec_module(module)
    return module


@needs_ssh
def test_every_alias_of_the_corpus_resolves_as_ssh_g_does() -> None:
    bench = _agreement()
    corpus = bench.CORPUS  # type: ignore[attr-defined]
    assert len([p for p in corpus.iterdir() if (p / "config").is_file()]) >= 20
    with_ssh, fallback, sentences = bench.compare()  # type: ignore[attr-defined]
    print(f"\n{with_ssh.agree}/{with_ssh.total} aliases agree with ssh -G (gpuonboard with ssh installed)")
    print(
        f"own reader: {fallback.agree} agree, {fallback.refused} refused in one sentence,"
        f" {len(fallback.differ)} differ, of {fallback.total}"
    )
    assert with_ssh.differ == []
    assert with_ssh.agree == with_ssh.total >= 40
    assert fallback.differ == []  # the own reader agrees, or refuses
    for sentence in sentences:
        assert "\n" not in sentence and sentence.endswith("."), sentence
        assert "/config" in sentence, sentence  # (names the file)


def _inv(tmp_path: Path, config: str, hosts: str, defaults: str = "") -> Path:
    (tmp_path / "cfg").write_text(config)
    (tmp_path / "cfg").chmod(0o600)
    d = tmp_path / "inv"
    d.mkdir(exist_ok=True)
    (d / "hosts.yml").write_text(f"ssh_config: {tmp_path / 'cfg'}\n{defaults}hosts:\n{hosts}")
    return d


@pytest.fixture
def no_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PATH without ssh: the own reader is used."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@needs_ssh
def test_wildcard_include_match_and_proxy_settings_reach_the_host(tmp_path: Path) -> None:
    (tmp_path / "more.conf").write_text("Host inc-1\n  HostName 10.9.0.1\n  Port 2200\n")
    config = (
        f"Include {tmp_path}/*.conf\n"
        "Host *.lab\n  HostName %h.example.com\n  User ops\n"
        "Host pc\n  HostName 10.9.0.2\n  ProxyCommand nc -X connect -x proxy:3128 %h %p\n"
        "Host keys\n  HostName 10.9.0.3\n  IdentityFile ~/.ssh/id_a\n  IdentityFile ~/.ssh/id_%r\n"
        "  CertificateFile ~/.ssh/id_a-cert.pub\n  User deploy\n"
        "Host chain\n  HostName 10.9.0.4\n  ProxyJump ops@b1.example.com:2222,b2.example.com\n"
        "Match host 10.9.0.3\n  Port 2201\n"
    )
    hosts = "".join(f"  {h}: {{}}\n" for h in ("inc-1", "n1.lab", "pc", "keys", "chain"))
    inv = inventory.load(_inv(tmp_path, config, hosts))
    home = os.path.expanduser(f"~{getpass.getuser()}")
    h = inv.hosts
    assert (h["inc-1"].address, h["inc-1"].port) == ("10.9.0.1", 2200)
    assert (h["n1.lab"].address, h["n1.lab"].user) == ("n1.lab.example.com", "ops")
    assert h["pc"].proxy_command == "nc -X connect -x proxy:3128 %h %p" and h["pc"].jump == ()
    assert (h["keys"].key_file, h["keys"].extra_key_files) == (
        f"{home}/.ssh/id_a",
        (f"{home}/.ssh/id_deploy",),
    )
    assert h["keys"].certificate_files == (f"{home}/.ssh/id_a-cert.pub",)
    assert h["keys"].port == 2201
    assert h["chain"].jump == ("ops@b1.example.com:2222", "b2.example.com")


@needs_ssh
def test_an_inventory_read_through_ssh_g_imports_no_paramiko(tmp_path: Path) -> None:
    """Where `ssh -G` reads the SSH config, paramiko's own parser is not imported (~60 ms before
    an upload's first byte, for nothing)."""
    import subprocess

    inv = _inv(tmp_path, "Host gpu-*\n  HostName 10.9.0.7\n  User ops\n", "  gpu-1: {}\n")
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpuonboard import inventory\n"
        f"h = inventory.load(Path({str(inv)!r})).hosts['gpu-1']\n"
        "print(h.address, h.user, 'paramiko' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "10.9.0.7 ops False"


@needs_ssh
def test_a_user_equal_to_the_local_login_still_counts_as_set_by_the_config(tmp_path: Path) -> None:
    me = getpass.getuser()
    d = _inv(
        tmp_path,
        f"Host box\n  HostName 10.0.0.1\n  User {me}\n  Port 22\n",
        "  box: {}\n",
        "defaults: {user: someone-else, port: 2222}\n",
    )
    box = inventory.load(d).hosts["box"]
    assert (box.user, box.port) == (me, 22)  # (as ssh box: the config's values, not the defaults)
    d2 = _inv(
        tmp_path,
        "Host box\n  HostName 10.0.0.1\n",
        "  box: {}\n",
        "defaults: {user: someone-else, port: 2222}\n",
    )
    box = inventory.load(d2).hosts["box"]
    assert (box.user, box.port) == ("someone-else", 2222)  # (the config sets neither)


@needs_ssh
def test_a_config_that_only_sets_keepalives_still_gives_no_address(tmp_path: Path) -> None:
    d = _inv(tmp_path, "Host *\n  ServerAliveInterval 30\n", "  other: {}\n")
    with pytest.raises(InventoryError, match="has no 'address' and no Host entry in the SSH config"):
        inventory.load(d)


@needs_ssh
def test_match_exec_runs_as_under_ssh_and_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cfg = tmp_path / "cfg"
    cfg.write_text(f'Match exec "touch {marker}"\n  HostName 10.0.0.7\nMatch exec "sleep 30"\n  Port 2\n')
    resolver = OpenSSHConfig(cfg, SSH or "ssh", timeout=1.5)
    started = time.monotonic()
    with pytest.raises(InventoryError) as err:
        resolver.lookup("box")
    assert time.monotonic() - started < 8
    assert marker.exists()  # (the user's own config: ssh box would have run it too)
    assert str(err.value) == (
        f"{cfg}: `ssh -G box` (OpenSSH reading this config) did not finish within 1.5 s, so host 'box'"
        " cannot be resolved (a `Match exec` command of the config runs there, as under `ssh box`); fix"
        " it, or give 'box' its address in the inventory."
    )


@needs_ssh
def test_a_config_ssh_refuses_is_one_sentence_with_ssh_words(tmp_path: Path) -> None:
    d = _inv(tmp_path, "Host box\n  HostName %h-%p.example\n", "  box: {}\n")
    with pytest.raises(InventoryError) as err:
        inventory.load(d)
    text = str(err.value)
    assert text.startswith(f"{tmp_path / 'cfg'}: OpenSSH cannot resolve host 'box' from this SSH config")
    assert "unknown key %p" in text and "\n" not in text


@needs_ssh
def test_a_thousand_aliases_resolve_concurrently(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.write_text("".join(f"Host gpu-{i}\n  HostName 10.0.{i // 250}.{i % 250 + 1}\n" for i in range(300)))
    resolver = OpenSSHConfig(cfg, SSH or "ssh")
    started = time.monotonic()
    resolver.prefetch(f"gpu-{i}" for i in range(300))
    assert time.monotonic() - started < 20
    assert resolver.lookup("gpu-299")["hostname"] == "10.0.1.50"


# ---------------------------------------------------------------- the own reader (no ssh)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            "Include /elsewhere/*.conf\nHost gpu-1\n  HostName 10.0.0.1\n",
            "cfg, line 1: host 'gpu-1' takes its settings from this SSH config, and without OpenSSH's"
            " `ssh` on PATH gpuonboard does not follow Include",
        ),
        (
            'Match host gpu-1 exec "true"\n  Port 2\n',
            "cfg, line 1: `Match exec` would decide the settings of host 'gpu-1'",
        ),
        ("Match localnetwork 10.0.0.0/8\n  Port 2\n", "cfg, line 1: `Match localnetwork` would decide"),
        (
            "Host gpu-1\n  HostName %h-%p.x\n",
            "cfg: host 'gpu-1' takes the HostName '%h-%p.x' from this SSH"
            " config, whose token %p OpenSSH does not expand",
        ),
        (
            "Host gpu-1\n  HostName 10.0.0.1\n  IdentityFile ~/.ssh/%C\n",
            "cfg: host 'gpu-1' takes the identityfile '~/.ssh/%C' from this SSH config, whose token %C"
            " gpuonboard's own reader does not expand",
        ),
        (
            "Host gpu-1\n  HostName 10.0.0.1\n  ProxyCommand nc %h %k\n",
            "cfg: host 'gpu-1' takes the"
            " ProxyCommand 'nc %h %k' from this SSH config, whose token %k OpenSSH does not expand there",
        ),
    ],
)
def test_what_the_own_reader_cannot_read_is_one_sentence(
    tmp_path: Path, no_ssh: None, config: str, expected: str
) -> None:
    d = _inv(tmp_path, config, "  gpu-1: {}\n")
    with pytest.raises(InventoryError) as err:
        inventory.load(d)
    text = str(err.value)
    assert text.startswith(f"{tmp_path}/{expected}"), text
    assert "\n" not in text and text.endswith(".")


def test_the_own_reader_follows_wildcards_match_and_proxy_settings(tmp_path: Path, no_ssh: None) -> None:
    config = (
        "Host *.lab\n  HostName %h.example.com\n  User ops\n"
        "Host pc\n  HostName 10.9.0.2\n  ProxyCommand nc %h %p\n"
        "Host keys\n  HostName 10.9.0.3\n  IdentityFile /k/a\n  IdentityFile /k/b\n"
        "  CertificateFile /k/a-cert.pub\n  CertificateFile /k/other-cert.pub\n"
        "Match originalhost keys\n  Port 2201\n"
    )
    inv = inventory.load(_inv(tmp_path, config, "  n1.lab: {}\n  pc: {}\n  keys: {}\n"))
    h = inv.hosts
    assert (h["n1.lab"].address, h["n1.lab"].user) == ("n1.lab.example.com", "ops")
    assert h["pc"].proxy_command == "nc %h %p"
    assert (h["keys"].key_file, h["keys"].extra_key_files, h["keys"].port) == ("/k/a", ("/k/b",), 2201)
    assert h["keys"].certificate_files == ("/k/a-cert.pub", "/k/other-cert.pub")


def test_inventory_key_file_and_jump_beat_the_configs_extras(tmp_path: Path, no_ssh: None) -> None:
    config = (
        "Host a\n  HostName 10.0.0.1\n  IdentityFile /k/a\n  IdentityFile /k/b\n  ProxyCommand nc %h %p\n"
    )
    hosts = "  a: {key_file: /k/mine, jump: ops@b.example.com}\n"
    h = inventory.load(_inv(tmp_path, config, hosts)).hosts["a"]
    assert (h.key_file, h.extra_key_files, h.proxy_command, h.jump) == (
        "/k/mine",
        (),
        None,
        ("ops@b.example.com",),
    )


def test_tokens() -> None:
    assert expand_tokens("nc %h %p %%", {"h": "x", "p": "22", "%": "%"}, "%hp") == ("nc x 22 %", None)
    assert bad_token("a %C", "%h") == "%C"
    assert bad_token("trailing %", "%h") == "%"


def test_the_own_reader_names_the_include_it_did_not_follow(tmp_path: Path, no_ssh: None) -> None:
    """A host only an Included file describes was refused with a false "no Host entry in the
    SSH config": the own reader names the Include it does not follow."""
    (tmp_path / "more.conf").write_text("Host inc-1\n  HostName 10.9.0.1\n")
    d = _inv(tmp_path, f"Include {tmp_path}/*.conf\nHost other\n  HostName 10.9.0.9\n", "  inc-1: {}\n")
    with pytest.raises(InventoryError) as err:
        inventory.load(d)
    msg = err.value.message
    assert f"Include {tmp_path}/*.conf (line 1)" in msg and "OpenSSH" in msg and "\n" not in msg


VPC = Path(__file__).resolve().parents[2] / "fixtures" / "ssh_config" / "23-bastion-private-subnet" / "config"


@pytest.mark.parametrize("reader", ["ssh -G", "own reader"])
def test_a_configs_lax_host_key_checking_is_kept_to_be_named_in_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """The real VPC config's `Host 10.0.*.*` sets `StrictHostKeyChecking no` and
    `UserKnownHostsFile /dev/null`: not followed (gpuonboard checks host keys against its own
    known_hosts), but kept, with the file, so a refusal says why `ssh HOST` did connect."""
    if reader == "own reader":
        (tmp_path / "empty-bin").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    elif SSH is None:
        pytest.skip("OpenSSH's ssh client is not installed")
    h = inventory.load(_inv(tmp_path, VPC.read_text(), "  10.0.1.15: {}\n  bastion: {}\n")).hosts
    assert h["10.0.1.15"].host_key_note == f"{tmp_path / 'cfg'}: `StrictHostKeyChecking no` for this host"
    assert h["bastion"].host_key_note is None
