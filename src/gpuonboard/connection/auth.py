"""Authentication: the login arguments of a host (SSH agent, key file with its certificate,
the SSH config's further identity files, banner and auth timeouts), its private key parsed
once per run, and why a key file cannot be used."""

from __future__ import annotations

import copy
import os
import stat
from typing import Any

from gpuonboard.connection.base import MAX_KEY_FILE_BYTES, connect_timeout, import_paramiko
from gpuonboard.inventory import Host
from gpuonboard.once import loaded_once


@loaded_once(maxsize=32)
def _load_key(path: str, mtime_ns: int) -> tuple[Any, str | None]:
    """Parse a private key file once per run, not once per host: (key, None), or (None, why it
    cannot be used: `KEY_ENCRYPTED` or the parser's reason); paramiko's own key_filename path
    then still tries it, and the agent."""
    paramiko = import_paramiko()

    unreadable = _key_file_unreadable(path)
    if unreadable is not None:
        return None, unreadable
    try:
        return paramiko.PKey.from_path(path), None
    except paramiko.PasswordRequiredException:
        return None, KEY_ENCRYPTED
    except TypeError as exc:  # cryptography's "Key is password-protected, but password was not provided"
        return None, KEY_ENCRYPTED if "password" in str(exc) else str(exc)
    except (paramiko.SSHException, OSError, ValueError):
        return None, _key_file_kind(path)


def _key_file_unreadable(path: str) -> str | None:
    """Why the file at `path` is not even read as a key (checked before reading it): not a
    regular file (a FIFO blocked the run forever), or far larger than any private key."""
    try:
        info = os.stat(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(info.st_mode):
        return "it is a directory"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_size > MAX_KEY_FILE_BYTES:
        return f"it is {info.st_size:,} bytes, and a private key is a few KiB"
    return None


KEY_FORMATS = (
    "it is in no private key format that can be read: OpenSSH's BEGIN OPENSSH PRIVATE KEY, or"
    " PEM's BEGIN RSA, EC, DSA or BEGIN PRIVATE KEY"
)


def _key_file_kind(path: str) -> str:
    """Why a key file paramiko cannot parse is no usable private key, in a few words."""
    unreadable = _key_file_unreadable(path)
    if unreadable is not None:
        return unreadable
    try:
        with open(path, "rb") as f:
            head = f.read(64).lstrip()
    except OSError as exc:
        return exc.strerror or str(exc)
    if head.startswith((b"ssh-", b"ecdsa-", b"sk-")) or b"PUBLIC KEY" in head:
        return "it holds a public key"
    return KEY_FORMATS


KEY_ENCRYPTED = "encrypted"


def key_problem_message(label: str, key_file: str, problem: str) -> str:
    """The sentence for a login that failed because key_file cannot be used as it is."""
    if problem == KEY_ENCRYPTED:
        return (
            f"host {label}: key file {key_file} is protected by a passphrase, and no SSH agent offered"
            f" it; load it into your agent (ssh-add {key_file}, with SSH_AUTH_SOCK set) and rerun"
            " (gpuonboard never asks for a passphrase)."
        )
    return (
        f"host {label}: key file {key_file} is not a private key that can be read ({problem});"
        " key_file must name the private key (e.g. ~/.ssh/id_ed25519, not the .pub file)."
    )


def _login_kwargs(host: Host) -> tuple[dict[str, Any], str | None]:
    """SSHClient.connect's login arguments for `host` (agent, key, banner and auth timeouts),
    and why its key_file cannot be used (None: it can, or there is none)."""
    kwargs: dict[str, Any] = {
        "allow_agent": host.use_agent,
        "look_for_keys": host.key_file is None,
        "banner_timeout": connect_timeout(host),
        "auth_timeout": connect_timeout(host),
    }
    key_problem: str | None = None
    if host.key_file:
        try:
            pkey, key_problem = _load_key(host.key_file, os.stat(host.key_file).st_mtime_ns)
        except OSError as exc:
            pkey, key_problem = None, exc.strerror or str(exc)
        if pkey is not None:
            kwargs["pkey"] = _with_certificate(pkey, host.key_file, host.certificate_files)
        elif key_problem == KEY_ENCRYPTED:
            kwargs["key_filename"] = [host.key_file]
        # (a file that is no key: paramiko's own reader would fail too, or stop the host with
        # UnicodeDecodeError on random bytes; the agent is still tried, then the login's
        # failure names the file and why)
    # the SSH config's further IdentityFiles, tried in order after the first (as ssh does;
    # paramiko loads each one's `-cert.pub`); one that is not there is skipped, as ssh skips it
    extra = [f for f in host.extra_key_files if _key_file_unreadable(f) is None]
    if extra:
        kwargs["key_filename"] = [*kwargs.get("key_filename", []), *extra]
    return kwargs, key_problem


def _with_certificate(pkey: Any, key_file: str, certificates: tuple[str, ...]) -> Any:
    """`pkey` with the first certificate that certifies it attached (the SSH config's
    CertificateFiles in order, then `KEY-cert.pub` next to the key, as ssh looks for it): a
    copy, since the parsed key is shared by every host using that file; `pkey` as it is when
    none does."""
    for path in (*certificates, f"{key_file}-cert.pub"):
        if _key_file_unreadable(path) is not None:
            continue
        candidate = copy.copy(pkey)
        try:
            candidate.load_certificate(path)
        except (ValueError, OSError, import_paramiko().SSHException):  # (another type, or unreadable)
            continue
        if _certifies(candidate.public_blob, pkey):
            return candidate
    return pkey


def _certifies(blob: Any, pkey: Any) -> bool:
    """Whether the OpenSSH certificate `blob` is one of `pkey` (paramiko checks the key type
    only): after its type and nonce, a certificate holds the key's own public fields."""
    if blob is None or not str(blob.key_type).endswith("-cert-v01@openssh.com"):
        return False
    paramiko = import_paramiko()
    cert = paramiko.Message(blob.key_blob)
    cert.get_text()
    cert.get_binary()
    key = paramiko.Message(pkey.asbytes())
    key.get_text()
    own = key.get_remainder()
    return bool(own) and cert.get_remainder().startswith(own)
