"""analysis.md and RELOAD.md, computed from what the runs actually produced."""

from __future__ import annotations

import platform
from importlib import metadata
from typing import TYPE_CHECKING, Any

from example_campaign.make_corpus import LABELS

if TYPE_CHECKING:
    from example_campaign.build import Build, ModelRun

NEAR = 0.15  # "near a ring boundary": within this radius distance


def analysis_text(build: Build, conclusion: dict[str, Any]) -> str:
    control = build.model_runs["control"]
    lines = [
        "# Error analysis",
        "",
        f"Computed at closure from the predictions of every accepted run on the frozen corpus "
        f"({len(build.examples)} examples; the test split has "
        f"{sum(e.split == 'test' for e in build.examples)}).",
        "",
        "## Runs",
        "",
        "| run | train | validation | test |",
        "| --- | --- | --- | --- |",
        *[f"| {r.run_id} | {r.accuracy['train']:.4f} | {r.accuracy['validation']:.4f} | "
          f"{r.accuracy['test']:.4f} |" for r in build.model_runs.values()],
        "",
        f"Conclusion: {conclusion['text']}",
        "",
        f"Decision: {build.facts['decision']}",
        "",
        "## The control's test errors",
        "",
        *confusion(build, control),
        "",
        *where_errors_are(build, control),
        "",
        *shared_errors(build),
        "",
        f"The LoRA adapter trained on the frozen control reaches "
        f"{build.facts['adapter_test_accuracy']:.4f} test accuracy (control "
        f"{control.accuracy['test']:.4f}).",
        "",
    ]
    return "\n".join(lines)


def _test_pairs(build: Build, result: ModelRun) -> list[tuple[str, Any]]:
    return [(LABELS[p], e) for p, e in zip(result.predictions, build.examples, strict=True)
            if e.split == "test"]


def confusion(build: Build, result: ModelRun) -> list[str]:
    pairs = _test_pairs(build, result)
    rows = ["| label \\ predicted | " + " | ".join(LABELS) + " | errors |",
            "| --- | " + " | ".join("---" for _ in LABELS) + " | --- |"]
    for label in LABELS:
        counts = [sum(e.label == label and p == q for p, e in pairs) for q in LABELS]
        wrong = sum(c for q, c in zip(LABELS, counts, strict=True) if q != label)
        rows.append(f"| {label} | " + " | ".join(map(str, counts)) + f" | {wrong} |")
    return rows


def where_errors_are(build: Build, result: ModelRun) -> list[str]:
    pairs = _test_pairs(build, result)
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
        f"The control makes {len(errors)} errors on the test split. {len(noisy)} of them are "
        f"examples whose label contradicts the ring rule (label noise, {base_noisy:.1%} of the "
        f"test split) and {len(near)} are correctly labelled points within {NEAR} of a ring "
        f"boundary ({base_near:.1%} of the test split). Together {share:.1%} of the errors come "
        f"from {base_noisy + base_near:.1%} of the examples: the errors {verdict} on label noise "
        "and ring boundaries.",
    ]


def shared_errors(build: Build) -> list[str]:
    runs = list(build.model_runs.values())
    test = [i for i, e in enumerate(build.examples) if e.split == "test"]
    always = [i for i in test
              if all(LABELS[r.predictions[i]] != build.examples[i].label for r in runs)]
    noisy = sum(build.examples[i].label != build.examples[i].rule_label for i in always)
    return [
        f"{len(always)} test examples are misclassified by all {len(runs)} accepted model runs; "
        f"{noisy} of them carry a label that contradicts the ring rule, so no variant can be "
        "expected to fix them.",
    ]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def reload_text(build: Build) -> str:
    checkpoints = "\n".join(f"- `{c['path']}` ({c['format']}, {c['kind']}, run {c['run']})"
                            for c in build.rec.checkpoints)
    n_train = sum(e.split == "train" for e in build.examples)
    return f"""# Reload instructions

All paths are relative to this folder. Built with Python {platform.python_version()},
torch {_version("torch")}, safetensors {_version("safetensors")}, numpy {_version("numpy")};
any torch >= 2.10 loads these files. Run the snippets from this folder, with the
`example_campaign` package of pytest-itera importable (it defines the model).

## Checkpoints

{checkpoints}

## A resume checkpoint (`runs/<run>/last.pt`)

```python
import json
from pathlib import Path
from example_campaign.train import make_trainer
from pytest_itera.record import load_resume_checkpoint

config = json.loads(Path("configs/control.json").read_text())
trainer = make_trainer(config, n_train={n_train})  # training examples of the corpus
state = load_resume_checkpoint("runs/control/last.pt", model=trainer.model,
                               optimizer=trainer.optimizer, scheduler=trainer.scheduler)
trainer.step = state["step"]
trainer.epoch, trainer.batch = state["data"]["epoch"], state["data"]["batch"]
```

The file is one `torch.save` dict (`model`, `optimizer`, `scheduler`, `progress`,
`rng`, `data`) and loads with `torch.load(path, weights_only=True)`: no pickled
code, no numpy objects (RNG states are plain lists and tensors).

## The control's weights (`runs/control/model.safetensors`)

```python
from safetensors.torch import load_file
from example_campaign.model import build_model
model = build_model(json.loads(Path("configs/control.json").read_text()))
model.load_state_dict(load_file("runs/control/model.safetensors"))
```

## The LoRA adapter (`runs/control/adapter/`)

PEFT layout (`adapter_config.json` + `adapter_model.safetensors`). Its base is
`runs/control/model.safetensors`, pinned by sha256 in `adapter_config.json`
(`revision`) and in the manifest. Verify the hash, build the control model as
above, then:

```python
import hashlib
base = Path("runs/control/model.safetensors").read_bytes()
assert hashlib.sha256(base).hexdigest() == json.loads(
    Path("runs/control/adapter/adapter_config.json").read_text())["revision"]
from peft import PeftModel
adapted = PeftModel.from_pretrained(model, "runs/control/adapter")
```
"""


def readme_text(build: Build) -> str:
    stopped = build.facts.get("stopped", {})
    stops = "; ".join(f"{run} (stopped at step {s['step']} of {s['of']})"
                      for run, s in stopped.items()) or "none"
    return f"""# Campaign {build.rec.plan["campaign"]}

A toy campaign built by `python -m example_campaign`: a control and variants of a
small MLP compared on a frozen corpus of 2-D points labelled by ring. `plan.json`
was frozen before the first run; `manifest.json` lists every file with its size
and sha256.

- `corpus/corpus.jsonl`: the frozen corpus (its sha256 is in the plan).
- `configs/<run>.json`: each planned run's configuration (hash in the plan).
- `runs/<run>/`: measurements (losses per step), predictions for every corpus
  example, metrics, resume checkpoints; `runs/control/` also holds weights-only
  safetensors and a LoRA adapter pinned to them.
- `analysis.md`: the error analysis; `RELOAD.md`: how to reload every file.
- `schedule/observed.json`: planned and observed hours per step.

## Hours

The schedule's hours are those of the real rental this protocol is planned for
(one RTX 4090, 3-day lot, 48 sequential hours in a 72-hour window), not the
seconds this toy takes on a CPU. Observed hours are the planned hours scaled by
the work each step really did; the real wall seconds are in
`schedule/observed.json`.

## Budget unit

The unit is the corpus: every accepted run delivers results on the same frozen
corpus `{build.rec.plan["corpus"]["id"]}`, which counts once however many runs
replay it, so the 47.14 USD lot costs 47.14 USD per accepted corpus. Stopped runs
are an expense without a deliverable: {stops}.
"""
