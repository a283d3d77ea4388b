"""A secret pasted into the wrong encryption setting is refused without echoing it: the
message goes to the terminal, the run log, summary.json and junit.xml."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import CryptoError
from gpuonboard.transfer import crypto


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
