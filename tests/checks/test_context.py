"""checks/context.py on its own: what checks see, and the work it does once per campaign.

A Context over a real campaign folder (CampaignBuilder) with small checks of our own, so
each test says exactly how often a check ran and on which targets. No pytest session.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from pytest_itera.checks import Check, Context, Options
from pytest_itera.checks.context import (
    GROUP_FILES_ABOVE,
    blocked_by_contract,
    folder_group,
)
from pytest_itera.checks.engine import judge
from pytest_itera.checks.reading import READER_NICENESS
from pytest_itera.core.campaign import Campaign, load_campaign
from pytest_itera.core.findings import Finding
from pytest_itera.core.money import example_catalogue
from pytest_itera.files.scan import SMALL_FILE
from pytest_itera.reload import Reloader, ReloadResult
from tests.factory import CONTROL_CKPT, VARIANT_WEIGHTS, CampaignBuilder

if TYPE_CHECKING:
    from pytest_itera.reload import Reloader

READER = "itera-read-"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return CampaignBuilder(tmp_path / "c").write()


class Recorder:
    """A check function that records each (target) it is asked about and fails the ``bad``."""

    def __init__(self, bad: Iterable[str] = ()) -> None:
        self.bad = set(bad)
        self.calls: list[str | None] = []
        self._lock = threading.Lock()

    def __call__(self, ctx: Context, target: str | None) -> list[Finding]:
        with self._lock:
            self.calls.append(target)
        return [Finding(f"{target} is bad", where=target)] if target in self.bad else []


def check(
    run: Recorder, *, id: str = "probe", scope: str = "file",
    targets: Callable[[Context], Iterable[str]] | None = None,
    needs: frozenset[str] = frozenset({"manifest"}),
) -> Check:
    return Check(id, "a probe", run, scope=scope, targets=targets, needs=needs)  # type: ignore[arg-type]


def listed(ctx: Context) -> list[str]:
    assert ctx.campaign.manifest is not None
    return [f.path for f in ctx.campaign.manifest.files]


def context(
    campaign: Campaign | Path, *checks: Check, options: Options | None = None,
    group_files_above: int | None = GROUP_FILES_ABOVE, **kwargs: object,
) -> Context:
    loaded = load_campaign(campaign) if isinstance(campaign, Path) else campaign
    return Context(loaded, options or Options(), {c.id: c for c in checks},
                   group_files_above=group_files_above, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def closing() -> Iterator[list[Context]]:
    """Contexts to close after the test (their reader threads end)."""
    made: list[Context] = []
    yield made
    for ctx in made:
        ctx.close()


def readers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(READER)}


# ------------------------------------------------------------------ facts


def test_facts_are_read_once_per_file_and_memoised(root: Path) -> None:
    ctx = context(root)
    data = (root / "analysis.md").read_bytes()
    first = ctx.facts("analysis.md")
    assert (first.path, first.size, first.sha256, first.error) == (
        "analysis.md", len(data), hashlib.sha256(data).hexdigest(), None)
    (root / "analysis.md").write_bytes(b"changed after it was read")
    assert ctx.facts("analysis.md") is first


def test_facts_of_files_that_cannot_be_read_are_carried_not_raised(root: Path) -> None:
    os.mkfifo(root / "pipe")  # opening it would block
    ctx = context(root)
    assert ctx.facts("pipe").error == "is a FIFO, not a regular file"
    assert ctx.facts("runs").error == "is a directory, not a regular file"
    assert ctx.facts("nowhere.txt").error == "vanished during the scan"
    assert ctx.facts("pipe").sha256 is None


def test_a_link_inside_the_folder_is_read_through_and_one_out_never(
    root: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("outside")
    (root / "inside-link").symlink_to("analysis.md")
    (root / "outside-link").symlink_to(tmp_path / "secret.txt")
    ctx = context(root)
    assert ctx.facts("inside-link").sha256 == ctx.facts("analysis.md").sha256
    out = ctx.facts("outside-link")
    assert (out.error, out.sha256, out.size) == ("is a symbolic link, not a regular file", None, 0)


def test_temp_paths_are_found_with_the_defaults_and_the_users_patterns(root: Path) -> None:
    (root / "train.log").write_text("saved to /tmp/run1/last.pt\nscratch at /scratch/x\n")
    default = context(root).facts("train.log")
    assert [h.excerpt for h in default.hits] == ["/tmp/run1/last.pt"]
    extra = context(root, options=Options(temp_patterns=("/scratch/",))).facts("train.log")
    assert [h.excerpt for h in extra.hits] == ["/tmp/run1/last.pt", "/scratch/x"]
    assert extra.hit_count == 2


def test_fast_mode_neither_hashes_nor_scans(root: Path) -> None:
    (root / "train.log").write_text("/tmp/run1\n")
    facts = context(root, options=Options(fast=True)).facts("train.log")
    assert (facts.sha256, facts.hits, facts.size) == (None, (), 10)


# ------------------------------------------------------------------ read-ahead


def large_files(root: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        name = f"big/{i}.bin"
        (root / "big").mkdir(exist_ok=True)
        (root / name).write_bytes(bytes([i]) * (SMALL_FILE + 1))
        names.append(name)
    return names


def test_read_ahead_reads_large_files_on_reader_threads(
    root: Path, closing: list[Context]
) -> None:
    names = large_files(root, 3)
    ctx = context(root)
    closing.append(ctx)
    before = readers()
    ctx.read_ahead([*names, "analysis.md", names[0]], workers=2)
    started = readers() - before
    assert sorted(t.name for t in started) == [f"{READER}0", f"{READER}1"]
    for i, name in enumerate(names):
        expected = hashlib.sha256(bytes([i]) * (SMALL_FILE + 1)).hexdigest()
        assert ctx.facts(name).sha256 == expected
    if sys.platform.startswith("linux"):
        # The readers yield the CPU to the reload server's import and the items (issue 29):
        # a niceness of their own, ten above the process's; the calling thread keeps its own.
        base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        assert {os.getpriority(os.PRIO_PROCESS, t.native_id or 0) for t in started} == \
            {min(19, base + READER_NICENESS)}
        assert os.getpriority(os.PRIO_PROCESS, 0) == base
    ctx.close()
    for thread in started:
        thread.join(timeout=10)
        assert not thread.is_alive()


@pytest.mark.parametrize(
    ("options", "workers", "large"),
    [(Options(), 4, 1), (Options(), 1, 3), (Options(fast=True), 4, 3), (Options(), 4, 0)],
    ids=["one-large-file", "one-worker", "fast", "small-files-only"],
)
def test_read_ahead_starts_no_thread_when_nothing_would_overlap(
    root: Path, closing: list[Context], options: Options, workers: int, large: int
) -> None:
    names = large_files(root, large)
    ctx = context(root, options=options)
    closing.append(ctx)
    before = readers()
    ctx.read_ahead([*names, "analysis.md", "RELOAD.md", "missing.bin"], workers=workers)
    assert readers() - before == set()
    if names:
        assert ctx.facts(names[0]).size == SMALL_FILE + 1


# ------------------------------------------------------------------ memo


def test_memo_computes_once_even_when_asked_from_many_threads(root: Path) -> None:
    ctx = context(root)
    computed: list[int] = []

    def compute() -> int:
        time.sleep(0.01)
        computed.append(1)
        return 42

    threads = [threading.Thread(target=ctx.memo, args=("k", compute)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ctx.memo("k", lambda: 0) == 42
    assert computed == [1]


def test_the_default_catalogue_is_the_shipped_one_loaded_once(root: Path) -> None:
    ctx = context(root)
    assert ctx.catalogue() is ctx.catalogue()
    assert ctx.catalogue() == example_catalogue()
    told = context(root, options=Options(catalogue="the hook returned int"))
    assert told.catalogue() == "the hook returned int"


# ------------------------------------------------------------------ targets and findings


def test_findings_are_computed_once_per_check_and_target(root: Path) -> None:
    probe = Recorder(bad={"analysis.md"})
    ctx = context(root, check(probe, targets=listed))
    first = judge(ctx).findings("probe", "analysis.md")
    assert first == (Finding("analysis.md is bad", where="analysis.md"),)
    assert judge(ctx).findings("probe", "analysis.md") is first
    assert judge(ctx).findings("probe", "RELOAD.md") == ()
    assert probe.calls == ["analysis.md", "RELOAD.md"]


def advising(ctx: Context, target: str | None) -> list[Finding]:
    """One reading of text (advisory) on every target, and one exact rule on the first log."""
    return [Finding(f"{target}: the words read as a quote", code="probe.words", advisory=True),
            *([Finding(f"{target} is bad", code="probe.rule")] if target == "logs/a.log" else [])]


@pytest.mark.parametrize("above", [None, 2], ids=["per file", "per folder"])
def test_an_advisory_is_kept_apart_from_what_decides_unless_text_is_strict(
    root: Path, above: int | None
) -> None:
    logs = with_logs(root)
    probe = Check("probe", "a probe", advising, scope="file", targets=lambda ctx: logs)
    ctx = context(root, probe, group_files_above=above)
    target = "logs/a.log" if above is None else "logs/*"
    assert target in judge(ctx).targets(probe)  # listed first, as the engine does
    assert [f.code for f in judge(ctx).findings("probe", target)] == ["probe.rule"]
    assert [f.code for f in judge(ctx).advisories("probe", target)] == \
        ["probe.words"] * (1 if above is None else len(logs))
    if above is None:
        assert judge(ctx).findings("probe", "logs/b.log") == ()  # an advisory alone passes
        assert [f.code for f in judge(ctx).advisories("probe", "logs/b.log")] == ["probe.words"]
    strict = context(root, probe, options=Options(strict_text=True), group_files_above=above)
    judge(strict).targets(probe)
    assert "probe.words" in {f.code for f in judge(strict).findings("probe", target)}
    assert judge(strict).advisories("probe", target) == ()


def test_targets_are_sorted_unique_and_listed_once(root: Path) -> None:
    asked: list[int] = []

    def targets(ctx: Context) -> list[str]:
        asked.append(1)
        return ["b", "a", "b", "c"]

    probe = check(Recorder(), targets=targets)
    ctx = context(root, probe)
    assert judge(ctx).targets(probe) == ("a", "b", "c")
    assert judge(ctx).targets(probe) == ("a", "b", "c")
    assert asked == [1]


def test_a_campaign_scoped_check_has_one_target_none(root: Path) -> None:
    probe = Recorder()
    whole = check(probe, scope="campaign")
    ctx = context(root, whole)
    assert judge(ctx).targets(whole) == (None,)
    assert judge(ctx).findings("probe") == ()
    assert probe.calls == [None]


@pytest.mark.parametrize(
    ("broken", "needs", "message"),
    [
        (("manifest.json",), frozenset({"manifest"}),
         "not judged: manifest failed (manifest.json did not load)"),
        (("plan.json", "manifest.json"), frozenset({"plan", "manifest"}),
         "not judged: manifest failed (plan.json and manifest.json did not load)"),
    ],
)
def test_a_check_needing_a_document_that_did_not_load_is_one_finding_not_a_run(
    root: Path, broken: tuple[str, ...], needs: frozenset[str], message: str
) -> None:
    for name in broken:
        (root / name).write_text("{")
    probe = Recorder()
    blocked = check(probe, targets=listed, needs=needs)
    ctx = context(root, blocked)
    assert judge(ctx).targets(blocked) == (None,)
    expected = Finding(message, hint="fix the problems reported by the 'manifest' item first",
                       code="probe.not-evaluated")
    assert judge(ctx).findings("probe") == (expected,)
    assert blocked_by_contract(ctx.campaign, blocked) == expected
    assert probe.calls == []


def test_a_check_that_needs_nothing_runs_on_a_broken_campaign(root: Path) -> None:
    (root / "manifest.json").write_text("{")
    probe = Recorder()
    free = check(probe, scope="campaign", needs=frozenset())
    ctx = context(root, free)
    assert blocked_by_contract(ctx.campaign, free) is None
    assert judge(ctx).findings("probe") == ()
    assert probe.calls == [None]


# ------------------------------------------------------------------ grouping


@pytest.mark.parametrize(
    ("relpath", "group"),
    [("runs/control/a.txt", "runs/control/*"), ("RELOAD.md", "*"), ("a/b", "a/*")],
)
def test_folder_group_is_the_files_folder_with_a_star(relpath: str, group: str) -> None:
    assert folder_group(relpath) == group


def with_logs(root: Path) -> list[str]:
    """Three log files in a folder no run names, beside the listed files."""
    (root / "logs").mkdir()
    for name in ("a.log", "b.log", "c.log"):
        (root / "logs" / name).write_text(name)
    return ["logs/a.log", "logs/b.log", "logs/c.log"]


def test_above_the_threshold_files_group_by_folder_unless_a_run_names_them(root: Path) -> None:
    logs = with_logs(root)
    probe = check(Recorder(), targets=lambda ctx: [*listed(ctx), *logs])
    ctx = context(root, probe, group_files_above=3)
    assert judge(ctx).targets(probe) == (
        "*",  # RELOAD.md and analysis.md: no run names them
        "configs/control.json", "configs/data-check.json", "configs/resume-check.json",
        "configs/variant-a.json",  # each names its run: kept alone
        "corpus/*", "logs/*",
        "runs/control/measurements.jsonl", "runs/control/predictions.jsonl", CONTROL_CKPT,
        "runs/data-check/measurements.jsonl", "runs/resume-check/last.pt",
        "runs/resume-check/measurements.jsonl", "runs/variant-a/measurements.jsonl",
        "runs/variant-a/predictions.jsonl", "runs/variant-a/weights.pt",
    )
    assert judge(ctx).members("probe", "*") == ("RELOAD.md", "analysis.md")
    assert judge(ctx).members("probe", "logs/*") == tuple(logs)
    assert judge(ctx).members("probe", "configs/control.json") == ("configs/control.json",)
    assert judge(ctx).grouped("probe", "logs/*")
    assert not judge(ctx).grouped("probe", "configs/control.json")
    assert not judge(ctx).grouped("probe", None)


@pytest.mark.parametrize(
    ("scope", "above"), [("file", None), ("file", 19), ("run", 3)],
    ids=["never", "at-the-threshold", "not-a-file-check"],
)
def test_targets_stay_one_per_file_unless_a_file_check_exceeds_the_threshold(
    root: Path, scope: str, above: int | None
) -> None:
    logs = with_logs(root)
    probe = check(Recorder(), scope=scope, targets=lambda ctx: [*listed(ctx), *logs])
    ctx = context(root, probe, group_files_above=above)
    assert len(listed(ctx)) + len(logs) == 19
    assert judge(ctx).targets(probe) == tuple(sorted([*listed(ctx), *logs]))


def test_a_group_fails_with_its_failing_files_only(root: Path) -> None:
    logs = with_logs(root)
    probe = Recorder(bad={"logs/a.log", "logs/c.log"})
    ctx = context(root, check(probe, targets=lambda ctx: logs), group_files_above=2)
    assert judge(ctx).targets(ctx.checks["probe"]) == ("logs/*",)
    a, c = (Finding(f"{p} is bad", where=p) for p in ("logs/a.log", "logs/c.log"))
    failing = (("logs/a.log", (a,)), ("logs/c.log", (c,)))
    assert judge(ctx).failing_files("probe", "logs/*") == failing
    assert judge(ctx).findings("probe", "logs/*") == (a, c)
    assert sorted(c or "" for c in probe.calls) == logs  # each file checked once


def test_a_file_named_like_its_group_keeps_every_file_of_that_folder_alone(root: Path) -> None:
    names = ["notes/*", "notes/a.md", "notes/b.md", "notes/c.md"]
    probe = check(Recorder(), targets=lambda ctx: names)
    ctx = context(root, probe, group_files_above=2)
    assert judge(ctx).targets(probe) == tuple(names)
    assert not judge(ctx).grouped("probe", "notes/*")
    assert judge(ctx).members("probe", "notes/*") == ("notes/*",)


# ------------------------------------------------------------------ runs


def test_run_failures_are_the_failing_targets_a_run_owns(root: Path) -> None:
    files = check(Recorder(bad={"runs/control/predictions.jsonl"}), id="files",
                  targets=listed)
    runs = check(Recorder(bad={"control", "variant-a"}), id="runs", scope="run",
                 targets=lambda ctx: ["control", "data-check", "variant-a"])
    whole = check(Recorder(), id="whole", scope="campaign")
    ctx = context(root, files, runs, whole)
    assert judge(ctx).run_failures("control") == [
        ("files", "runs/control/predictions.jsonl"), ("runs", "control")]
    assert judge(ctx).run_failures("variant-a") == [("runs", "variant-a")]
    assert judge(ctx).run_failures("data-check") == []
    assert judge(ctx).run_failures("never-ran") == []
    assert judge(ctx).runs_of(files, CONTROL_CKPT) == {"control"}


# ------------------------------------------------------------------ paths


def test_inside_a_plain_file_is_its_path_in_the_folder(root: Path) -> None:
    ctx = context(root)
    assert ctx.inside("runs/control/predictions.jsonl") == root / "runs/control/predictions.jsonl"
    assert ctx.inside("not/there.txt") == root / "not/there.txt"  # missing is for the caller


@pytest.mark.parametrize(
    ("relpath", "reason"),
    [
        ("../c/analysis.md", "'..' leaves the campaign folder"),
        ("/etc/passwd", "is absolute"),
        ("C:\\Users\\x", "is absolute"),
        ("runs/../analysis.md", "contains '..' (write the normalized path)"),
        ("runs//control", "is not normalized (no '.', empty or trailing components: write 'a/b')"),
        ("./analysis.md", "is not normalized (no '.', empty or trailing components: write 'a/b')"),
        ("", "is empty"),
        ("a\0b", "contains a NUL byte"),
    ],
)
def test_inside_refuses_a_path_that_is_not_a_plain_relative_path(
    root: Path, relpath: str, reason: str
) -> None:
    assert context(root).inside(relpath) == reason


def test_inside_refuses_links_that_leave_and_resolves_links_that_stay(
    root: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "w.pt").write_bytes(b"x")
    (root / "out-dir").symlink_to(tmp_path / "elsewhere")
    (root / "loop").symlink_to("loop")
    (root / "alias").symlink_to("runs")
    ctx = context(root)
    assert ctx.inside("out-dir/w.pt") == (
        f"symlink out-dir -> {tmp_path / 'elsewhere'} leaves the campaign folder")
    assert ctx.inside("loop/x") == "symlink loop -> loop loops"
    assert ctx.inside("alias/control/step-2.pt") == root.resolve() / CONTROL_CKPT


def test_regular_file_says_why_a_path_is_no_regular_file(root: Path, tmp_path: Path) -> None:
    os.mkfifo(root / "pipe")
    (tmp_path / "secret").write_text("x")
    (root / "leak").symlink_to(tmp_path / "secret")
    (root / "dangling").symlink_to("gone")
    (root / "good-link").symlink_to("analysis.md")
    ctx = context(root)
    assert ctx.regular_file("analysis.md") == root / "analysis.md"
    assert ctx.regular_file("good-link") == root.resolve() / "analysis.md"
    assert ctx.regular_file("gone.txt") == "is missing"
    assert ctx.regular_file("runs") == "is a dir, not a regular file"
    assert ctx.regular_file("pipe") == "is a fifo, not a regular file"
    assert ctx.regular_file("leak") == (
        f"symlink leak -> {tmp_path / 'secret'} leaves the campaign folder")
    assert ctx.regular_file("dangling") == "is a symbolic link that leaves the campaign folder"


def test_entries_are_sorted_and_describe_links_without_following_them(
    root: Path, tmp_path: Path
) -> None:
    (root / "zz-link").symlink_to(tmp_path)
    ctx = context(root)
    paths = [e.path for e in ctx.entries()]
    assert paths == sorted(paths)
    link = ctx.entry("zz-link")
    assert link is not None
    assert (link.kind, link.escapes, link.target) == (
        "symlink", True, str(tmp_path))
    assert ctx.entry("nowhere") is None


# ------------------------------------------------------------------ reloads


class FakeReloader:
    def __init__(self) -> None:
        self.reloads: list[tuple[Path, str]] = []
        self.prefetched: list[list[Path]] = []
        self.closed = 0

    def reload(self, path: Path, display: str) -> ReloadResult:
        """The built-in loader is never told the claim: it reports, the check judges."""
        self.reloads.append((path, display))
        return ReloadResult(path=display, ok=True, format=None, cause=None)

    def prefetch(self, paths: list[Path]) -> None:
        self.prefetched.append(list(paths))

    def close(self) -> None:
        self.closed += 1


def factory(fake: FakeReloader, made: list[int]) -> Callable[[], Reloader]:
    def make() -> Reloader:
        made.append(1)
        return cast("Reloader", fake)

    return make


def test_a_path_outside_the_folder_is_never_handed_to_a_loader(root: Path) -> None:
    asked: list[str] = []

    def hook(path: Path, display: str, claimed: str | None) -> ReloadResult | None:
        asked.append(display)
        return None

    fake, made = FakeReloader(), list[int]()
    ctx = context(root, reload_hook=hook, reloader_factory=factory(fake, made))
    result = ctx.reload("../elsewhere.pt", "torch")
    assert (result.ok, result.cause) == (
        False, "../elsewhere.pt: the path '..' leaves the campaign folder; not loaded")
    assert (asked, fake.reloads, made) == ([], [], [])


def test_a_hook_answer_wins_and_each_reload_is_asked_once(root: Path) -> None:
    asked: list[tuple[str, str | None]] = []

    def hook(path: Path, display: str, claimed: str | None) -> ReloadResult | None:
        asked.append((display, claimed))
        return ReloadResult(display, ok=False, format=claimed, cause="the hook says no")

    fake, made = FakeReloader(), list[int]()
    ctx = context(root, reload_hook=hook, reloader_factory=factory(fake, made))
    first = ctx.reload(CONTROL_CKPT, "torch")
    assert first.cause == "the hook says no"
    assert ctx.reload(CONTROL_CKPT, "torch") is first
    ctx.reload(CONTROL_CKPT, None)  # another claimed format is another question
    assert asked == [(CONTROL_CKPT, "torch"), (CONTROL_CKPT, None)]
    ctx.reload_ahead([CONTROL_CKPT])  # a hook may answer: nothing is prefetched
    assert (fake.reloads, made) == ([], [])


def test_the_built_in_loader_is_made_once_on_first_use(root: Path) -> None:
    fake, made = FakeReloader(), list[int]()
    ctx = context(root, reloader_factory=factory(fake, made))
    assert made == []
    ctx.reload(CONTROL_CKPT, "torch")
    ctx.reload("runs/variant-a/weights.pt", "torch")
    assert made == [1]
    assert fake.reloads == [
        (root / CONTROL_CKPT, CONTROL_CKPT),
        (root / "runs/variant-a/weights.pt", "runs/variant-a/weights.pt"),
    ]


def test_reload_ahead_prefetches_only_paths_inside_the_folder(root: Path) -> None:
    fake, made = FakeReloader(), list[int]()
    ctx = context(root, reloader_factory=factory(fake, made))
    ctx.reload_ahead([CONTROL_CKPT, "../x.pt", "/abs.pt"])
    assert fake.prefetched == [[root / CONTROL_CKPT]]
    ctx.reload_ahead(["../only-outside.pt"])
    assert fake.prefetched == [[root / CONTROL_CKPT]]


def test_without_a_loader_a_reload_is_a_plugin_error(root: Path) -> None:
    ctx = context(root)
    ctx.reload_ahead([CONTROL_CKPT])  # nothing to prefetch with: quietly nothing
    with pytest.raises(RuntimeError, match="no reloader configured"):
        ctx.reload(CONTROL_CKPT, "torch")


@contextmanager
def judged_while_waiting(root: Path, first: Check, ahead: list[str]
                         ) -> Iterator[tuple[Context, Recorder, list[tuple[str, str | None]]]]:
    """A context of ``first`` and a probe check, on a real reload server handed the
    checkpoints ``ahead``: the pairs ``first``, then the probe on every listed file, are to be
    judged while a verdict is awaited. Yields the context, the probe and the pairs."""
    run = Recorder()
    with Reloader(jobs=1) as reloader:
        ctx = context(root, check(run, targets=listed), first,
                      reloader_factory=lambda: reloader, close_reloader=False)
        pairs: list[tuple[str, str | None]] = [(first.id, None)]
        pairs += [("probe", target) for target in listed(ctx)]
        ctx.reload_ahead(ahead)
        judge(ctx).work_while_waiting(pairs)
        yield ctx, run, pairs


def test_while_a_verdict_is_awaited_the_later_checks_are_judged(root: Path) -> None:
    """A verdict handed over ahead waits for the server's torch import (~1 s, a real server
    here): meanwhile the pairs given are computed, in order, once each. A check that fails
    to compute is left to its item, which raises as before; a reload not handed over ahead
    starts at once, with no work first."""
    def boom(ctx: Context, target: str | None) -> list[Finding]:
        raise RuntimeError("a plugin bug")

    with judged_while_waiting(root, check(cast("Recorder", boom), id="boom"),
                              [CONTROL_CKPT]) as (ctx, run, pairs):
        assert ctx.reload(CONTROL_CKPT, "torch").ok
        assert run.calls == [target for _, target in pairs[1:]]
        assert all(judge(ctx).findings("probe", target) == () for _, target in pairs[1:])
        assert len(run.calls) == len(pairs) - 1  # the items ask again: computed once
        with pytest.raises(RuntimeError, match="a plugin bug"):
            judge(ctx).findings("boom", None)
        judge(ctx).work_while_waiting([("probe", "another")])
        assert ctx.reload("runs/variant-a/weights.pt", "torch").ok  # not ahead: no work first
        assert "another" not in run.calls


def test_a_check_judged_meanwhile_that_needs_another_verdict_is_left_to_its_item(
    root: Path,
) -> None:
    """A check computed while a verdict is awaited that asks for another verdict not in yet
    (artifacts-required consults a checkpoint's reload) does not hold the later checks up:
    it is left to its item, which judges it once the verdict is in, and the pairs after it
    are computed meanwhile."""
    asked = list[bool]()

    def waits(ctx: Context, target: str | None) -> list[Finding]:
        asked.append(True)
        reloaded = ctx.reload(VARIANT_WEIGHTS, "torch")
        return [] if reloaded.ok else [Finding("does not reload", where=VARIANT_WEIGHTS)]

    with judged_while_waiting(root, check(cast("Recorder", waits), id="waits"),
                              [CONTROL_CKPT, VARIANT_WEIGHTS]) as (ctx, run, pairs):
        assert ctx.reload(CONTROL_CKPT, "torch").ok
        assert run.calls == [target for _, target in pairs[1:]]  # not held up by "waits"
        assert asked == [True]  # tried once meanwhile, left to its item
        assert judge(ctx).findings("waits", None) == ()  # its item: after the verdict
        assert asked == [True, True]


@pytest.mark.parametrize(("close_reloader", "closed"), [(True, 1), (False, 0)])
def test_close_closes_the_loader_only_when_it_is_the_contexts_own(
    root: Path, close_reloader: bool, closed: int
) -> None:
    fake, made = FakeReloader(), list[int]()
    ctx = context(root, reloader_factory=factory(fake, made), close_reloader=close_reloader)
    ctx.reload(CONTROL_CKPT, "torch")
    ctx.close()
    assert fake.closed == closed
    ctx.reload("runs/variant-a/weights.pt", "torch")  # a later reload asks the factory again
    assert made == [1, 1]


def test_after_close_one_path_is_answered_without_walking_the_folder_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = context(root)
    walked = {e.path: e for e in ctx.entries()}
    (root / "itera-report.json").write_text('{"format": "itera-report/3", "verdict": "x"}')
    ctx.close()
    import pytest_itera.files.tree as tree

    def no_walk(*args: object, **kwargs: object) -> None:
        raise AssertionError("the folder was walked again after close")

    monkeypatch.setattr(tree, "walk", no_walk)
    assert ctx.entry("analysis.md") == walked["analysis.md"]
    assert ctx.entry("runs") == walked["runs"]
    assert ctx.entry("nope.txt") is None
    assert ctx.regular_file("analysis.md") == root / "analysis.md"
    # The own-output candidates are the checks' walk's (the report written later is not).
    assert "itera-report.json" not in ctx.output_candidates()
    assert set(ctx.output_candidates()) == {
        p for p, e in walked.items() if e.kind == "file" and p.endswith((".json", ".md", ".html"))}


# ------------------------------------------------------------------ the helper process


def many_small_files(root: Path, count: int) -> list[str]:
    names = []
    for i in range(count):
        name = f"many/{i:03d}.txt"
        (root / "many").mkdir(exist_ok=True)
        (root / name).write_bytes(f"file {i}\n".encode() + (b"/tmp/x\n" if i == 7 else b""))
        names.append(name)
    return names


def test_many_small_files_are_read_by_a_helper_process_too(
    root: Path, closing: list[Context], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file's facts are those this process reads (the first of the two stands), and
    the helper is stopped with the Context."""
    from pytest_itera.files import batch

    monkeypatch.setattr(batch, "HELPER_ABOVE", 10)
    names = many_small_files(root, 80)
    ctx = context(root)
    closing.append(ctx)
    ctx.read_ahead(names, workers=2)
    helper = ctx.reader._helper
    assert helper is not None
    time.sleep(0.5)  # it reads some, from the last
    reference = context(root)
    closing.append(reference)
    for name in names:
        assert ctx.facts(name) == reference.facts(name)
    assert ctx.facts(names[7]).hit_count == 1
    ctx.close()
    assert not helper.running


def test_a_helper_that_cannot_start_leaves_the_reading_here(
    root: Path, closing: list[Context], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_itera.files import batch

    monkeypatch.setattr(batch, "HELPER_ABOVE", 10)
    monkeypatch.setattr(sys, "executable", str(root / "no-such-python"))
    names = many_small_files(root, 30)
    ctx = context(root)
    closing.append(ctx)
    ctx.read_ahead(names, workers=2)
    assert ctx.reader._helper is None
    expected = hashlib.sha256(b"file 3\n").hexdigest()
    assert ctx.facts(names[3]).sha256 == expected


def test_a_whole_run_starts_the_helper_once_the_walk_is_done(
    root: Path, closing: list[Context], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_itera.files import batch

    monkeypatch.setattr(batch, "HELPER_ABOVE", 10)
    names = many_small_files(root, 30)
    ctx = context(root, read_early=True)
    closing.append(ctx)
    assert ctx.reader._helper is None
    ctx.entries()
    helper = ctx.reader._helper
    assert helper is not None
    ctx.read_ahead(names, workers=2)
    assert ctx.reader._helper is helper  # one helper per Context
    assert ctx.facts(names[29]).sha256 == hashlib.sha256(b"file 29\n").hexdigest()
    fast = context(root, options=Options(fast=True), read_early=True)
    closing.append(fast)
    fast.entries()
    assert fast.reader._helper is None  # --itera-fast reads nothing
