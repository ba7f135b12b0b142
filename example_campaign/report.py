"""analysis.md, RELOAD.md, README.md and the receipt, from what the runs actually produced."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from importlib import metadata
from typing import TYPE_CHECKING, Any

from example_campaign import plan as P
from example_campaign.base import AUTHOR, commit_message
from example_campaign.make_corpus import CORPORA, LABELS

if TYPE_CHECKING:
    from example_campaign.data import Example
    from pytest_itera.record.campaign import CampaignRecorder

NEAR = 0.15  # "near a ring boundary": within this radius distance


@dataclass(frozen=True)
class Invoice:
    """The one expense the campaign included beside the rental, as its receipt bills it."""

    number: str
    order: str
    seller: str
    item: str
    amount: str
    currency: str = "USD"

    @property
    def file(self) -> str:
        return f"receipts/{self.number}.txt"


STORAGE_INVOICE = Invoice(
    number="INV-40715", order="ORD-88213", seller="Northbridge Object Storage",
    item="bucket receiving the retrieved campaign folder, 5 GB, one month", amount="1.20",
)


@dataclass
class ModelRun:
    """What a trained, accepted run leaves for the analysis."""

    run_id: str
    corpus: str
    predictions: list[int]  # class index per corpus example, corpus order
    accuracy: dict[str, float]
    steps: int


@dataclass
class Results:
    """What the campaign's runs produced, that the texts report: the build
    (:class:`example_campaign.build.Build`) fills it."""

    rec: CampaignRecorder
    corpora: dict[str, list[Example]] = field(default_factory=dict)
    model_runs: dict[str, ModelRun] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)


def delivered_corpora(results: Results) -> dict[str, list[str]]:
    """Distinct corpus (by sha256) -> the accepted control/variant runs that deliver it."""
    sha = {c["id"]: c["sha256"] for c in results.rec.plan["corpora"]}
    delivered: dict[str, list[str]] = {}
    for run_id, planned in P.RUNS.items():
        record = results.rec.run(run_id).record
        if planned.role in ("control", "variant") and record.get("outcome") == "accepted":
            delivered.setdefault(sha[record["corpus"]], []).append(run_id)
    return delivered


def cost_per_corpus(results: Results) -> tuple[Decimal, int, str | None]:
    """The rental, the distinct corpora delivered, and the rental's share per corpus."""
    lot = results.rec.plan["budget"]["lots"][0]
    total = Decimal(lot["price"]) * lot["quantity"]
    accepted = len(delivered_corpora(results))
    share = str((total / accepted).quantize(Decimal("0.01"))) if accepted else None
    return total, accepted, share


def analysis_text(build: Results, conclusion: dict[str, Any]) -> str:
    lines = [
        "# Error analysis",
        "",
        "Computed at closure from the predictions of every accepted run on the frozen corpora "
        + ", ".join(f"{c.id} ({len(build.corpora[c.id])} examples, "
                    f"{sum(e.split == 'test' for e in build.corpora[c.id])} in the test split)"
                    for c in CORPORA) + ".",
        "",
        "## Runs",
        "",
        "| run | corpus | train | validation | test |",
        "| --- | --- | --- | --- | --- |",
        *[f"| {r.run_id} | {r.corpus} | {r.accuracy['train']:.4f} | "
          f"{r.accuracy['validation']:.4f} | {r.accuracy['test']:.4f} |"
          for r in build.model_runs.values()],
        "",
        f"Conclusion: {conclusion['text']}",
        "",
        f"Decision: {build.facts['decision']}",
        "",
    ]
    for corpus in CORPORA:
        control = build.model_runs[P.CONTROL_OF[corpus.id]]
        examples = build.corpora[corpus.id]
        compared = [r for r in build.model_runs.values()
                    if r.corpus == corpus.id and P.RUNS[r.run_id].role in ("control", "variant")]
        lines += [
            f"## {corpus.id}: the errors of {control.run_id} and its variants",
            "",
            f"The test errors of {control.run_id}, by true label:",
            "",
            *confusion(examples, control),
            "",
            *where_errors_are(examples, control),
            "",
            *[line for r in compared if r is not control
              for line in (*variant_against_control(examples, r, control), "")],
            *shared_errors(examples, compared),
            "",
        ]
    lines += [
        f"The LoRA adapter trained on the frozen control reaches "
        f"{build.facts['adapter_test_accuracy']:.4f} test accuracy on {P.RUNS['control'].corpus} "
        f"(control {build.model_runs['control'].accuracy['test']:.4f}).",
        "",
    ]
    return "\n".join(lines)


def _test_pairs(examples: list[Example], result: ModelRun) -> list[tuple[str, Example]]:
    return [(LABELS[p], e) for p, e in zip(result.predictions, examples, strict=True)
            if e.split == "test"]


