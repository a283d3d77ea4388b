"""The dataset scan's notes (steps/dataset/scan.py) on real trees made here."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.steps.dataset.scan import links_out, local_notes
from gpuonboard.transfer import scan_source


def _hub_snapshot(root: Path) -> Path:
    """A model as Hugging Face's cache holds it (huggingface_hub's "Manage cache" guide,
    https://huggingface.co/docs/huggingface_hub/guides/manage-cache): each file of
    `snapshots/<revision>/` is a symlink to `../../blobs/<sha256>`, and an old `--local-dir`
    download linked its big files to the cache by absolute path."""
    repo = root / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    snap = repo / "snapshots" / "2d5f4a1c"
    (snap / "sub").mkdir(parents=True)
    (repo / "blobs" / "ab12").write_bytes(b"weights")
    (repo / "blobs" / "cd34").write_text("{}")
    (snap / "model.safetensors").symlink_to("../../blobs/ab12")
    (snap / "sub" / "config.json").symlink_to("../../../blobs/cd34")
    (snap / "tokenizer.json").symlink_to(repo / "blobs" / "cd34")
    (snap / "README.md").write_text("# tiny\n")
    (snap / "latest").symlink_to("sub/config.json")  # (inside the dataset: no note)
    (snap / "here").symlink_to("sub/../README.md")
    return snap


def test_symlinks_that_lead_out_of_the_dataset_are_said_in_every_mode_that_uploads_them(
    tmp_path: Path,
) -> None:
    """A Hugging Face snapshot uploaded as the dataset: plain mode (rsync -a) and shards carry
    each link, not the blob it points to, and the message said "sent 1 file and 5 symlinks ...
    verified by sha256" with no word that the model's weights never left this machine (on the
    host every link dangles). Each link out of the dataset (climbing above its top, or absolute)
    is now named in the note; links inside it are not, nor in plain encrypted mode (which
    uploads no symlink, and says so itself)."""
    snap = _hub_snapshot(tmp_path)
    tree = scan_source(snap, hashes=False)
    assert links_out(tree) == [
        ("model.safetensors", "../../blobs/ab12"),
        ("sub/config.json", "../../../blobs/cd34"),
        ("tokenizer.json", str(tmp_path / "models--org--tiny" / "blobs" / "cd34")),
    ]
    assert local_notes(tree) == (
        "; 3 symlinks of the dataset lead out of it (e.g. 'model.safetensors' -> '../../blobs/ab12'):"
        " they are uploaded as links, what they point to is not sent (on the host a link leads to"
        " whatever is at that path there, if anything); to send that, copy it into the dataset"
        " (cp -rL) and rerun"
    )
    assert local_notes(tree, links=False) == ""
    (snap / "model.safetensors").unlink()
    (snap / "sub" / "config.json").unlink()
    assert local_notes(scan_source(snap, hashes=False)).startswith(
        f"; 1 symlink of the dataset leads out of it (e.g. 'tokenizer.json' -> '{tmp_path}/"
    )
    (snap / "tokenizer.json").unlink()
    assert local_notes(scan_source(snap, hashes=False)) == ""
