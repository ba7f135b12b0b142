"""A pushed campaign judged from the store under pytest-xdist ``--tx 2*popen`` (issue 41,
point 3): the same items, verdict and JSON report as a serial run, whether the workers read
the controller's copy (one host) or make their own (another host, ``--tx ssh=...``: here
the controller's folder is hidden from them by a conftest hook)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.files.push import push
from pytest_itera.files.source import SNIFF, S3Location
from tests.factory import CampaignBuilder
from tests.files.test_push import BIG, fresh
from tests.files.test_s3 import _Counted, proxied, read_bytes
from tests.files.test_s3 import s3 as s3  # the fixtures of the local server
from tests.files.test_s3 import server as server
from tests.plugin.test_xdist_modes import normalised
from tests.runner import python_path_with_repo

ANOTHER_HOST = '''
import os

from pytest_itera.files import source

worker = os.environ.get("PYTEST_XDIST_WORKER")
# A worker of this session (not its controller, which runs in the test's own process: that
# process may be an xdist worker of the suite itself, and keeps this module's patch)
if worker and str(os.getpid()) != os.environ.get("ITERA_TEST_CONTROLLER_PID"):
    # as on another host: the controller's copy is not where a worker looks
    mine = f".{worker}.itera-store.json"
    source.Staged.sidecar = staticmethod(lambda root: root.with_name(root.name + mine))
'''


TX = ("--dist", "load", "--tx", "2*popen")


def judged_in_modes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, server: str,
                    url: str, modes: tuple[str, ...], *options: str
                    ) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The campaign at ``url`` judged in each of ``modes`` (serial; "one host": the workers
    read the controller's copy; "spooled": the same, no checkpoint in it; "another host":
    each worker its own copy): the normalised JSON report and the bytes GET asked for, per
    key, of each mode."""
    loc = S3Location.parse(url)
    monkeypatch.setenv("ITERA_TEST_CONTROLLER_PID", str(os.getpid()))  # ANOTHER_HOST's

    class Counted(_Counted):
        upstream, seen_requests = server, []

    reports: dict[str, str] = {}
    read: dict[str, dict[str, int]] = {}
    for mode in modes:
        pytester.makeini("[pytest]\nitera_store_cache_max = 0\n" if mode == "spooled"
                         else "[pytest]\n")
        pytester.makeconftest(ANOTHER_HOST if mode == "another host" else "")
        Counted.seen_requests = []
        with proxied(monkeypatch, Counted):
            result = pytester.runpytest("--itera-campaign", url, "-p", "no:cacheprovider",
                                        "--itera-report", f"{mode}.json", *options,
                                        *(() if mode == "serial" else TX))
        assert result.ret == 1, result.stdout.str()
        result.stdout.fnmatch_lines(["campaign tiny-2026-11: REJECTED — 2 of * checks failed*"])
        reports[mode] = normalised((pytester.path / f"{mode}.json").read_text())
        read[mode] = read_bytes(Counted.seen_requests, f"/{loc.bucket}/{loc.prefix}/")
    return reports, read


def pushed(campaign: CampaignBuilder, s3: Any) -> tuple[str, dict[str, int]]:
    """The campaign, with one failing item (a verdict with a finding), pushed: its URL and
    the size of each of its files."""
    campaign.files["analysis.md"] = b""
    root = campaign.write()
    url = fresh(s3)
    assert push(root, url).complete
    return url, {p.relative_to(root).as_posix(): p.stat().st_size
                 for p in root.rglob("*") if p.is_file()}


def test_the_same_report_serially_and_under_tx_2_popen(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any, server: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    python_path_with_repo(monkeypatch)
    url, sizes = pushed(campaign, s3)
    reports, read = judged_in_modes(pytester, monkeypatch, server, url,
                                    ("serial", "one host", "spooled", "another host"),
                                    "--itera-store-checksums")
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


def test_under_tx_a_binary_file_is_downloaded_by_the_worker_that_hashes_it(
        pytester: pytest.Pytester, campaign: CampaignBuilder, s3: Any, server: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the store's SHA-256, a binary file no check reads is hashed as it streams. Under
    xdist the controller only sniffs it (its first 64 KiB), as does each worker that makes
    its own copy (another host), and the one worker whose item judges its bytes downloads it
    whole: once in all, wherever its folder's items run; the same report as a serial run."""
    python_path_with_repo(monkeypatch)
    campaign.files[BIG] = b"\0" + bytes(range(256)) * (1 << 12)  # 1 MiB, binary
    url, sizes = pushed(campaign, s3)
    reports, read = judged_in_modes(pytester, monkeypatch, server, url,
                                    ("serial", "one host", "another host"))
    assert reports["one host"] == reports["serial"]
    assert reports["another host"] == reports["serial"]
    assert read["serial"][BIG] == sizes[BIG]  # one GET, hashed as it streamed, never written
    assert read["one host"][BIG] == SNIFF + sizes[BIG]  # the controller's sniff, one worker's
    copies = (read["another host"][BIG] - sizes[BIG]) // SNIFF  # the controller, each worker
    assert copies in (2, 3), read["another host"]
    assert read["another host"][BIG] == copies * SNIFF + sizes[BIG]
