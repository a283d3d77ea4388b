"""Round 34 (measure34c 26): seven pods' `nvidia-smi -L`, each below the pod's name (a loop of
`kubectl logs`), refused with the generic "not a recognised command output"; now the refusal says
what it saw: N listings of containers, each a container's view (api/labelled_listings.py)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api.labelled_listings import labelled_listings

from .test_offline_refusals_r13 import refused

REAL = Path(__file__).parents[2] / "fixtures" / "real"
PODS = REAL / (
    "nvidia-smi-L-per-pod__7-pods-kubectl-logs-loop-name-lines__a100-80gb-pcie-mig-1g.10gb-one-gpu__zh-tw-doc.txt"
)


def test_the_refusal_says_what_it_saw() -> None:
    said = refused(PODS)
    assert "7 `nvidia-smi -L` listings, each below a name line (`mig-single-example-1`," in said, said
    assert "all of one GPU (`GPU-9f0cc172-1db7-8b47-7302-fa9b2ade0c7b`)" in said, said
    assert "each listing that container's view of the GPUs it was given" in said, said
    assert "not a recognised command output" not in said, said


def test_one_listing_or_other_lines_are_not_so_read() -> None:
    text = PODS.read_text()
    one = text.split("\n\n", 1)[0] + "\n"
    assert labelled_listings(one) == ""  # (one listing below one name)
    assert labelled_listings(text.replace("mig-single-example-2", "some words here")) == ""
    assert labelled_listings("\n".join(line for line in text.splitlines() if "example" not in line)) == ""
