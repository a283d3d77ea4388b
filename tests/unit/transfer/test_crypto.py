"""age encryption: interoperability with the `age` CLI, stable cache, clear errors."""

from __future__ import annotations

import errno
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyrage
import pytest

from gpuonboard import interrupt, machine, masking
from gpuonboard.errors import CryptoError, Terminated
from gpuonboard.masking import Secret
from gpuonboard.transfer import crypto, shardstream

needs_age = pytest.mark.skipif(shutil.which("age") is None, reason="Debian `age` not installed")


def _keypair(tmp: Path) -> tuple[Path, str]:
    from pyrage import x25519

    ident = x25519.Identity.generate()
    key = tmp / "key.txt"
    key.write_text(f"# created: test\n# public key: {ident.to_public()}\n{ident}\n")
    return key, str(ident.to_public())


def test_round_trip_and_cache_is_stable(tmp_path: Path) -> None:
    key, pub = _keypair(tmp_path)
    src = tmp_path / "plain.bin"
    src.write_bytes(b"x" * 300_000)
    enc = crypto.Encryption(recipients=(pub,))
    sha, first = crypto.encrypt_to_cache(src, enc, tmp_path / "cache")
    made = first.read_bytes()
    sha_again, again = crypto.encrypt_to_cache(src, enc, tmp_path / "cache")
    assert sha == sha_again and first == again and again.read_bytes() == made  # kept, not re-made
    out = tmp_path / "out.bin"
    crypto.decrypt_file(first, out, identity=Secret(key.read_text()))
    assert out.read_bytes() == src.read_bytes()
    # another recipient set is another cache entry
    (tmp_path / "o").mkdir()
    _, other = _keypair(tmp_path / "o")
    assert crypto.Encryption(recipients=(other,)).cache_key(sha) != enc.cache_key(sha)


@needs_age
def test_ours_decrypts_with_age_cli_and_back(tmp_path: Path) -> None:
    key, pub = _keypair(tmp_path)
    src = tmp_path / "plain.bin"
    src.write_bytes(bytes(range(256)) * 5000)
    ours = tmp_path / "ours.age"
    crypto.encrypt_file(src, ours, crypto.Encryption(recipients=(pub,)))
    out = subprocess.run(["age", "-d", "-i", str(key), str(ours)], capture_output=True, check=True)
    assert out.stdout == src.read_bytes()
    theirs = tmp_path / "theirs.age"
    subprocess.run(["age", "-r", pub, "-o", str(theirs), str(src)], check=True)
    back = tmp_path / "back.bin"
    crypto.decrypt_file(theirs, back, identity=Secret(key.read_text()))
    assert back.read_bytes() == src.read_bytes()


def test_passphrase_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "p.txt"
    src.write_bytes(b"secret data")
    enc = crypto.load_encryption(None, "PW", environ={"PW": "correct horse"})
    assert "correct horse" not in repr(enc)
    ct = tmp_path / "p.age"
    crypto.encrypt_file(src, ct, enc)
    out = tmp_path / "p.out"
    crypto.decrypt_file(ct, out, passphrase=Secret("correct horse"))
    assert out.read_bytes() == b"secret data"


def test_wrong_identity_and_tampering_are_clear_and_leave_nothing(tmp_path: Path) -> None:
    _, pub = _keypair(tmp_path)
    (tmp_path / "w").mkdir()
    wrong, _ = _keypair(tmp_path / "w")
    src = tmp_path / "plain.bin"
    src.write_bytes(b"y" * 200_000)
    ct = tmp_path / "c.age"
    crypto.encrypt_file(src, ct, crypto.Encryption(recipients=(pub,)))
    out = tmp_path / "dec" / "out.bin"
    with pytest.raises(CryptoError, match="wrong identity"):
        crypto.decrypt_file(ct, out, identity=Secret(wrong.read_text()))
    assert not out.exists() and list(out.parent.iterdir()) == []
    data = bytearray(ct.read_bytes())
    data[-100] ^= 1
    ct.write_bytes(bytes(data))
    key = tmp_path / "key.txt"
    with pytest.raises(CryptoError):
        crypto.decrypt_file(ct, out, identity=Secret(key.read_text()))
    assert list(out.parent.iterdir()) == []


