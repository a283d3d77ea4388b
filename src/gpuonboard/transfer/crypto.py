"""age encryption of dataset files, streaming in constant memory, cached by content hash.

age picks a fresh file key and nonce per encryption, so encrypting the same file twice
gives two different ciphertexts: a resumed upload of a re-encrypted file would throw away
every byte already sent. So each file is encrypted ONCE into
`.gpuonboard/cache/encrypted/<sha256(plaintext sha256 + recipients)>.age` and that stable
ciphertext is what rsync transfers (and resumes).

X25519 recipients stream through pyrage's `encrypt_io` (constant memory, measured ~13 MiB
RSS for a 300 MB file). A passphrase (age's scrypt recipient) streams through
`gpuonboard.transfer.agescrypt`: pyrage's passphrase API takes whole byte strings only.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import io
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard import atomicfile, interrupt, machine
from gpuonboard.errors import CryptoError
from gpuonboard.masking import Secret
from gpuonboard.transfer import agescrypt
from gpuonboard.units import rfc3339
from gpuonboard.yamlload import read_text

CHUNK = 1 << 20

MAX_IDENTITY_BYTES = 64 << 10  # an age identity file is a few lines


def sha256_file(path: Path) -> str:
    """sha256 of a file's content, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Encryption:
    """Who can decrypt: X25519 recipients (`age1...`) or one passphrase (a Secret)."""

    recipients: tuple[str, ...] = ()
    passphrase: Secret | None = None

    def __post_init__(self) -> None:
        if bool(self.recipients) == (self.passphrase is not None):
            raise CryptoError("encryption needs either age recipients or a passphrase (exactly one of them).")
        if self.recipients:
            parse_recipients(self.recipients)

    def cache_key(self, plaintext_sha256: str) -> str:
        """Stable name of the ciphertext of this plaintext for these recipients/passphrase."""
        if self.passphrase is not None:
            # the passphrase itself never reaches a file name: only a hash mixed with the content hash
            who = (
                "scrypt:" + hashlib.sha256(b"gpuonboard-age:" + self.passphrase.reveal().encode()).hexdigest()
            )
        else:
            who = "x25519:" + ",".join(sorted(self.recipients))
        return hashlib.sha256(f"{plaintext_sha256}\n{who}".encode()).hexdigest()


def parse_recipients(values: Iterable[str]) -> list[Any]:
    """`age1...` strings -> pyrage recipients; a bad one raises CryptoError naming it."""
    from pyrage import x25519

    out = []
    for value in values:
        if looks_secret(str(value)):  # (the usual mix-up: the key file's other line)
            raise CryptoError(
                "vars.age_recipients holds an age SECRET key (AGE-SECRET-KEY-1..., not shown here),"
                " where the public key goes: put the key's public key there instead (`age-keygen -y"
                " KEYFILE` prints it), keep the secret key out of the inventory, and treat it as"
                " exposed if that inventory was shared."
            )
        try:
            out.append(x25519.Recipient.from_str(str(value).strip()))
        except Exception:
            raise CryptoError(
                f"{value!r} is not an age X25519 recipient (a public key like age1...);"
                " check vars.age_recipients."
            ) from None
    return out


def looks_secret(value: str) -> bool:
    """Pure: value holds an age secret key (never to be echoed in a message)."""
    return "AGE-SECRET-KEY-" in value.upper()


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_value(name: str, setting: str, what: str, environ: Any) -> str:
    """The value of the environment variable a setting names; CryptoError when it is unset. A
    setting that is no variable name at all is most likely the secret itself pasted there: said
    without echoing it (it would reach the terminal, the run log and every report)."""
    if not ENV_NAME.fullmatch(name):
        raise CryptoError(
            f"{setting} must be the NAME of an environment variable that holds {what} (letters,"
            f" digits and _, e.g. GPUONBOARD_AGE_KEY), not {what} itself; its value is not shown here:"
            " set the name there and export that variable."
        )
    value = environ.get(name)
    if value is None:
        raise CryptoError(f"environment variable {name} ({setting}) is not set.")
    if not value:  # ("not set" sent the user looking for a typo in the name)
        raise CryptoError(f"environment variable {name} ({setting}) is set but empty; export {what} in it.")
    return str(value)


