"""Reloader.repredict: the judge's model module built in the loader child, the delivered
weights loaded into it under the sandbox, the rows predicted (server/repredict.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from pytest_itera.reload import Reloader
from tests.checkpoints import hostile_checkpoint, tiny_model

JUDGE = '''
import torch

def build(config):  # tests.checkpoints.tiny_model's architecture
    return torch.nn.Sequential(torch.nn.Linear(4, config["hidden"]), torch.nn.ReLU(),
                               torch.nn.Linear(config["hidden"], 2))

def predict(model, row):
    return model(torch.tensor(row["x"], dtype=torch.float32)).tolist()

def writes(model, row):
    open(row["target"], "w").write("written by predict")
'''
ROWS = [{"id": str(i), "x": [0.5 * i, -1.0, 2.0, 0.25]} for i in range(4)]


@pytest.fixture(scope="module")
def reloader() -> Iterator[Reloader]:
    with Reloader(timeout=60) as reloader:
        yield reloader


@pytest.fixture
def judge(tmp_path: Path) -> Path:
    path = tmp_path / "judge_models.py"
    path.write_text(JUDGE, encoding="utf-8")
    return path


def _recipe(judge: Path, **changes: object) -> dict[str, object]:
    return {"module": str(judge), "build": "build", "predict": "predict",
            "config": {"hidden": 8}, "rows": ROWS, **changes}


def _expected(model: torch.nn.Module) -> list[Any]:
    with torch.no_grad():
        return [model(torch.tensor(r["x"])).tolist() for r in ROWS]


@pytest.mark.parametrize("fmt", ["torch-dict", "safetensors"])
def test_the_delivered_weights_predict_in_the_child(reloader: Reloader, judge: Path,
                                                     tmp_path: Path, fmt: str) -> None:
    model = tiny_model()
    path = tmp_path / "weights"
    if fmt == "safetensors":
        save_file(model.state_dict(), path)
    else:
        torch.save({"model_state_dict": model.state_dict(), "epoch": 3}, path)
    answer = reloader.repredict(path, "weights", _recipe(judge))
    assert answer.ok, answer.cause
    rows: list[Any] = list(answer.predictions)
    assert [v for row in rows for v in row] == pytest.approx(
        [v for row in _expected(model) for v in row])
    assert answer.sandbox is not None
    assert "seccomp" in answer.sandbox.active or "seccomp" in answer.sandbox.missing


def test_a_checkpoint_that_holds_code_is_refused_not_run(
        reloader: Reloader, judge: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = hostile_checkpoint(tmp_path, marker)
    answer = reloader.repredict(path, "evil.pt", _recipe(judge))
    assert not answer.ok
    assert "holds code" in str(answer.cause)
    assert "refused before any load" in str(answer.cause)
    assert answer.holds_code == ("posix.system",)
    assert not marker.exists()


def test_predict_runs_under_the_sandbox(reloader: Reloader, judge: Path,
                                        tmp_path: Path) -> None:
    path = tmp_path / "weights.pt"
    torch.save(tiny_model().state_dict(), path)
    target = tmp_path / "written.txt"
    rows = [{"id": "1", "target": str(target)}]
    answer = reloader.repredict(path, "weights.pt", _recipe(judge, predict="writes", rows=rows))
    assert not answer.ok
    assert "predict raised on row 1" in str(answer.cause)
    assert not target.exists()


@pytest.mark.parametrize(("changes", "says"), [
    ({"config": {"hidden": 5}}, "do not fit the model the recipe builds"),
    ({"build": "absent"}, "has no callable 'absent'"),
    ({"key": "nowhere"}, "no model state under 'nowhere'"),
], ids=["shape", "no-build", "no-key"])
def test_why_there_are_no_predictions(reloader: Reloader, judge: Path, tmp_path: Path,
                                      changes: dict[str, object], says: str) -> None:
    path = tmp_path / "weights.pt"
    torch.save({"model": tiny_model().state_dict()}, path)
    answer = reloader.repredict(path, "weights.pt", _recipe(judge, **changes))
    assert not answer.ok
    assert says in str(answer.cause)
