"""A raw probe output holding a secret of the run is masked: raw_outputs gives both the bytes
written to raw/<host>/<probe>.txt and the ones summary.json's sha256 is of (so the report still
says `verified`)."""

from __future__ import annotations

from types import SimpleNamespace

from gpuonboard import masking
from gpuonboard.report.jsonfile import raw_outputs


def test_a_secret_in_a_probe_output_is_masked() -> None:
    token = masking.Secret("ghp_s3cretRegistryToken")
    out = SimpleNamespace(stdout=f"login ok\ntoken={token.reveal()}\n", exit_code=0)
    result = SimpleNamespace(facts=SimpleNamespace(raw={"files_probe": out}, private=frozenset()))
    data, code = raw_outputs(result)["files_probe"]  # type: ignore[arg-type]
    assert token.reveal().encode() not in data
    assert data == f"login ok\ntoken={masking.MASK}\n".encode()
    assert code == 0
