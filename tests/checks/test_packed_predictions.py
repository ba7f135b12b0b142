"""Parquet and gzip/zstd-compressed predictions and corpora (issue 28, item 4) under the same
rules as JSON Lines: predictions-cover-corpus, metrics-recomputed and the corpus identity of
budget-consistent; a corrupt file is a finding naming the file and the offset. Judged
in-process on the factory's campaign (the readers themselves: tests/files/test_packed.py).
"""

from __future__ import annotations

import gzip
import io
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from tests.checks.test_corpus_identity import deliver_a_copy
from tests.checks.test_metrics import findings, plan3, rendered
from tests.factory import CampaignBuilder, sha256

JSONL = "runs/variant-a/predictions.jsonl"


def parquet(jsonl: bytes) -> bytes:
    rows = [json.loads(line) for line in jsonl.splitlines() if line.strip()]
    columns = {name: [r.get(name) for r in rows] for name in dict.fromkeys(
        k for r in rows for k in r)}
    out = io.BytesIO()
    pq.write_table(pa.table(columns), out, row_group_size=2)
    return out.getvalue()


def zstd(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


PACK: dict[str, Callable[[bytes], bytes]] = {
    "p.parquet": parquet, "p.jsonl.gz": gzip.compress, "p.jsonl.zst": zstd}


def repack(campaign: CampaignBuilder, name: str, run_id: str = "variant-a",
           data: bytes | None = None) -> str:
    """Replace ``run_id``'s JSON Lines predictions by ``data`` or their copy packed as
    ``name`` says; the manifest names the new file."""
    plain = campaign.files.pop(f"runs/{run_id}/predictions.jsonl")
    path = f"runs/{run_id}/{name}"
    campaign.files[path] = PACK[name](plain) if data is None else data
    campaign.run_record(run_id)["predictions"] = path
    return path


@pytest.mark.parametrize("name", sorted(PACK))
def test_packed_predictions_cover_the_corpus(campaign: CampaignBuilder, name: str) -> None:
    repack(campaign, name)
    assert findings(campaign.write(), "predictions-cover-corpus", "variant-a") == ()


@pytest.mark.parametrize("name", sorted(PACK))
def test_packed_predictions_missing_and_repeating_ids(campaign: CampaignBuilder,
                                                       name: str) -> None:
    ids = ["ex-1", "ex-2", "ex-2", "ex-4"]
    rows = "".join(json.dumps({"id": i, "prediction": "pos"}) + "\n" for i in ids).encode()
    path = repack(campaign, name, data=PACK[name](rows))
    text = rendered(findings(campaign.write(), "predictions-cover-corpus", "variant-a"))
    assert f"{path}: predictions miss 1 ID of the 4 corpus IDs" in text, text
    assert "    found:    ex-3" in text, text
    assert "predictions repeat corpus IDs (1 extra line)" in text, text
    assert "    found:    ex-2 (line 3)" in text, text


def test_a_truncated_gzip_predictions_file_names_file_and_offset(
        campaign: CampaignBuilder) -> None:
    data = gzip.compress(campaign.files[JSONL])
    path = repack(campaign, "p.jsonl.gz", data=data[:-4])
    found = findings(campaign.write(), "predictions-cover-corpus", "variant-a")
    assert [f.code for f in found] == ["predictions-cover-corpus.predictions-unreadable"]
    assert found[0].render().startswith(
        f"{path}: predictions {path} is a truncated gzip stream: it ends at byte "
        f"{len(data) - 4} inside the member that begins at offset 0 (an interrupted copy?)")


def test_a_parquet_file_cut_before_its_footer(campaign: CampaignBuilder) -> None:
    data = parquet(campaign.files[JSONL])
    path = repack(campaign, "p.parquet", data=data[:-100])
    found = findings(campaign.write(), "predictions-cover-corpus", "variant-a")
    assert found[0].render().startswith(
        f"{path}: predictions {path} has no Parquet footer: the bytes at offset "
        f"{len(data) - 104} are not 'PAR1' (a truncated file?)")


def test_parquet_without_pyarrow_says_what_to_install(
        campaign: CampaignBuilder, monkeypatch: pytest.MonkeyPatch) -> None:
    path = repack(campaign, "p.parquet")
    root = campaign.write()
    for loaded in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.setitem(sys.modules, loaded, None)
    found = findings(root, "predictions-cover-corpus", "variant-a")
    assert found[0].render().startswith(
        f"{path}: predictions {path} is Parquet; reading it needs pyarrow: "
        "pip install 'pytest-itera[formats]'")


@pytest.mark.parametrize("name", sorted(PACK))
def test_the_metric_is_recomputed_from_packed_predictions(tmp_path: Path, name: str) -> None:
    campaign = plan3(tmp_path / "out")
    repack(campaign, name)
    root = campaign.write()
    assert findings(root, "metrics-recomputed", "variant-a") == ()
    campaign.set_metric("variant-a", "accuracy", 0.1)
    root = campaign.write()
    text = rendered(findings(root, "metrics-recomputed", "variant-a"))
    assert "run variant-a's accuracy is 0.1 at " in text, text
    assert f"(recomputed (accuracy) from runs/variant-a/{name})" in text, text


def test_a_compressed_frozen_corpus_with_parquet_predictions(campaign: CampaignBuilder) -> None:
    corpus = zstd(campaign.files.pop("corpus/corpus.jsonl"))
    campaign.files["corpus/corpus.jsonl.zst"] = corpus
    campaign.plan["corpora"][0].update(path="corpus/corpus.jsonl.zst", sha256=sha256(corpus))
    repack(campaign, "p.parquet")
    root = campaign.write()
    assert findings(root, "predictions-cover-corpus", "variant-a") == ()
    assert findings(root, "predictions-cover-corpus", "control") == ()


def test_a_parquet_copy_of_the_corpus_is_the_same_deliverable(campaign: CampaignBuilder) -> None:
    data = parquet(campaign.files["corpus/corpus.jsonl"])
    problems = deliver_a_copy(campaign, "corpus/corpus-b.parquet", data)
    assert "'corpus-b' is 'tiny-corpus' (other bytes, the same 4 example IDs" in problems[0]
