"""pytest-itera on synthetic campaigns, whole process, against the floors measured in the same run.

    PYTHONPATH=$PWD python benchmarks/bench_campaign.py                  # every scenario
    PYTHONPATH=$PWD python benchmarks/bench_campaign.py --gib 0.25 --text-gib 0.25 \\
        --scenarios a,b,c,d --repeat 3                                   # a quick look

Campaigns are written under --workdir (default: a new folder in the system temp dir,
outside the repository; removed afterwards unless --keep). Every file is read once before
timing: the page cache is WARM. Every scenario runs in each environment of --envs (issue
29): "cache", a warm bytecode cache as an installed package has, and "nocache",
PYTHONDONTWRITEBYTECODE=1 as this machine and many training images run (pytest then
re-rewrites and compiles the plugin's modules in every process). Each command runs as a
fresh process; the floors and pytest-itera runs are interleaved, --repeat times, and
medians are reported. CPU is user+sys of the process and everything it waited for; peak RSS
is the pytest process's own VmHWM (reported by a tiny probe plugin) and, for floors,
wait4's ru_maxrss.

Scenarios (issue 8) and targets (ratio of medians, same run):
  (a) checkpoint-heavy: 3 runs x --gib GiB torch checkpoints, without the items that
      reload (NO_RELOADS below); floor = hashlib over the same bytes (one process, 1 MiB
      chunks).                                                   target wall <= 1.10x
      (a2) the reload child of one --gib GiB checkpoint: peak RSS  target <= 300 MiB
  (b) text-heavy: --text-gib GiB of JSONL predictions and metrics, without the items that
      reload; floor = hashlib.                                   target wall <= 1.25x
      A second row runs every check (reported only: the floor imports no torch).
  (c) a sweep of --runs runs with small files: per-item time against pytest's own for the
      same number of trivial items (a 20-line conftest plugin), as the slope between the
      sweep and one of half as many runs (fixed costs left out, for both); and the start-up
      the plugin adds (collect-only of a tiny campaign vs an empty folder, -p no:itera).
                                                  target per item <= 1.5x, start-up <= 0.2 s
  (d) --checkpoints small checkpoints reloaded, each in its own forked child; floor = one
      interpreter: import torch + the careful loads (mmap=True, weights_only=True,
      map_location="cpu"); the naive loads (no mmap) are reported beside it.
                                                                 target wall <= 1.20x
      Rows: the Reloader handed every checkpoint at once (what a whole pytest run does), the
      Reloader one at a time (an xdist worker), and pytest -k checkpoint-reloads (net of
      pytest's own start-up).
  (e) the example campaign (python -m example_campaign): whole run vs hashlib floor.
  (f) issue 19: --small-files small listed files; the EXTRA wall (the same campaign with
      and without them) against `find | xargs openssl dgst -sha256` over those files.
                      target <= 3x (issue 29), pytest process < 300 MiB peak RSS
  (g) issues 19 and 29, the heavy campaign: the example campaign plus a --heavy-ckpt-mib
      MiB checkpoint and a --heavy-log-mib MiB log, every check, whole process, against what
      a careful user scripts: `openssl dgst -sha256` over every file, then one Python that
      imports torch and loads each checkpoint file with torch.load(weights_only=True,
      mmap=True, map_location="cpu") (safetensors: safe_open, lazily). The naive script
      (torch.load without mmap, safetensors load_file) is reported beside it.
                                  target wall <= 1.0x (cache), <= 1.15x (nocache)
  Memory: the pytest process <= 200 MiB peak RSS in every scenario.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.factory import CampaignBuilder, measurements_path, sha256  # noqa: E402

PY = sys.executable
MIB = 1 << 20
CHUNK = 1 << 20
RSS_TARGET = 200 * MIB
SMALL_FILES_RSS = 300 * MIB
# (g), issue 29: the heavy campaign against the careful floor, per environment.
HEAVY_TARGET = {"cache": 1.0, "nocache": 1.15}

PROBE = """
import json, os, sys

def pytest_unconfigure(config):
    status = open("/proc/self/status").read()
    hwm = int(status.split("VmHWM:")[1].split()[0]) * 1024
    with open(os.environ["ITERA_BENCH_PROBE"], "w") as out:
        json.dump({"hwm": hwm, "torch": "torch" in sys.modules}, out)
"""

TRIVIAL = """
import pytest

class Trivial(pytest.Item):
    def runtest(self):
        pass

    def reportinfo(self):
        return self.path, 0, self.name

class Items(pytest.File):
    def collect(self):
        for i in range(int(self.path.read_text())):
            yield Trivial.from_parent(self, name=f"t{i}")

def pytest_collect_file(file_path, parent):
    if file_path.name == "items.count":
        return Items.from_parent(parent, path=file_path)
"""

HASH_FLOOR = """
import hashlib, os, sys
for root, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        h = hashlib.sha256()
        with open(os.path.join(root, name), "rb", buffering=0) as f:
            while data := f.read(1 << 20):
                h.update(data)