def test_bad_settings_are_one_sentence() -> None:
    with pytest.raises(CryptoError, match="not an age X25519 recipient"):
        crypto.load_encryption(["ssh-rsa AAAA"], None)
    with pytest.raises(CryptoError, match="age_recipients"):
        crypto.load_encryption(None, None)
    with pytest.raises(CryptoError, match="MISSING"):
        crypto.load_encryption(None, "MISSING", environ={})
    with pytest.raises(CryptoError, match="not an X25519 secret key"):
        crypto.parse_identity(Secret("AGE-SECRET-KEY-1NOPE"))


def test_streaming_memory_is_constant(tmp_path: Path) -> None:
    """A 64 MiB file encrypts without growing the process by anything like its size."""
    import resource

    key, pub = _keypair(tmp_path)
    src = tmp_path / "big.bin"
    with src.open("wb") as f:
        for _ in range(64):
            f.write(b"\0" * (1 << 20))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    crypto.encrypt_file(src, tmp_path / "big.age", crypto.Encryption(recipients=(pub,)))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 32 * 1024


def test_encrypt_to_cache_hashes_in_the_same_pass_and_keeps_the_first(tmp_path: Path) -> None:
    key, pub = _keypair(tmp_path)
    src = tmp_path / "plain.bin"
    src.write_bytes(bytes(range(256)) * 5000)
    enc = crypto.Encryption(recipients=(pub,))
    plain, path = crypto.encrypt_to_cache(src, enc, tmp_path / "cache")
    assert plain == crypto.sha256_file(src)
    assert path == tmp_path / "cache" / f"{enc.cache_key(plain)}.age"
    assert not crypto.sidecar(path).exists()  # noted later, while the upload runs
    assert crypto.note_sha256(path) == crypto.sha256_file(path)
    assert crypto.sidecar(path).read_text().strip() == crypto.sha256_file(path)
    assert crypto.ciphertext_sha256(path) == crypto.sha256_file(path)
    first = path.read_bytes()
    again, path2 = crypto.encrypt_to_cache(src, enc, tmp_path / "cache")
    assert (again, path2) == (plain, path) and path.read_bytes() == first  # stable: never replaced
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [path.name, path.name + ".sha256"]
    out = tmp_path / "out.bin"
    crypto.decrypt_file(path, out, identity=Secret(key.read_text()))
    assert out.read_bytes() == src.read_bytes()


class _FullDisk(io.RawIOBase):
    """A sink that fails like a full disk after `room` bytes (the errno is what callers need)."""

    def __init__(self, room: int) -> None:
        self.room = room

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.room -= len(data)
        if self.room < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return len(data)


@pytest.mark.parametrize("mode", ["recipients", "passphrase"])
def test_a_full_disk_while_encrypting_keeps_its_errno(mode: str) -> None:
    """pyrage reports a failed write as EncryptError text; encrypt_stream re-raises the OSError
    itself, so the step can say "no space left on this machine" instead of an internal error."""
    import pyrage

    if mode == "recipients":
        enc = crypto.Encryption(recipients=(str(pyrage.x25519.Identity.generate().to_public()),))
    else:
        enc = crypto.Encryption(passphrase=Secret("correct horse"))
    with pytest.raises(OSError) as failed:
        crypto.encrypt_stream(io.BytesIO(b"x" * 1_000_000), _FullDisk(200_000), enc)
    assert failed.value.errno == errno.ENOSPC


class _SignalledSource(io.RawIOBase):
    """A plaintext whose third read is when a signal reaches this process (Ctrl-C, `kill`):
    the handler runs in that read, the only Python code that runs while pyrage encrypts."""

    def __init__(self, sig: signal.Signals) -> None:
        self.sig, self.reads = sig, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        self.reads += 1
        if self.reads == 3:
            os.kill(os.getpid(), self.sig)
        n = min(len(buf), 64 * 1024)
        buf[:n] = b"x" * n
        return n


