"""A pushed campaign judged from the store under pytest-xdist ``--tx 2*popen`` (issue 41,
point 3): the same items, verdict and JSON report as a serial run, whether the workers read
the controller's copy (one host) or make their own (another host, ``--tx ssh=...``: here
the controller's folder is hidden from them by a conftest hook)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_itera.files.push import push
from pytest_itera.files.source import S3Location
from tests.factory import CampaignBuilder
from tests.files.test_push import fresh, read_bytes
from tests.files.test_s3 import _Counted, proxied
from tests.files.test_s3 import s3 as s3  # the fixtures of the local server
from tests.files.test_s3 import server as server
from tests.plugin.test_xdist_modes import normalised
from tests.runner import python_path_with_repo

ANOTHER_HOST = '''
import os

from pytest_itera.files import source

worker = os.environ.get("PYTEST_XDIST_WORKER")
if worker:  # as on another host: the controller's copy is not where a worker looks
    mine = f".{worker}.itera-store.json"
    source.Staged.sidecar = staticmethod(lambda root: root.with_name(root.name + mine))
'''


def test_the_same_report_serially_and_under_tx_2_popen(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any, server: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    campaign.files["analysis.md"] = b""  # one failing item: a verdict with a finding
    root = campaign.write()
    url = fresh(s3)
    assert push(root, url).complete
    loc = S3Location.parse(url)
    sizes = {p.relative_to(root).as_posix(): p.stat().st_size
             for p in root.rglob("*") if p.is_file()}

    class Counted(_Counted):
        upstream, seen_requests = server, []

    reports: dict[str, str] = {}
    read: dict[str, dict[str, int]] = {}
    for mode, extra in (("serial", ()), ("one host", ("--dist", "load", "--tx", "2*popen")),
                        ("spooled", ("--dist", "load", "--tx", "2*popen")),
                        ("another host", ("--dist", "load", "--tx", "2*popen"))):
        if mode == "spooled":  # no checkpoint in the copy: each worker spools its own
            pytester.makeini("[pytest]\nitera_store_cache_max = 0\n")
        if mode == "another host":
            pytester.makeini("[pytest]\n")
            pytester.makeconftest(ANOTHER_HOST)
        Counted.seen_requests = []
        with proxied(monkeypatch, Counted):
            result = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider",
                                        "--itera-store-checksums", "--itera-report",
                                        f"{mode}.json", *extra)
        assert result.ret == 1, result.stdout.str()
        result.stdout.fnmatch_lines(["campaign tiny-2026-11: REJECTED — 2 of * checks failed*"])
        reports[mode] = normalised((pytester.path / f"{mode}.json").read_text())
        read[mode] = read_bytes(Counted.seen_requests, f"/{loc.bucket}/{loc.prefix}/")
    assert reports["one host"] == reports["serial"]
    assert reports["another host"] == reports["serial"]
    assert reports["spooled"] == reports["serial"]
    # Spooled: the checkpoints are read by the workers that judge them (none is in the copy,
    # and the push recorded their SHA-256: the copy did not read them), the rest as before.
    checkpoints = {key for key in sizes if key.endswith(".pt")}
    assert {k: n for k, n in read["spooled"].items() if k not in checkpoints} == \
        {k: n for k, n in read["serial"].items() if k not in checkpoints}
    assert all(read["spooled"][key] >= sizes[key] for key in checkpoints), read["spooled"]
    # One host: the controller's one copy, the workers download nothing of their own.
    assert read["one host"] == read["serial"]
    assert set(read["serial"]) <= set(sizes)
    # Another host: each worker that ran items has its own copy of the evidence (each such
    # object read by the controller and by every such worker: both, or one when the other
    # started too late to get items -- under load, --dist load may hand a small campaign to
    # one worker), and no checkpoint: it spools the ones its items judge.
    evidence = {k: n for k, n in read["another host"].items() if k not in checkpoints}
    copies = {n // read["serial"][key] for key, n in evidence.items()}
    assert len(copies) == 1, read
    [times] = copies
    assert times in (2, 3), read
    assert evidence == {k: times * n for k, n in read["serial"].items() if k not in checkpoints}
    for key in checkpoints:  # the controller's copy, then at most one spool per worker
        assert read["serial"][key] <= read["another host"][key] <= read["serial"][key] * times, \
            read["another host"]


def test_the_docs_show_a_multi_host_run_over_a_campaign_in_the_store() -> None:
    text = (Path(__file__).parents[2] / "docs/options.md").read_text()
    assert "--tx ssh=" in text
    assert "python -m pytest_itera push out/ s3://bucket/prefix/" in text