KEY_PREFIX = "AGE-SECRET-KEY-1"


def identity_keys(text: str) -> list[str]:
    """Pure: the key lines of an age identity file's text: each line stripped, blank lines and
    `#` comments dropped (whether each is a key: parse_identity). What parse_identity reads, the
    host's `age -i` is sent (shardstream.identity_prefix) and the log masks."""
    return [key for line in text.splitlines() if (key := line.strip()) and not key.startswith("#")]


def _parse_key(key: str) -> Any:
    """One key line -> a pyrage identity; CryptoError (never showing it) when it is none. Upper
    case only: pyrage reads a lower-case key too, but age on the host refuses it (`unknown
    identity type`: known only once shards reach the host)."""
    from pyrage import x25519

    if key.startswith(KEY_PREFIX):
        with contextlib.suppress(Exception):
            return x25519.Identity.from_str(key)
    raise CryptoError(
        "the age identity is not an X25519 secret key (AGE-SECRET-KEY-1..., in upper case as"
        " age-keygen writes it)."
    )


def parse_identity(text: Secret) -> list[Any]:
    """An age identity file's text (comments allowed) -> pyrage identities."""
    identities = [_parse_key(key) for key in identity_keys(text.reveal())]
    if not identities:
        raise CryptoError("the age identity file holds no key (AGE-SECRET-KEY-1...).")
    return identities


