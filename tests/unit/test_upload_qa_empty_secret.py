"""An encryption setting naming an environment variable that is set but empty is said as such
(not "is not set", which sends the user looking for a typo in the name)."""

from __future__ import annotations

import pytest

from gpuonboard.errors import CryptoError
from gpuonboard.transfer import crypto


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