"""

# The careful floor: what a careful user scripts to see that each checkpoint loads, without
# reading its weights into memory: torch files memory-mapped, safetensors opened lazily.
CAREFUL_LOADS = """
import sys, torch
from safetensors import safe_open
for p in sys.argv[1:]:
    if p.endswith(".safetensors"):
        with safe_open(p, framework="pt") as f:
            [f.get_slice(k).get_shape() for k in f.keys()]
    else:
        torch.load(p, weights_only=True, mmap=True, map_location="cpu")
"""

# The naive floor: every checkpoint read whole into memory.
NAIVE_LOADS = """
import sys, torch
from safetensors.torch import load_file
for p in sys.argv[1:]:
    if p.endswith(".safetensors"):
        load_file(p)
    else:
        torch.load(p, weights_only=True, map_location="cpu")
"""

# argv: jobs, then the checkpoints. jobs > 1: handed over at once, as a whole pytest run does;
# jobs = 1: one request at a time, as an xdist worker does.
RELOADER = """
import os, sys
from pathlib import Path
from pytest_itera.reload import Reloader
jobs, paths = int(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
with Reloader(jobs=jobs) as r:
    if jobs > 1:
        r.prefetch(paths)
    results = [r.reload(p, p.name) for p in paths]
bad = [x.cause for x in results if not x.ok]
assert not bad, bad
print(max(x.peak_rss or 0 for x in results))
"""

MAKE_CHECKPOINTS = """
import json, sys, torch
spec = json.loads(sys.argv[1])
for path, floats, seed, width in spec:
    torch.manual_seed(seed)
    count = max(1, min(64, floats // 4096))
    per = floats // count
    # width: a dimension the run's config states (artifacts-required compares them).
    shape = (per // width, width) if width else (per,)
    model = {f"layer{i}.weight": torch.randn(*shape) for i in range(count)}
    torch.save({"model": model, "epoch": seed, "step": 100 * seed}, path)
"""


# ----------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float
    rss: int  # bytes
    ok: bool
    out: str


# The Python environment every command of a scenario runs in (main() sets it per pass):
#   "cache"   a warm bytecode cache (PYTHONPYCACHEPREFIX in the workdir, filled before
#             timing), as an installed package runs;
#   "nocache" PYTHONDONTWRITEBYTECODE=1 and no cache for the repository's modules, as this
#             machine and many training images run: pytest re-rewrites the asserts of every
#             module of an entry-point plugin's distribution it imports, and plain modules of
#             the source tree are compiled again, in every process. Installed packages keep
#             the bytecode pip compiled (site-packages' __pycache__), as they do for users.
ENVIRONMENT = "cache"
ENVIRONMENTS = ("cache", "nocache")
PYCACHE = Path(tempfile.gettempdir())  # main() sets it: <workdir>/pycache
# -p no:NAME for every pytest command (--without-plugin): another plugin's own cost.
BLOCKED: list[str] = []


def run(cmd: Sequence[str], cwd: Path, probe: Path | None = None) -> Sample:
    """One whole process: wall, user+sys (with what it waited for), peak RSS."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(REPO), str(cwd))),
           "ITERA_BENCH_PROBE": str(probe or ""), "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if ENVIRONMENT == "cache":
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    rss = usage.ru_maxrss * 1024
    if probe is not None and probe.exists():
        rss = json.loads(probe.read_text())["hwm"]
        probe.unlink()
    return Sample(wall, usage.ru_utime + usage.ru_stime, rss, proc.returncode == 0, out)


def medians(samples: list[Sample]) -> Sample:
    return Sample(statistics.median(s.wall for s in samples),
                  statistics.median(s.cpu for s in samples), max(s.rss for s in samples),
                  all(s.ok for s in samples), samples[-1].out)


def interleaved(repeat: int, *commands: Callable[[], Sample]) -> list[Sample]:
    """Medians of each command, run in turn: a noisy machine slows all of them alike."""
    runs: list[list[Sample]] = [[] for _ in commands]
    for _ in range(repeat):
        for sink, command in zip(runs, commands, strict=True):
            sink.append(command())
    return [medians(s) for s in runs]


def warm(root: Path) -> int:
    """Read every byte once (warm page cache); returns the total."""
    total = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        with path.open("rb", buffering=0) as f:
            while data := f.read(16 * CHUNK):
                total += len(data)
    return total


def warm_bytecode(work: Path) -> None:
    """Fill the bytecode cache (PYTHONPYCACHEPREFIX) before anything is timed: every module of
    the plugin compiled, as pip compiles an installed package (the reload server, run with
    -B, never writes its own), then pytest with the plugin active and inert, the Reloader and
    torch."""
    run([PY, "-m", "compileall", "-q", str(REPO / "pytest_itera")], work)
    camp = base_campaign(work / "warm-camp")
    run(pytest_cmd(camp), work)
    bare_pytest(work)
    run([PY, "-c", "import torch, pytest_itera.reload"], work)


def bare_pytest(work: Path) -> Sample:
    """pytest's own start-up (installed plugins, -p no:itera) on an empty folder."""
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    return run([PY, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "itera_bench_probe",
                *blocked(), "-p", "no:itera", "--collect-only", str(empty)], work,
               work / "probe.json")


def pytest_cmd(camp: Path, *args: str) -> list[str]:
    return [PY, "-m", "pytest", "--itera-campaign", str(camp), "-p", "no:cacheprovider", "-q",
            "-p", "itera_bench_probe", *blocked(), *args]


def blocked() -> list[str]:
    return [arg for name in BLOCKED for arg in ("-p", f"no:{name}")]


def not_accepted(sample: Sample) -> bool:
    """A pytest run of a bench campaign that failed or errored items."""
    return re.search(r"\b\d+ (failed|errors?)\b", outcome(sample)) is not None


def outcome(sample: Sample) -> str:
    lines = [ln for ln in sample.out.strip().splitlines() if " in " in ln and "=" not in ln[:1]]
    return lines[-1].strip() if lines else sample.out.strip().splitlines()[-1][:80]


# ----------------------------------------------------------------------------- campaigns


def base_campaign(root: Path, edit: Callable[[CampaignBuilder], None] | None = None) -> Path:
    builder = CampaignBuilder(root)
    if edit is not None:
        edit(builder)
    return builder.write()


def add_files(root: Path, writers: dict[str, Callable[[Path], None]]) -> None:
    """Write big files straight to disk (never whole in memory), then list them."""
    for rel, write in writers.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    list_in_manifest(root, list(writers))


def list_in_manifest(root: Path, rels: list[str],
                     checkpoints: Sequence[dict[str, str]] = ()) -> None:
    """Add files (bytes, sha256) and checkpoint records to a written campaign's manifest."""
    manifest_path = root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for rel in rels:
        manifest["files"].append({"path": rel, "bytes": (root / rel).stat().st_size,
                                  "sha256": hashlib_file(root / rel)})
    manifest["files"].sort(key=lambda f: f["path"])
    manifest["checkpoints"] = [*manifest["checkpoints"], *checkpoints]
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


def rehash(root: Path, rel: str) -> None:
    """A listed file was edited: its record follows."""
    manifest_path = root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for record in manifest["files"]:
        if record["path"] == rel:
            record.update(bytes=(root / rel).stat().st_size, sha256=hashlib_file(root / rel))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


def name_in_reload(root: Path, rels: Sequence[str]) -> None:
    """The reload instructions name every deliverable checkpoint (analysis-present)."""
    with (root / "RELOAD.md").open("a") as f:
        for rel in rels:
            f.write(f"\n- `{rel}`: `torch.load(path, weights_only=True)`, a state_dict.\n")
    rehash(root, "RELOAD.md")


# The example is a recorder's campaign: its manifest is never edited by hand (journal-agrees
# refuses a manifest replaced without a reopening), so (g) adds its files the way a user would,
# reopening it (in a child process: this one stays small, see make_checkpoints).
REOPEN = """
import json, sys
from pathlib import Path
from pytest_itera.record import CampaignRecorder
root, big = Path(sys.argv[1]), sys.argv[2]
man = json.loads((root / "manifest.json").read_text())
rec = CampaignRecorder(root)
rec.reopen(reason="bench (g): a heavy checkpoint and log added")
saves = [json.loads(line) for line in (root / "itera-journal.jsonl").read_text().splitlines()]
last = max(e["at"] for e in saves if e.get("event") == "checkpoint" and e.get("run") == "control")
rec.checkpoint_saved(big, run="control", at=last)  # saved with the control's last save
rec.add_checkpoint(big, run="control", format="torch", kind="weights")
rec.write_text("RELOAD.md", rec.path("RELOAD.md").read_text()
               + f"\\n- `{big}`: `torch.load(path, weights_only=True)`, a state_dict.\\n")
schedule = {k: v for k, v in man["schedule"].items() if k != "decisions"}  # from the journal
rec.close(analysis="analysis.md", reload_instructions="RELOAD.md", conclusion=man["conclusion"],
          budget=man["budget"], schedule=schedule, closed_at=man["closed_at"], check=False)
"""


def reopen_with(camp: Path, big: str) -> None:
    """Reopen the closed example, list ``big`` as the control's weights (its files written
    beside it are journaled as added) and close it again with the same documents."""
    subprocess.run([PY, "-c", REOPEN, str(camp), big], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True)


def hashlib_file(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with path.open("rb", buffering=0) as f:
        while data := f.read(CHUNK):
            h.update(data)
    return h.hexdigest()


def make_checkpoints(spec: list[tuple[Path, int, int]], workdir: Path, width: int = 0) -> None:
    """torch.save in a child process: this process stays small (its RSS would leak into
    the ru_maxrss of every process it forks). ``width``: every tensor has that last
    dimension (the width the run's config states)."""
    arg = json.dumps([(str(p), floats, seed, width) for p, floats, seed in spec])
    subprocess.run([PY, "-c", MAKE_CHECKPOINTS, arg], check=True, cwd=workdir)


def jsonl_writer(gib: float, *, kind: str) -> Callable[[Path], None]:
    """Prediction records with an image path and a URL, or per-step metrics; no temp paths."""

    def write(path: Path) -> None:
        lines = []
        for i in range(4000):
            if kind == "predictions":
                row: dict[str, object] = {
                    "id": f"ex-{i:06d}", "prediction": ["pos", "neg"][i % 2],
                    "score": round((i * 7919 % 1000) / 1000, 3),
                    "text": "the model reads the review and predicts its label " * 2,
                    "image": f"data/images/{i:06d}.jpg",
                    "source": f"https://example.org/corpus/v2/{i % 97}/item/{i}"}
            else:
                row = {"step": i, "loss": 1 / (i + 1), "lr": 3e-4, "grad_norm": 0.5 + i % 7,
                       "checkpoint": f"runs/control/ckpt/step-{i:06d}.pt", "epoch": i // 1000}
            lines.append(json.dumps(row))
        block = ("\n".join(lines) + "\n").encode()
        target = int(gib * (1 << 30))
        with path.open("wb") as f:
            written = 0
            while written < target:
                f.write(block)
                written += len(block)

    return write


def sweep_edit(runs: int) -> Callable[[CampaignBuilder], None]:
    """The tiny campaign plus ``runs`` planned runs, each with config, predictions, metrics."""

    def edit(b: CampaignBuilder) -> None:
        for i in range(runs):
            rid = f"sweep-{i:04d}"
            config = json.dumps({"run": rid, "lr": 1e-4 * (1 + i % 10)}).encode()
            b.files[f"configs/{rid}.json"] = config
            b.files[f"runs/{rid}/predictions.jsonl"] = b.files["runs/control/predictions.jsonl"]
            b.files[f"runs/{rid}/metrics.json"] = json.dumps({"accuracy": 0.7}).encode()
            b.plan["runs"].append({"id": rid, "role": "variant", "category": "exploratory",
                                   "config_sha256": sha256(config)})
            b.manifest["runs"].append({
                # A sweep explores: its runs are rejected with a reason (an accepted variant
                # would ship a checkpoint to reload, which (c) does not measure).
                **b.manifest["runs"][-1], "id": rid, "outcome": "rejected",
                "rejection": f"lr {1e-4 * (1 + i % 10):g} is below the control on dev",
                "config": f"configs/{rid}.json", "config_sha256": sha256(config),
                "metrics": {}, "predictions": f"runs/{rid}/predictions.jsonl",
                "measurements": measurements_path(rid)})
            b.measurements[rid] = json.loads(json.dumps(b.measurements["variant-a"]))
            b.set_metric(rid, "accuracy", 0.7)  # manifest and measurements agree

    return edit


# ----------------------------------------------------------------------------- scenarios


@dataclass
class Row:
    scenario: str
    ours: Sample | None
    floor: Sample | None
    target: float | None  # max ratio (wall); None: reported only
    note: str = ""
    value_override: tuple[str, bool] | None = None  # (text, pass) for non-ratio targets
    base: Sample | None = None  # pytest's own start-up, without the plugin (same run)

    def ratio(self, field: str, *, net: bool = False) -> float | None:
        if self.ours is None or self.floor is None:
            return None
        floor = getattr(self.floor, field)
        ours = getattr(self.ours, field)
        if net and self.base is not None:
            ours -= getattr(self.base, field)
        return ours / floor if floor > 0 else None


def against_hash_floor(
    args: argparse.Namespace, camp: Path, work: Path, *select: str
) -> tuple[Sample, Sample, Sample]:
    """pytest-itera on ``camp``, the hashlib floor over the same files and pytest's own
    start-up, interleaved ``args.repeat`` times."""
    probe = work / "probe.json"
    ours, floor, base = interleaved(
        args.repeat,
        lambda: run(pytest_cmd(camp, *select), work, probe),
        lambda: run([PY, "-c", HASH_FLOOR, str(camp)], work),
        lambda: bare_pytest(work),
    )
    return ours, floor, base


# The items that reload a checkpoint, which the hashlib floor does not: checkpoint-reloads,
# resume-complete, artifacts-required (the must resume check's evidence is a reload of its
# resume checkpoint, R6) and budget-consistent (a run is accepted when its checks pass,
# reloads included). A whole run pays the reload server's torch import (~0.9 s CPU, on the
# second core while the first hashes): (d) and (g) measure that against floors that pay it too.
NO_RELOADS = ("not checkpoint-reloads and not resume-complete and not artifacts-required "
              "and not budget-consistent")


def scenario_a(args: argparse.Namespace, work: Path) -> list[Row]:
    camp = base_campaign(work / "a-camp")
    spec, checkpoints = [], []
    floats = int(args.gib * (1 << 30)) // 4
    for seed, run_id in enumerate(("control", "variant-a", "resume-check")):
        rel = f"runs/{run_id}/big.pt"  # the tiny campaign already lists runs/*/last.pt
        spec.append((camp / rel, floats, seed))
        checkpoints.append({"path": rel, "run": run_id, "format": "torch", "kind": "weights"})
    make_checkpoints(spec, work)
    name_in_reload(camp, [c["path"] for c in checkpoints])
    list_in_manifest(camp, [str(c["path"]) for c in checkpoints], checkpoints)
    total = warm(camp)
    ours, floor, base = against_hash_floor(args, camp, work, "-k", NO_RELOADS)
    rows = [Row(f"(a) 3 x {args.gib:g} GiB checkpoints ({total / (1 << 30):.2f} GiB), "
                "no reloads", ours, floor, 1.10, outcome(ours), base=base)]
    big = camp / "runs/control/big.pt"
    child = run([PY, "-c", RELOADER, "1", str(big)], work)
    peak = int(child.out.strip().splitlines()[-1]) if child.ok else 0
    rows.append(Row(f"(a2) reload child of one {args.gib:g} GiB checkpoint", None, None, None,
                    "peak RSS of the forked loading child (>= its anonymous memory)",
                    (f"{peak / MIB:.0f} MiB (target <= 300 MiB)", child.ok and peak <= 300 * MIB)))
    return rows


def scenario_b(args: argparse.Namespace, work: Path) -> list[Row]:
    camp = base_campaign(work / "b-camp")
    per = args.text_gib / 8
    writers = {}
    for run_id in ("control", "data-check", "resume-check", "variant-a"):
        writers[f"runs/{run_id}/predictions-full.jsonl"] = jsonl_writer(per, kind="predictions")
        writers[f"runs/{run_id}/metrics.jsonl"] = jsonl_writer(per, kind="metrics")
    add_files(camp, writers)
    total = warm(camp)
    ours, floor, base = against_hash_floor(args, camp, work, "-k", NO_RELOADS)
    whole, _, _ = against_hash_floor(args, camp, work)
    return [Row(f"(b) {total / (1 << 30):.2f} GiB JSONL predictions + metrics, no reloads",
                ours, floor, 1.25, outcome(ours), base=base),
            Row("(b) the same, every check (the tiny campaign's 3 checkpoints reloaded)",
                whole, floor, None, f"{outcome(whole)}; the floor does not import torch",
                base=base)]


def count_items(camp: Path, work: Path) -> int:
    listed = run(pytest_cmd(camp, "--collect-only"), work)
    return sum(1 for line in listed.out.splitlines() if "::" in line)


def trivial_folder(work: Path, name: str, items: int) -> Path:
    folder = work / name
    folder.mkdir()
    (folder / "conftest.py").write_text(TRIVIAL)
    (folder / "items.count").write_text(str(items))
    return folder


def scenario_c(args: argparse.Namespace, work: Path) -> list[Row]:
    """Per item: the slope between a sweep of --runs runs and one of half as many, for the
    plugin and for trivial items of the same counts. A slope leaves out every fixed cost
    of a run (pytest's start-up, the reload server's torch import and the tiny campaign's
    reloads, the run table), which per-item work must not be charged with."""
    camp = base_campaign(work / "c-camp", sweep_edit(args.runs))
    half = base_campaign(work / "c-half", sweep_edit(args.runs // 2))
    tiny = base_campaign(work / "c-tiny")
    warm(camp)
    warm(half)
    items, items_half = count_items(camp, work), count_items(half, work)
    trivial = trivial_folder(work, "c-trivial", items)
    trivial_half = trivial_folder(work, "c-trivial-half", items_half)
    empty = trivial_folder(work, "c-empty", 0)
    probe = work / "probe.json"
    base = [PY, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "itera_bench_probe",
            *blocked()]
    ours, ours_half, triv, triv_half, active, inert, bare = interleaved(
        args.repeat,
        lambda: run(pytest_cmd(camp), work, probe),
        lambda: run(pytest_cmd(half), work, probe),
        lambda: run([*base, str(trivial)], work, probe),
        lambda: run([*base, str(trivial_half)], work, probe),
        lambda: run(pytest_cmd(tiny, "--collect-only"), work, probe),
        lambda: run([*base, "--collect-only", str(empty)], work, probe),
        lambda: run([*base, "-p", "no:itera", "--collect-only", str(empty)], work, probe),
    )
    # Judged on CPU time (user+sys): on a shared 2-core machine the wall time of a 1-3 s
    # process varies by more than what is measured here; wall figures are printed too.
    extra = items - items_half
    per_triv = (triv.cpu - triv_half.cpu) / extra
    per_ours = (ours.cpu - ours_half.cpu) / extra
    wall_triv = (triv.wall - triv_half.wall) / extra
    wall_ours = (ours.wall - ours_half.wall) / extra
    added = active.cpu - bare.cpu
    return [
        Row(f"(c) sweep of {args.runs} runs: {items} items, whole run vs trivial items",
            ours, triv, None, f"{outcome(ours)}"),
        Row(f"(c) per item, CPU (slope: {args.runs} runs minus {args.runs // 2})", None, None,
            None, f"itera {per_ours * 1e6:.0f} us vs trivial {per_triv * 1e6:.0f} us CPU over "
            f"{extra} items; wall {wall_ours * 1e6:.0f} vs {wall_triv * 1e6:.0f} us",
            (f"{per_ours / per_triv:.2f}x (target <= 1.5x)", per_ours <= 1.5 * per_triv)),
        Row("(c) start-up added, CPU (tiny campaign collect-only vs -p no:itera)", active, bare,
            None, f"wall {active.wall - bare.wall:+.2f} s; inert plugin (no --itera-campaign) "
            f"{(inert.cpu - bare.cpu) * 1e3:+.0f} ms CPU",
            (f"{added:+.2f} s (target <= 0.2 s)", added <= 0.2)),
    ]


def scenario_d(args: argparse.Namespace, work: Path) -> list[Row]:
    camp = base_campaign(work / "d-camp")
    runs = ("control", "data-check", "resume-check", "variant-a")
    spec, checkpoints = [], []
    for i in range(args.checkpoints):
        rel = f"runs/{runs[i % 4]}/ckpt/step-{i:03d}.pt"
        (camp / rel).parent.mkdir(parents=True, exist_ok=True)
        spec.append((camp / rel, 64 * 64 + 64 * 8, i))
        checkpoints.append({"path": rel, "run": runs[i % 4], "format": "torch",
                            "kind": "weights"})
    make_checkpoints(spec, work)
    name_in_reload(camp, [c["path"] for c in checkpoints])
    list_in_manifest(camp, [str(c["path"]) for c in checkpoints], checkpoints)
    warm(camp)
    paths = [str(p) for p, _, _ in spec]
    careful, naive = ([PY, "-c", CAREFUL_LOADS, *paths], [PY, "-c", NAIVE_LOADS, *paths])
    has_check = "::checkpoint-reloads[" in run(pytest_cmd(camp, "--collect-only"), work).out
    probe = work / "probe.json"
    jobs = str(min(4, len(os.sched_getaffinity(0))))
    commands = [lambda: run(careful, work), lambda: run(naive, work),
                lambda: run([PY, "-c", RELOADER, jobs, *paths], work),
                lambda: run([PY, "-c", RELOADER, "1", *paths], work)]
    if has_check:
        commands += [lambda: run(pytest_cmd(camp, "-k", "checkpoint-reloads"), work, probe),
                     lambda: bare_pytest(work)]
    floor, naive_floor, batch, serial, *plugin = interleaved(args.repeat, *commands)
    rows = [Row(f"(d) {args.checkpoints} small checkpoints: Reloader, all handed over at once",
                batch, floor, 1.20, f"prefetch(), {jobs} children at a time, a fork per "
                "checkpoint (what a whole pytest run does); whole process"),
            Row(f"(d) {args.checkpoints} small checkpoints: Reloader, one at a time", serial,
                floor, None, "reload() per checkpoint, 1 child at a time (an xdist worker)")]
    if plugin:
        rows.append(Row(f"(d) {args.checkpoints} small checkpoints: pytest -k checkpoint-reloads",
                        plugin[0], floor, 1.20, f"{outcome(plugin[0])}; floor = the careful "
                        "script (torch.load mmap=True)", base=plugin[1]))
        rows.append(Row(f"(d) {args.checkpoints} small checkpoints: pytest -k checkpoint-reloads, "
                        "naive floor", plugin[0], naive_floor, None, "floor = torch.load "
                        "without mmap (reported only)", base=plugin[1]))
    else:
        rows.append(Row("(d) pytest -k checkpoint-reloads", None, None, None,
                        "not measured: no checkpoint-reloads check registered in this build"))
    return rows


def scenario_e(args: argparse.Namespace, work: Path) -> list[Row]:
    camp = work / "e-camp"
    subprocess.run([PY, "-m", "example_campaign", "--out", str(camp)], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
                   capture_output=True)
    total = warm(camp)
    ours, floor, base = against_hash_floor(args, camp, work)
    return [Row(f"(e) example campaign ({total / MIB:.1f} MiB), every check", ours, floor, None,
                f"{outcome(ours)}; floor = hashlib only (no torch import, no reloads)", base=base)]


def small_files(root: Path, count: int, per_folder: int = 1000) -> list[str]:
    """``count`` small files (200-1,200 bytes, distinct), ``per_folder`` to a folder."""
    rels = []
    for n in range(count):
        rel = f"bulk/d{n // per_folder:04d}/f{n % per_folder:04d}.bin"
        path = root / rel
        if n % per_folder == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(n.to_bytes(8, "little") * (25 + n % 126))
        rels.append(rel)
    return rels


def scenario_f(args: argparse.Namespace, work: Path) -> list[Row]:
    """Issue 19 point 5: the extra cost of many small listed files (the same campaign with and
    without them) against ``find | xargs openssl dgst -sha256`` over those files."""
    camp = base_campaign(work / "f-camp")
    without = base_campaign(work / "f-without")
    rels = small_files(camp, args.small_files)
    list_in_manifest(camp, rels)
    warm(camp)
    warm(without)
    items = count_items(camp, work)
    floor_cmd = ["sh", "-c", f"find {camp / 'bulk'} -type f -print0 | "
                 "xargs -0 openssl dgst -sha256 > /dev/null"]
    probe = work / "probe.json"
    ours, ours0, fast, fast0, floor = interleaved(
        args.repeat,
        lambda: run(pytest_cmd(camp), work, probe),
        lambda: run(pytest_cmd(without), work, probe),
        lambda: run(pytest_cmd(camp, "--itera-fast"), work, probe),
        lambda: run(pytest_cmd(without, "--itera-fast"), work, probe),
        lambda: run(floor_cmd, work),
    )
    rows = []
    for name, full, base in (("every check", ours, ours0), ("--itera-fast", fast, fast0)):
        extra = full.wall - base.wall
        ratio = extra / floor.wall
        rss_ok = full.rss < 300 * MIB
        rows.append(Row(
            f"(f) {args.small_files:,} small files, {items} items, {name}: extra wall", full,
            floor, None, f"{outcome(full)}; without the files {base.wall:.2f} s, "
            f"{base.cpu:.2f} s CPU, {base.rss / MIB:.0f} MiB; extra CPU "
            f"{full.cpu - base.cpu:.2f} s = {(full.cpu - base.cpu) / floor.cpu:.2f}x the floor's; "
            "floor = find | xargs openssl dgst -sha256",
            (f"extra {extra:.2f} s = {ratio:.2f}x floor (target <= 3x); peak RSS "
             f"{full.rss / MIB:.0f} MiB (target < 300 MiB)", ratio <= 3 and rss_ok)))
    return rows


def checkpoint_files(camp: Path) -> list[str]:
    """Every file a naive user would load: each listed checkpoint, or each weights file of
    a listed checkpoint folder."""
    manifest = json.loads((camp / "manifest.json").read_text())
    out: list[str] = []
    for record in manifest["checkpoints"] + manifest.get("adapters", []):
        path = camp / record["path"]
        members = sorted(path.rglob("*")) if path.is_dir() else [path]
        out += [str(m) for m in members
                if m.is_file() and m.suffix in (".pt", ".pth", ".bin", ".ckpt", ".safetensors")
                and m.name != "training_args.bin"]
    return out


def scenario_g(args: argparse.Namespace, work: Path) -> list[Row]:
    """Issue 19 point 6: the example campaign plus a big checkpoint and a big log, whole
    process, against what a user would script: ``openssl dgst -sha256`` over every file,
    then one Python that imports torch and loads each checkpoint."""
    camp = work / "g-camp"
    subprocess.run([PY, "-m", "example_campaign", "--out", str(camp)], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
                   capture_output=True)
    big, log = "runs/control/big.pt", "runs/control/train.log"
    # Its tensors have the width configs/control.json states (artifacts-required).
    width = json.loads((camp / "configs/control.json").read_text())["width"]
    make_checkpoints([(camp / big, int(args.heavy_ckpt_mib * MIB) // 4, 7)], work, width)

    def write_log(path: Path) -> None:
        line = b"step 000000 loss 0.693147 lr 3.0e-04 grad_norm 0.51 tokens/s 41234\n"
        block = line * 16384
        with path.open("wb") as f:
            for _ in range(int(args.heavy_log_mib * MIB) // len(block)):
                f.write(block)

    write_log(camp / log)
    reopen_with(camp, big)
    total = warm(camp)
    loads = checkpoint_files(camp)

    def script(loader: str) -> list[str]:
        return ["sh", "-c", f"find {camp} -type f -print0 | xargs -0 openssl dgst -sha256 "
                f"> /dev/null && exec {PY} -c '{loader}' \"$@\"", "floor", *loads]

    probe = work / "probe.json"
    ours, careful, naive = interleaved(
        args.repeat,
        lambda: run(pytest_cmd(camp), work, probe),
        lambda: run(script(CAREFUL_LOADS), work),
        lambda: run(script(NAIVE_LOADS), work),
    )
    target = HEAVY_TARGET[ENVIRONMENT]
    name = (f"(g) example + {args.heavy_ckpt_mib:g} MiB checkpoint + {args.heavy_log_mib:g} "
            f"MiB log ({total / MIB:.0f} MiB), every check")
    rows = []
    for label, floor, judged in (("careful", careful, True), ("naive", naive, False)):
        ratio = ours.wall / floor.wall
        how = ("torch.load(weights_only=True, mmap=True, map_location='cpu'), safetensors "
               "safe_open" if judged else "torch.load without mmap, safetensors load_file")
        rows.append(Row(
            f"{name}, {label} floor", ours, floor, None,
            f"{outcome(ours)}; floor = openssl dgst -sha256 over every file, then one Python: "
            f"import torch, {how} for each of {len(loads)} checkpoint files",
            (f"{ratio:.2f}x the {label} script, whole process"
             + (f" (target <= {target:.2f}x)" if judged else " (reported only)"),
             ratio <= target or not judged)))
    return rows


SCENARIOS = {"a": scenario_a, "b": scenario_b, "c": scenario_c, "d": scenario_d,
             "e": scenario_e, "f": scenario_f, "g": scenario_g}


# ----------------------------------------------------------------------------- the table


def fmt(sample: Sample | None) -> tuple[str, str, str]:
    if sample is None:
        return "", "", ""
    return f"{sample.wall:.2f} s", f"{sample.cpu:.2f} s", f"{sample.rss / MIB:.0f} MiB"


def verdicts(row: Row) -> tuple[str, str]:
    """(target text, PASS/MISS) for the wall-ratio target and the memory target."""
    if row.value_override is not None:
        text, ok = row.value_override
        return text, "PASS" if ok else "MISS"
    # Net: pytest's own start-up (measured in the same run, without the plugin) subtracted.
    ratio = row.ratio("wall", net=True)
    if row.target is None or ratio is None:
        return "", ""
    return f"<= {row.target:.2f}x", "PASS" if ratio <= row.target else "MISS"


def table(rows: list[Row]) -> list[str]:
    head = ("| scenario | pytest-itera wall | CPU | peak RSS | floor wall | floor CPU | "
            "ratio wall | ratio CPU | net wall ratio | target | result |")
    lines = [head, "|" + "---|" * 11]
    for row in rows:
        ours, floor = fmt(row.ours), fmt(row.floor)
        wall, cpu, net = row.ratio("wall"), row.ratio("cpu"), row.ratio("wall", net=True)
        target, result = verdicts(row)
        # Issue 29 sets (f)'s own bound (300 MiB for 100,000 listed files); 200 MiB elsewhere.
        bound = SMALL_FILES_RSS if "(f)" in row.scenario else RSS_TARGET
        rss_ok = row.ours is None or row.ours.rss <= bound or "Reloader" in row.scenario
        if not rss_ok:
            result = (result + " " if result else "") + "RSS MISS"
        if row.ours is not None and not_accepted(row.ours):
            # Every bench campaign is built to be ACCEPTED: failing items cost time of their
            # own (reports, tracebacks), so such a figure measures the wrong thing.
            result = "INVALID (campaign not accepted)"
        cells = [row.scenario, *ours, floor[0], floor[1],
                 f"{wall:.2f}x" if wall else "", f"{cpu:.2f}x" if cpu else "",
                 f"{net:.2f}x" if net and row.base else "", target, result]
        lines.append("| " + " | ".join(cells) + " |")
        if row.note:
            lines.append(f"|   ↳ {row.note} |" + " |" * 10)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default="a,b,c,d,e,f,g",
                        help="comma-separated: a,b,c,d,e,f,g")
    parser.add_argument("--gib", type=float, default=1.0, help="(a) size of each checkpoint")
    parser.add_argument("--text-gib", type=float, default=1.0, help="(b) total JSONL size")
    parser.add_argument("--runs", type=int, default=1000, help="(c) runs in the sweep")
    parser.add_argument("--checkpoints", type=int, default=50, help="(d) small checkpoints")
    parser.add_argument("--small-files", type=int, default=100_000,
                        help="(f) small listed files")
    parser.add_argument("--heavy-ckpt-mib", type=float, default=512,
                        help="(g) the big checkpoint")
    parser.add_argument("--heavy-log-mib", type=float, default=256, help="(g) the big log")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved runs; medians")
    parser.add_argument("--envs", default=",".join(ENVIRONMENTS),
                        help="comma-separated: cache (warm bytecode cache), nocache "
                        "(PYTHONDONTWRITEBYTECODE=1); every scenario runs in each")
    parser.add_argument("--without-plugin", action="append", default=[], metavar="NAME",
                        help="pass -p no:NAME to every pytest command (e.g. hypothesispytest, "
                        "an installed plugin pytest-itera does not bring)")
    parser.add_argument("--workdir", type=Path, help="where campaigns are written")
    parser.add_argument("--keep", action="store_true", help="keep the campaigns afterwards")
    args = parser.parse_args()
    global ENVIRONMENT, PYCACHE
    BLOCKED.extend(args.without_plugin)
    envs = [e.strip() for e in args.envs.split(",")]
    assert set(envs) <= set(ENVIRONMENTS), envs
    root = Path(tempfile.mkdtemp(prefix="itera-bench-", dir=args.workdir))
    PYCACHE = root / "pycache"
    stale = sorted(str(p.relative_to(REPO)) for p in (REPO / "pytest_itera").rglob("__pycache__"))
    rows: list[Row] = []
    try:
        print(f"# cores {os.cpu_count()}, Python {sys.version.split()[0]}, warm page cache, "
              f"medians of {args.repeat} interleaved whole-process runs; environments "
              f"{', '.join(envs)}; load average {load()}; workdir {root}"
              + (f"; -p no:{' -p no:'.join(BLOCKED)}" if BLOCKED else ""), flush=True)
        if stale and "nocache" in envs:
            print(f"# WARNING: {len(stale)} __pycache__ folders in pytest_itera/ (e.g. "
                  f"{stale[0]}): the nocache figures use them", flush=True)
        for key in args.scenarios.split(","):
            for env in envs:
                ENVIRONMENT = env
                work = root / env
                if not work.exists():
                    work.mkdir()
                    (work / "itera_bench_probe.py").write_text(PROBE)
                    if env == "cache":
                        warm_bytecode(work)
                started = time.perf_counter()
                new = SCENARIOS[key.strip()](args, work)
                for row in new:
                    row.scenario = f"[{env}] {row.scenario}"
                rows += new
                print(f"# ({key}, {env}) done in {time.perf_counter() - started:.0f} s; load "
                      f"average {load()}", flush=True)
                print("\n".join(table(new)[2:]), flush=True)
        print()
        print("\n".join(table(rows)))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def load() -> str:
    """The 1, 5 and 15 minute load averages: a shared machine's figures need them."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