class _KeepErrors:
    """A file object pyrage reads or writes through, keeping the OSError it hit, or the
    interrupt: pyrage turns either into an EncryptError whose text is all that is left. Callers
    need an OSError's errno (a full disk on this machine is not a bug), and an interrupt (Ctrl-C,
    SIGTERM) must stop the run, not fail a step as an encryption error.

    A signal mostly comes while pyrage's own (Rust) code runs, and CPython runs its handler at
    the entry of the next Python call pyrage makes: one of these methods, before any `try:` in
    it could keep what it raises. So pyrage runs `interrupt.shielded()` (via `_through_pyrage`):
    the handler only records the signal, and `interrupt.check()` raises it here, inside the
    `try:`, where it is kept."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.error: BaseException | None = None

    def _keep(self, call: Any, *args: Any) -> Any:
        try:
            interrupt.check()
            return call(*args)
        except (OSError, KeyboardInterrupt) as exc:
            self.error = exc
            raise

    def read(self, n: int = -1) -> bytes:
        return self._keep(self.raw.read, n)

    def readinto(self, buf: Any) -> int:
        return self._keep(self.raw.readinto, buf)

    def write(self, data: bytes) -> int:
        return self._keep(self.raw.write, data)

    def flush(self) -> None:
        self._keep(self.raw.flush)


def _through_pyrage(call: Any, f: Any, out: Any, keys: list[Any]) -> None:
    """Run pyrage's encrypt_io or decrypt_io (f -> out) so that an interrupt or a failed read
    or write comes out as itself: an interrupt (first) or the OSError a read or write hit, not
    pyrage's wrapping of it. A signal that comes after pyrage's last call into Python is raised
    as it returns."""
    src, dst = _KeepErrors(f), _KeepErrors(out)
    with interrupt.shielded():
        try:
            call(src, dst, keys)
        except Exception:
            kept = [e for e in (dst.error, src.error) if e is not None]  # (an interrupt first:)
            for exc in sorted(kept, key=lambda e: not isinstance(e, KeyboardInterrupt)):
                raise exc from None
            raise


def encrypt_stream(f: Any, out: Any, enc: Encryption) -> None:
    """Encrypt the open binary stream f into out, in constant memory (recipients: pyrage; a
    passphrase: agescrypt, the same age format). A read or write that fails raises its own
    OSError (errno intact), whichever library encrypted; a signal, its own exception."""
    if enc.passphrase is not None:
        agescrypt.encrypt_io(f, out, enc.passphrase.reveal())
        return
    import pyrage

    _through_pyrage(pyrage.encrypt_io, f, out, parse_recipients(enc.recipients))


def encrypt_file(src: Path | bytes, dst: Path, enc: Encryption) -> None:
    """Encrypt src (a file, or bytes in memory) to dst (temp file + rename, so dst is never a
    partial ciphertext)."""

    with (
        atomicfile.replacing(dst, temp_prefix(".enc.")) as out,
        io.BytesIO(src) if isinstance(src, bytes) else src.open("rb") as f,
    ):
        encrypt_stream(f, out, enc)


def decrypt_file(
    src: Path, dst: Path, identity: Secret | None = None, passphrase: Secret | None = None
) -> None:
    """Decrypt src to dst; a wrong key or a tampered/truncated file raises CryptoError, no dst left."""
    import pyrage

    with atomicfile.replacing(dst, ".dec.") as out:
        try:
            with src.open("rb") as f:
                if passphrase is not None:
                    agescrypt.decrypt_io(f, out, passphrase.reveal())
                else:
                    assert identity is not None
                    _through_pyrage(pyrage.decrypt_io, f, out, parse_identity(identity))
        except (pyrage.DecryptError, agescrypt.AgeError, OSError) as exc:  # pyrage: a bad chunk is OSError
            raise CryptoError(
                f"cannot decrypt {src}: {exc} (wrong identity, or a tampered or truncated ciphertext)."
            ) from None


def decrypt_bytes(data: bytes, identity: Secret | None = None, passphrase: Secret | None = None) -> bytes:
    """Decrypt a small age file held in memory (a manifest); CryptoError when it cannot be."""
    import pyrage

    try:
        if passphrase is not None:
            out = io.BytesIO()
            agescrypt.decrypt_io(io.BytesIO(data), out, passphrase.reveal())
            return out.getvalue()
        assert identity is not None
        return bytes(pyrage.decrypt(data, parse_identity(identity)))
    except (pyrage.DecryptError, agescrypt.AgeError, OSError, ValueError) as exc:
        raise CryptoError(f"cannot decrypt: {exc}") from None


def sidecar(path: Path) -> Path:
    """Where the sha256 of a cached ciphertext is kept (written when it was made)."""
    return path.with_name(path.name + ".sha256")


def ciphertext_sha256(path: Path) -> str:
    """sha256 of a cached ciphertext: from its sidecar when present, else computed."""
    try:
        text = sidecar(path).read_text().strip()
        if len(text) == 64:
            return text
    except OSError:
        pass
    return sha256_file(path)


class ChangedWhileEncrypting(OSError):
    """A dataset file was written to while it was being encrypted (its ciphertext would be part
    old, part new: a content that never was on disk)."""


class _HashingReader:
    """Reads a file in CHUNK pieces for the encryptor (which asks for 8 KiB at a time) while one
    other thread hashes those very pieces, in order: the hash is of exactly the bytes encrypted
    (a second reader of the file saw other bytes when it was written to meanwhile, and the cache
    kept that ciphertext under the other content's hash), and costs no wall time. At most
    `ahead` pieces wait for the hasher (constant memory)."""

    def __init__(self, raw: Any, pool: Any, ahead: int = 4) -> None:
        self.raw, self.pool, self.ahead = raw, pool, ahead
        self.h = hashlib.sha256()
        self.pending: collections.deque[Any] = collections.deque()
        self.buf = memoryview(b"")

    def read(self, n: int = -1) -> bytes:
        if not self.buf:
            chunk = self.raw.read(CHUNK)
            if not chunk:
                return b""
            self.pending.append(self.pool.submit(self.h.update, chunk))
            if len(self.pending) > self.ahead:
                self.pending.popleft().result()
            self.buf = memoryview(chunk)
        n = len(self.buf) if n < 0 else min(n, len(self.buf))
        out, self.buf = bytes(self.buf[:n]), self.buf[n:]
        return out

    def readinto(self, buf: Any) -> int:
        data = self.read(len(buf))
        buf[: len(data)] = data
        return len(data)

    def hexdigest(self) -> str:
        while self.pending:
            self.pending.popleft().result()
        return self.h.hexdigest()


def encrypt_to_cache(
    src: Path, enc: Encryption, cache_dir: Path, started: Callable[[Path], None] | None = None
) -> tuple[str, Path]:
    """Encrypt src into a temp file (`started(temp)` is called once it exists, empty: a caller
    may send it while it grows) while another thread hashes the plaintext bytes it reads
    (two cores, so the hash costs no wall time), then name the ciphertext by its cache key
    (plaintext hash + recipients). When that name exists already the existing (stable)
    ciphertext is kept and the new one dropped. -> (plaintext sha256, path). A file whose size
    or mtime moved while it was read raises ChangedWhileEncrypting (nothing cached). The
    ciphertext's own sha256 is noted later by `note_sha256` (the caller runs it while the upload
    goes on)."""
    from concurrent.futures import ThreadPoolExecutor

    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=temp_prefix(".enc."))
    try:
        with (
            ThreadPoolExecutor(max_workers=1) as pool,
            os.fdopen(fd, "wb") as raw,
            src.open("rb", buffering=0) as f,
        ):
            if started is not None:
                started(Path(tmp))
            before = os.fstat(f.fileno())
            reader = _HashingReader(f, pool)
            encrypt_stream(reader, raw, enc)
            plain = reader.hexdigest()
            after = os.fstat(f.fileno())
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            raise ChangedWhileEncrypting(
                errno.EAGAIN, "changed while it was being encrypted (its size or mtime moved)", str(src)
            )
        final = cache_dir / f"{enc.cache_key(plain)}.age"
        if final.is_file():
            Path(tmp).unlink(missing_ok=True)
            return plain, final
        sidecar(final).unlink(missing_ok=True)
        os.replace(tmp, final)
        return plain, final
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def note_sha256(path: Path) -> str:
    """Compute a cached ciphertext's sha256 and note it in its sidecar (when none is there)."""
    side = sidecar(path)
    if side.is_file():
        return ciphertext_sha256(path)
    digest = sha256_file(path)
    atomicfile.write_text(side, digest + "\n", mode=0o666)
    return digest