def confusion(examples: list[Example], result: ModelRun) -> list[str]:
    pairs = _test_pairs(examples, result)
    rows = ["| label \\ predicted | " + " | ".join(LABELS) + " | errors |",
            "| --- | " + " | ".join("---" for _ in LABELS) + " | --- |"]
    for label in LABELS:
        counts = [sum(e.label == label and p == q for p, e in pairs) for q in LABELS]
        wrong = sum(c for q, c in zip(LABELS, counts, strict=True) if q != label)
        rows.append(f"| {label} | " + " | ".join(map(str, counts)) + f" | {wrong} |")
    return rows


def where_errors_are(examples: list[Example], result: ModelRun) -> list[str]:
    pairs = _test_pairs(examples, result)
    errors = [e for p, e in pairs if p != e.label]
    noisy = [e for e in errors if e.label != e.rule_label]
    near = [e for e in errors if e.label == e.rule_label and e.boundary_distance < NEAR]
    base_noisy = sum(e.label != e.rule_label for _, e in pairs) / len(pairs)
    base_near = sum(e.label == e.rule_label and e.boundary_distance < NEAR
                    for _, e in pairs) / len(pairs)
    explained = len(noisy) + len(near)
    share = explained / len(errors) if errors else 0.0
    verdict = "concentrate" if share > base_noisy + base_near else "do not concentrate"
    return [
        f"{result.run_id} makes {len(errors)} errors on the test split. {len(noisy)} of them are "
        f"examples whose label contradicts the ring rule (label noise, {base_noisy:.1%} of the "
        f"test split) and {len(near)} are correctly labelled points within {NEAR} of a ring "
        f"boundary ({base_near:.1%} of the test split). Together {share:.1%} of the errors come "
        f"from {base_noisy + base_near:.1%} of the examples: the errors {verdict} on label noise "
        "and ring boundaries.",
    ]


def variant_against_control(examples: list[Example], variant: ModelRun,
                            control: ModelRun) -> list[str]:
    pairs = list(zip(_test_pairs(examples, variant), _test_pairs(examples, control), strict=True))
    fixed = [e for (v, e), (c, _) in pairs if v == e.label != c]
    broken = [e for (v, e), (c, _) in pairs if c == e.label != v]
    fixed_noisy = sum(e.label != e.rule_label for e in fixed)
    return [
        f"{variant.run_id} against {control.run_id}: it fixes {len(fixed)} of "
        f"{control.run_id}'s test errors ({fixed_noisy} of them on noisy labels) and makes "
        f"{len(broken)} new ones, a net change of {len(fixed) - len(broken):+d} test examples.",
    ]


def shared_errors(examples: list[Example], runs: list[ModelRun]) -> list[str]:
    test = [i for i, e in enumerate(examples) if e.split == "test"]
    always = [i for i in test if all(LABELS[r.predictions[i]] != examples[i].label for r in runs)]
    noisy = sum(examples[i].label != examples[i].rule_label for i in always)
    names = ", ".join(r.run_id for r in runs)
    return [
        f"{len(always)} test examples are misclassified by all of {names}; {noisy} of them carry "
        "a label that contradicts the ring rule, so no variant can be expected to fix them.",
    ]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def reload_text(build: Results) -> str:
    checkpoints = "\n".join(f"- `{c['path']}` ({c['format']}, {c['kind']}, run {c['run']})"
                            for c in build.rec.checkpoints)
    adapters = "\n".join(f"- `{a['path']}` (PEFT LoRA, run {a['run']}, base `{a['base_path']}` "
                         f"at revision `{a['base_revision']}`)" for a in build.rec.adapters)
    n_train = sum(e.split == "train" for e in build.corpora[P.RUNS["control"].corpus or ""])
    base = build.facts["base"]
    email = AUTHOR.split("<")[1].rstrip(">")
    seconds = base["epoch_seconds"]
    return f"""# Reload instructions

All paths are relative to this folder. Built with Python {platform.python_version()},
torch {_version("torch")}, safetensors {_version("safetensors")}, numpy {_version("numpy")};
any torch >= 2.10 loads these files. Run the snippets from this folder, with the
`example_campaign` package of pytest-itera importable (it defines the model).

## Checkpoints

{checkpoints}

## Adapters

{adapters}

## A resume checkpoint (`runs/<run>/last.pt`, `runs/<run>/step-<N>.pt`)

```python
import json
from pathlib import Path
from example_campaign.train import make_trainer
from pytest_itera.record.resume import load_resume_checkpoint

config = json.loads(Path("configs/control.json").read_text())
trainer = make_trainer(config, n_train={n_train})  # training examples of config["corpus"]
state = load_resume_checkpoint("runs/control/last.pt", model=trainer.model,
                               optimizer=trainer.optimizer, scheduler=trainer.scheduler)
trainer.step = state["step"]
trainer.epoch, trainer.batch = state["data"]["epoch"], state["data"]["batch"]
```

Each file is one `torch.save` dict (`model`, `optimizer`, `scheduler`, `progress`,
`rng`, `data`) and loads with `torch.load(path, weights_only=True)`: no pickled
code, no numpy objects (RNG states are plain lists and tensors). Every run's
`n_train` is the number of `"train"` examples of its corpus (`configs/<run>.json`
names it); the resume check did exactly this with `{RESUME_SOURCE}` in a new
process (`python -m example_campaign.resume_worker`).

## The control's weights, shipped as a base (`{BASE}/`)

```python
from safetensors.torch import load_file
from example_campaign.model import build_model
model = build_model(json.loads(Path("configs/control.json").read_text()))
model.load_state_dict(load_file("{BASE}/model.safetensors"))
```

`{BASE}/itera-base.json` records the base's name and revision. The revision
`{base["revision"]}` is the git commit that holds exactly `config.json` and
`model.safetensors`; check it with git, from a copy of this folder (the check
writes a `base-check/` folder beside the files):

```bash
git init -q base-check && cp {BASE}/config.json {BASE}/model.safetensors base-check/
cd base-check && git add config.json model.safetensors
GIT_AUTHOR_NAME=example_campaign GIT_AUTHOR_EMAIL={email} \\
GIT_COMMITTER_NAME=example_campaign GIT_COMMITTER_EMAIL={email} \\
GIT_AUTHOR_DATE="@{seconds} +0000" GIT_COMMITTER_DATE="@{seconds} +0000" \\
git -c commit.gpgsign=false commit -q -m "{commit_message(P.CAMPAIGN + "/control")}"
git rev-parse HEAD   # {base["revision"]}
```

The whole folder is pinned by its tree digest `{base["digest"]}` (manifest
`adapters[].base_digest`):

```bash
cd {BASE} && find . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum
```

## The LoRA adapter (`runs/control/adapter/`)

PEFT layout (`adapter_config.json` + `adapter_model.safetensors`). Its base is
`{BASE}` at revision `{base["revision"]}` (`adapter_config.json` `revision`, the
manifest's `base_revision` and `itera-base.json` agree). Build the control model
from the base as above, then:

```python
from peft import PeftModel
adapted = PeftModel.from_pretrained(model, "runs/control/adapter")
```
"""