@pytest.mark.parametrize("mode", ["recipients", "passphrase"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_while_encrypting_stops_the_run_not_the_step(mode: str, sig: signal.Signals) -> None:
    """pyrage turned the KeyboardInterrupt (or Terminated) raised in its read into an
    EncryptError, an ordinary exception: encrypting on the main thread, a Ctrl-C would have
    failed the step as an internal error and let the run go on (today's uploads encrypt in
    worker threads, which signals never reach)."""
    if mode == "recipients":
        enc = crypto.Encryption(recipients=(str(pyrage.x25519.Identity.generate().to_public()),))
    else:
        enc = crypto.Encryption(passphrase=Secret("correct horse"))
    saved = signal.getsignal(sig)
    signal.signal(sig, interrupt.handler)  # (what the CLI installs: outside paramiko, it raises)
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            crypto.encrypt_stream(_SignalledSource(sig), io.BytesIO(), enc)
    finally:
        signal.signal(sig, saved)
    assert isinstance(caught.value, Terminated) == (sig == signal.SIGTERM)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_pyrage_runs_stops_the_run_not_the_step(sig: signal.Signals) -> None:
    """A real signal from another thread (`kill`, a terminal's Ctrl-C) while pyrage's own code
    encrypts: CPython runs the handler at the entry of pyrage's next call into Python, before
    any `try:` there, so the interrupt came out as `EncryptError: KeyboardInterrupt` (30 of 30
    runs in review) and the step failed instead of the run stopping. The plaintext and the sink
    are C objects in memory (reading a file, more of the signals land inside its read call,
    inside the `try:`, and hid the fault), so almost all the time is spent in pyrage."""
    plain = bytes(64 << 20)  # (encrypting it takes far longer than the latest signal's delay)
    enc = crypto.Encryption(recipients=(str(pyrage.x25519.Identity.generate().to_public()),))
    saved = signal.getsignal(sig)
    signal.signal(sig, interrupt.handler)
    outcomes = []
    try:
        for delay_ms in (5, 10, 20, 30, 45):
            outcome = "late"
            for _ in range(3):  # a signal that lands after the encryption ended proves nothing: again
                try:
                    outcome = _signal_during_encryption(plain, enc, sig, delay_ms / 1000)
                except KeyboardInterrupt:  # (its handler ran late, outside the helper's try: a
                    outcome = "late"  # loaded CI machine's worker had ended on it)
                    interrupt._pending = None
                    interrupt._seen.clear()
                if outcome != "late":
                    break
            outcomes.append(outcome)
    finally:
        signal.signal(sig, saved)
    want = "Terminated" if sig == signal.SIGTERM else "KeyboardInterrupt"
    # on a loaded machine the timer's thread may first run after the encryption ended (the signal
    # then lands outside it, "late"); every signal that landed inside must stop the run
    assert [o for o in outcomes if o != "late"] == [want] * sum(o != "late" for o in outcomes)
    assert outcomes.count("late") < 3, outcomes


def _signal_during_encryption(plain: bytes, enc: crypto.Encryption, sig: signal.Signals, delay: float) -> str:
    """Encrypt `plain` while a timer sends `sig` to this process after `delay` seconds: the
    interrupt's type, "finished", "late" (the signal came after the encryption ended: caught
    here, so it never reaches pytest and stops the test worker), or the exception said."""
    import threading

    timer = threading.Timer(delay, os.kill, (os.getpid(), sig))
    ended = False
    timer.start()
    try:
        try:
            crypto.encrypt_stream(io.BytesIO(plain), io.BytesIO(), enc)
            ended = True
        finally:
            timer.join()
            time.sleep(0.05)  # the handler runs at the next bytecode after the signal: here
            interrupt.check()  # (one a shielded region recorded: raised here, never in a later test)
    except KeyboardInterrupt as exc:
        return "late" if ended else type(exc).__name__
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        interrupt._pending = None  # (nothing of this test's signals is left for pytest to meet)
        interrupt._seen.clear()
    return "finished"


def test_identity_file_readable_by_others_is_refused_and_its_key_lines_are_masked(tmp_path: Path) -> None:
    """A private key readable by others is not used (as ssh does); a loaded identity's key line
    alone is masked too (the file's whole text, comments and all, was the only secret)."""
    import pyrage

    from gpuonboard import masking

    ident = pyrage.x25519.Identity.generate()
    key = tmp_path / "id.txt"
    key.write_text(f"# created: today\n# public key: {ident.to_public()}\n{ident}\n")
    key.chmod(0o644)
    with pytest.raises(crypto.CryptoError) as err:
        crypto.load_identity(None, str(key))
    assert str(err.value) == (
        f"the age identity file {key} has mode 0644, readable by others; it holds a private key,"
        f" so it was not used: chmod 600 {key}"
    )
    key.chmod(0o600)
    secret = crypto.load_identity(None, str(key))
    assert secret.reveal().endswith(f"{ident}\n")
    line = f"decrypt failed with {ident} on host h1"
    assert str(ident) not in masking.mask(line) and str(ident) not in masking.mask_written(line)


def test_mask_written_masks_escaped_forms(tmp_path: Path) -> None:
    """summary.json escapes quotes and line breaks, an HTML report escapes < and &: a secret
    holding them must still not appear in any form."""
    import html
    import json

    from gpuonboard.report.jsonfile import write_atomic

    secret = masking.Secret('pa"ss\\word\n<&>')
    doc = json.dumps({"msg": f"login failed for {secret.reveal()}"})
    page = f"<p>{html.escape(secret.reveal())}</p>"
    for name, text in (("summary.json", doc), ("report.html", page)):
        write_atomic(tmp_path / name, text)
        written = (tmp_path / name).read_text()
        assert masking.MASK in written
        for form in (secret.reveal(), json.dumps(secret.reveal())[1:-1], html.escape(secret.reveal())):
            assert form not in written, (name, form)


@pytest.mark.parametrize("kind", ["random bytes", "fifo", "huge"])
def test_an_identity_file_that_is_no_key_text_is_one_sentence(tmp_path: Path, kind: str) -> None:
    """--decrypt-on-host's key file of random bytes crashed (UnicodeDecodeError), a FIFO waited
    forever for a writer, a huge file was read whole: each is one CryptoError naming the file."""
    key = tmp_path / "id.txt"
    if kind == "fifo":
        os.mkfifo(key, 0o600)
    else:
        key.write_bytes(os.urandom(4096) if kind == "random bytes" else b"#" * (1 << 20))
        key.chmod(0o600)
    with pytest.raises(crypto.CryptoError) as err:
        crypto.load_identity(None, str(key))
    message = str(err.value)
    assert str(key) in message and "\n" not in message
    expected = {
        "random bytes": "UTF-8",
        "fifo": "not a regular file but a FIFO",
        "huge": "larger than 64 KiB",
    }
    assert expected[kind] in message, message


# The key lines of an age identity file, picked once (crypto.identity_keys) for what is parsed
# here, what the host's `age -i` is sent (shardstream.identity_prefix) and what the log masks.


def _key_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "id.txt"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_key_lines_are_the_stripped_lines_that_are_neither_blank_nor_comments() -> None:
    a, b = (str(pyrage.x25519.Identity.generate()) for _ in range(2))
    text = f"# created: today\r\n  # indented comment\n\n   \n  {a}  \r\n\t{b}\n"
    assert crypto.identity_keys(text) == [a, b]
    assert shardstream.identity_prefix(text) == f"2\n{a}\n{b}\n".encode()
    assert [str(i) for i in crypto.parse_identity(Secret(text))] == [a, b]


def test_every_key_line_the_host_is_sent_is_masked(tmp_path: Path) -> None:
    """Each key of a file with two (indented, CRLF) is a secret of its own: a line quoting one
    alone shows neither."""
    a, b = (str(pyrage.x25519.Identity.generate()) for _ in range(2))
    secret = crypto.load_identity(None, str(_key_file(tmp_path, f"# two keys\r\n  {a}\r\n{b}\r\n")))
    for key in crypto.identity_keys(secret.reveal()):
        assert key in (a, b)
        line = f"age: error with {key} on h1"
        assert key not in masking.mask(line) and key not in masking.mask_written(line)


def test_a_lower_case_key_is_refused_here_not_by_age_on_the_host(tmp_path: Path) -> None:
    """pyrage reads a key in lower case, age (what decrypts on the host) does not: the file
    passed every local check and each shard then failed on the host (`unknown identity
    type`). Refused when loaded, without showing the key."""
    ident = pyrage.x25519.Identity.generate()
    lower = str(ident).lower()
    path = _key_file(tmp_path, f"# public key: {ident.to_public()}\n{lower}\n")
    ct = tmp_path / "m.age"
    ct.write_bytes(pyrage.encrypt(b"x", [ident.to_public()]))
    age = subprocess.run(["age", "-d", "-i", str(path), str(ct)], capture_output=True, text=True)
    assert age.returncode != 0 and "unknown identity type" in age.stderr  # (what the host says)
    with pytest.raises(CryptoError) as err:
        crypto.load_identity(None, str(path))
    assert "upper case" in str(err.value) and lower not in str(err.value)
    upper = _key_file(tmp_path, f"# public key: {ident.to_public()}\n{lower.upper()}\n")
    assert crypto.identity_matches(crypto.load_identity(None, str(upper)), [str(ident.to_public())])


# A secret pasted into the wrong encryption setting is refused without echoing it: the
# message goes to the terminal, the run log, summary.json and junit.xml.


def _secret_key() -> tuple[str, str]:
    from pyrage import x25519

    ident = x25519.Identity.generate()
    return str(ident), str(ident.to_public())


@pytest.mark.parametrize("spelling", ["as is", "lower case", "with blanks"])
def test_a_secret_key_among_the_recipients_is_refused_without_showing_it(spelling: str) -> None:
    secret, public = _secret_key()
    value = {"as is": secret, "lower case": secret.lower(), "with blanks": f"  {secret}\n"}[spelling]
    with pytest.raises(CryptoError) as err:
        crypto.load_encryption([public, value], None)
    msg = str(err.value)
    assert "SECRET key" in msg and "age-keygen -y" in msg, msg
    assert secret[15:].lower() not in msg.lower(), msg
    with pytest.raises(CryptoError) as err:  # the comma-text form of the setting too
        crypto.load_encryption(f"{public},{value}", None)
    assert secret[15:].lower() not in str(err.value).lower()


def test_a_typo_in_a_recipient_is_still_named() -> None:
    with pytest.raises(CryptoError, match="'age1typo' is not an age X25519 recipient"):
        crypto.load_encryption(["age1typo"], None)


@pytest.mark.parametrize(
    ("setting", "load"),
    [
        ("vars.age_passphrase_env", lambda v, env: crypto.load_encryption(None, v, env)),
        ("vars.age_identity_env", lambda v, env: crypto.load_identity(v, None, env)),
    ],
)
def test_a_secret_pasted_where_a_variable_name_goes_is_not_echoed(setting: str, load: object) -> None:
    secret, _ = _secret_key()
    for value in ("correct horse battery staple", secret, "s3cr3t!pass"):
        with pytest.raises(CryptoError) as err:
            load(value, {})  # type: ignore[operator]
        msg = str(err.value)
        assert msg.startswith(f"{setting} must be the NAME of an environment variable"), msg
        assert value not in msg and value.split()[0] not in msg, msg
    with pytest.raises(CryptoError, match=rf"environment variable MY_KEY \({setting}\) is not set"):
        load("MY_KEY", {})  # type: ignore[operator]


def test_a_secret_key_pasted_where_the_identity_files_path_goes_is_not_echoed(tmp_path: Path) -> None:
    secret, _ = _secret_key()
    with pytest.raises(CryptoError) as err:
        crypto.load_identity(None, secret)
    assert secret[15:] not in str(err.value) and "where the path of a local key file goes" in str(err.value)
    with pytest.raises(CryptoError, match="cannot read the age identity file /nope/key.txt"):
        crypto.load_identity(None, "/nope/key.txt")


# Leftover temp files of killed runs in the ciphertext cache (real processes).


def test_only_temps_of_ended_processes_are_swept(tmp_path: Path) -> None:
    code = "import os; print(os.getpid())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    dead = int(done.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        me = machine.tag(length=8)
        names = {
            f".enc.{me}-{dead}.abc": False,
            f".stream.{me}-{dead}.xyz": False,
            f".enc.{me}-{live.pid}.abc": True,
            f".enc.{me}-{os.getpid()}.mine": True,
            f".enc.0badc0de-{dead}.other-machine": True,  # its pids mean nothing here
            "ready.age": True,
            ".enc.notapid": True,
        }
        for name in names:
            (tmp_path / name).write_bytes(b"x")
        assert crypto.sweep_dead_temps(tmp_path) == 2
        assert {p.name for p in tmp_path.iterdir()} == {n for n, keep in names.items() if keep}
        assert crypto.temp_prefix(".enc.") == f".enc.{me}-{os.getpid()}."
    finally:
        live.communicate(b"")
    assert crypto.sweep_dead_temps(tmp_path / "missing") == 0


# An encryption setting naming an environment variable that is set but empty is said as such
# (not "is not set", which sends the user looking for a typo in the name).


def test_an_empty_passphrase_variable_is_named_as_empty() -> None:
    with pytest.raises(CryptoError) as err:
        crypto.load_encryption(None, "QA_PASS", {"QA_PASS": ""})
    assert str(err.value) == (
        "environment variable QA_PASS (vars.age_passphrase_env) is set but empty;"
        " export the passphrase in it."
    )
    with pytest.raises(CryptoError, match=r"QA_PASS \(vars.age_passphrase_env\) is not set\.$"):
        crypto.load_encryption(None, "QA_PASS", {})


def test_an_empty_identity_variable_is_named_as_empty() -> None:
    with pytest.raises(CryptoError, match=r"QA_KEY \(vars.age_identity_env\) is set but empty; export the"):
        crypto.load_identity("QA_KEY", None, {"QA_KEY": ""})