def load_encryption(
    recipients: Sequence[str] | str | None, passphrase_env: str | None, environ: Any = os.environ
) -> Encryption:
    """Settings -> Encryption: recipients (list or comma text), else the passphrase env var."""
    if isinstance(recipients, str):
        recipients = [r for r in recipients.replace(",", " ").split() if r]
    if recipients:
        return Encryption(recipients=tuple(str(r) for r in recipients))
    if passphrase_env:
        value = env_value(str(passphrase_env), "vars.age_passphrase_env", "the passphrase", environ)
        return Encryption(passphrase=Secret(value))
    raise CryptoError(
        "--encrypt needs vars.age_recipients (age1... public keys) or vars.age_passphrase_env"
        " (the name of an environment variable holding the passphrase)."
    )


def load_identity(identity_env: str | None, identity_file: str | None, environ: Any = os.environ) -> Secret:
    """The age identity for --decrypt-on-host: an env var's value, else a local key file."""
    if identity_env:
        secret = Secret(env_value(str(identity_env), "vars.age_identity_env", "the age identity", environ))
    elif identity_file:
        if looks_secret(str(identity_file)):  # (the key pasted where its file's path goes)
            raise CryptoError(
                "vars.age_identity_file holds an age secret key (not shown here) where the path of"
                " a local key file goes: save the key in a file (chmod 600) and name that file there"
                " (or use vars.age_identity_env), and treat the key as exposed if that inventory was"
                " shared."
            )
        path = Path(os.path.expanduser(identity_file))
        try:
            mode = path.stat().st_mode & 0o777
        except OSError as exc:
            raise CryptoError(f"cannot read the age identity file {identity_file}: {exc.strerror}.") from None
        # a regular file of at most 64 KiB, UTF-8 (random bytes, a FIFO or a huge file: one sentence)
        secret = Secret(read_text(path, CryptoError, "age identity", limit=MAX_IDENTITY_BYTES))
        if refused := machine.exposed("the age identity file", identity_file, mode, "a private key"):
            raise CryptoError(refused)
    else:
        raise CryptoError(
            "--decrypt-on-host needs vars.age_identity_file (a local key file) or vars.age_identity_env."
        )
    parse_identity(secret)
    # each key line a secret of its own too: masking the whole file's text (comments and all)
    # missed a key line quoted alone (an error message, a log line)
    _KEY_LINES.update(Secret(key) for key in identity_keys(secret.reveal()))
    return secret