BASE = "runs/control/base"
RESUME_SOURCE = f"runs/control/step-{P.RESUME_FROM_STEP}.pt"


def receipt_text(invoice: Invoice, when: datetime) -> str:
    return f"""INVOICE {invoice.number}
Seller: {invoice.seller}
Order reference: {invoice.order}
Date: {when.date().isoformat()}
Buyer: campaign {P.CAMPAIGN}

Item: {invoice.item}
Amount billed: {invoice.amount} {invoice.currency}
Total paid: {invoice.amount} {invoice.currency}

Paid by card at order {invoice.order}.
"""


def readme_text(build: Results) -> str:
    stopped = build.facts.get("stopped", {})
    stops = "; ".join(f"{run} (stopped at step {s['step']} of {s['of']})"
                      for run, s in stopped.items()) or "none"
    delivered = delivered_corpora(build)
    total, _, share = cost_per_corpus(build)
    sequential = P.sequential_hours()
    corpora = "\n".join(f"- `{c['path']}`: the frozen corpus `{c['id']}` ({c['examples']} "
                        "examples; its sha256 is in the plan)." for c in build.rec.plan["corpora"])
    return f"""# Campaign {build.rec.plan["campaign"]}

A toy campaign built by `python -m example_campaign`: controls and variants of a
small MLP compared on two frozen corpora of 2-D points labelled by ring.
`plan.json` was frozen before the first run; `manifest.json` lists every file with
its size and sha256.

{corpora}
- `configs/<run>.json`: each planned run's configuration (hash in the plan).
- `runs/<run>/`: measurements (`measurements.jsonl`: the loss per step, what a
  data check measured, the final metrics), predictions for every example of the
  run's corpus, resume checkpoints; `runs/control/` also holds the control's
  weights shipped as a base (`base/`) and a LoRA adapter pinned to it.
- `{STORAGE_INVOICE.file}`: the receipt of the one expense included beside the rental.
- `analysis.md`: the error analysis; `RELOAD.md`: how to reload every file.
- `schedule/observed.json`: planned and observed hours per step.

## Hours

The schedule's hours are those of the real rental this protocol is planned for
(one RTX 4090, 3-day lot, {sequential:g} sequential hours in a {P.WINDOW_HOURS}-hour
window), not the seconds this toy takes on a CPU. Observed hours are the planned
hours scaled by the work each step really did; the real wall seconds are in
`schedule/observed.json`.

## Budget unit

The unit is the corpus: a deliverable is a distinct frozen corpus delivered by an
accepted control or variant whose predictions cover it, counted once however many
runs replay it. {len(delivered)} corpora were delivered
({"; ".join(f"{', '.join(runs)}" for runs in delivered.values())}), so the
{total} USD lot costs {share} USD per accepted
corpus. The {STORAGE_INVOICE.amount} USD storage invoice is listed apart, with its
receipt. Stopped runs are an expense without a deliverable: {stops}.
"""