_KEY_LINES: set[Secret] = set()  # (shell keeps secrets weakly: these stay alive; once per key)


def identity_matches(identity: Secret, recipients: Iterable[str]) -> bool:
    """Whether one of the identity's keys is one of the recipients (else every file encrypted
    to them is one the host cannot decrypt with it: known before a byte is sent)."""
    wanted = {str(r).strip() for r in recipients}
    return any(str(i.to_public()) in wanted for i in parse_identity(identity))


def temp_prefix(kind: str) -> str:
    """A temp file's name prefix naming this machine and process (`.enc.<machine>-<pid>.`), so
    that a later run can tell a killed run's leftovers (SIGKILL: no cleanup ran) from a live one's."""
    return f"{kind}{machine.tag(length=8)}-{os.getpid()}."


def sweep_dead_temps(cache_dir: Path, kinds: tuple[str, ...] = (".enc.", ".stream.")) -> int:
    """Remove the temp files in cache_dir of this machine's processes that have ended (a
    ciphertext half-written by a killed run: up to the size of the file being encrypted); other
    machines' are never touched (their pids mean nothing here). -> how many."""
    removed = 0
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return 0
    mine = machine.tag(length=8) + "-"
    for name in names:
        kind = next((k for k in kinds if name.startswith(k)), None)
        who = name[len(kind) :].split(".", 1)[0] if kind else ""
        pid = who[len(mine) :] if who.startswith(mine) else ""
        if not pid.isdecimal() or int(pid) == os.getpid() or not machine.process_ended(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(cache_dir, name))
            removed += 1
    return removed


DEFAULT_KEY_FILE = "~/.config/gpuonboard/age-key.txt"  # where `keys.new` writes, unless --file
KEY_RECIPE = (
    f"make a key pair with `gpuonboard keys.new` (it writes {DEFAULT_KEY_FILE}, mode 600, and prints"
    " the age_recipients and age_identity_file lines to add to the host's vars in the inventory)"
)


def check_upload_keys(host_vars: Any, decrypt_on_host: bool, environ: Any = os.environ) -> None:
    """Before any connection: the keys an encrypted upload of this host needs are there and
    usable (recipients or the passphrase variable; with decrypt_on_host, an identity that is
    one of the recipients). A missing key failed the upload only after connecting."""
    enc = load_encryption(host_vars.get("age_recipients"), host_vars.get("age_passphrase_env"), environ)
    if not decrypt_on_host or not enc.recipients:  # (a passphrase with it: the step's own sentence)
        return
    identity = load_identity(host_vars.get("age_identity_env"), host_vars.get("age_identity_file"), environ)
    if not identity_matches(identity, enc.recipients):
        where = "vars.age_identity_env" if host_vars.get("age_identity_env") else "vars.age_identity_file"
        raise CryptoError(
            f"wrong identity: the age key in {where} is not one of vars.age_recipients, so the host could"
            " not decrypt what would be sent; fix one of them, then rerun (nothing was sent)."
        )


def missing_keys(message: str) -> bool:
    """Pure: whether a CryptoError sentence says a key is not configured at all (the sentence
    then ends with KEY_RECIPE), not that a configured one is wrong."""
    return message.startswith(("--encrypt needs", "--decrypt-on-host needs"))


def new_key_pair(path: Path) -> str:
    """Write a new age X25519 identity to `path` in age-keygen's format (mode 600, parents
    made 700; an existing file is never replaced) and return its public key (the recipient)."""
    from pyrage import x25519

    identity = x25519.Identity.generate()
    recipient = str(identity.to_public())
    created = rfc3339()
    text = f"# created: {created}\n# public key: {recipient}\n{identity}\n"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return recipient
