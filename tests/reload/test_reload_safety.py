"""Hostile, broken and misnamed files: each fails with its file and cause; payloads never run."""

from __future__ import annotations

import collections
import datetime
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_itera.reload import Reloader, ReloadResult
from tests import checkpoints

CODE = "holds code: unpickling it would call "
WHY = (", outside the weights-only allowlist (loading it would import and call arbitrary "
       "code); refused before any load")
SHOWN = {"os.system": "posix.system (os.system)", "builtins.exec": "builtins.exec",
         "builtins.eval": "builtins.eval", "subprocess.Popen": "subprocess.Popen"}


@pytest.mark.parametrize("payload", sorted(SHOWN))
def test_payload_is_live(tmp_path: Path, payload: str) -> None:
    """Control: plain pickle.loads does run each payload, so 'marker absent' below means
    weights_only stopped it (subprocess.Popen is waited for)."""
    marker = tmp_path / "ran"
    result = pickle.loads(pickle.dumps(checkpoints.hostile_payloads(marker)[payload]))
    if hasattr(result, "wait"):
        result.wait()
    assert marker.exists()


@pytest.mark.parametrize("wrap", ["bare", "in-list", "in-dict", "legacy-format"])
@pytest.mark.parametrize("payload", sorted(SHOWN))
def test_hostile_pickle_is_refused_and_never_runs(reloader: Reloader, tmp_path: Path,
                                                  payload: str, wrap: str) -> None:
    marker = tmp_path / "pwned"
    evil = checkpoints.hostile_payloads(marker)[payload]
    obj = {"bare": evil, "in-list": [1, [evil]], "in-dict": {"model": {"w": evil}},
           "legacy-format": {"rng_state": evil}}[wrap]
    path = tmp_path / "evil.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=(wrap != "legacy-format"))
    res = reloader.reload(path, "runs/x.pt")
    assert not res.ok
    assert res.cause == f"runs/x.pt: {CODE}{SHOWN[payload]}{WHY}"
    assert res.holds_code == (SHOWN[payload].split(" ")[0],)
    assert not marker.exists()


@pytest.mark.parametrize("container", ["raw", "legacy", "zip"])
@pytest.mark.parametrize("protocol", range(6))
def test_code_is_named_first_in_every_protocol_and_container(
    reloader: Reloader, tmp_path: Path, protocol: int, container: str,
) -> None:
    """Whatever the pickle protocol (0-5: GLOBAL, INST or STACK_GLOBAL) and container, the
    verdict says the file holds code and names the call, before any format judgement
    (protocols 4/5 are otherwise refused for their opcodes, 0/1 as "not a checkpoint")."""
    marker = tmp_path / "pwned"
    obj = {"epoch": checkpoints.hostile_payloads(marker)["os.system"]}
    path = tmp_path / f"evil-{protocol}.pt"
    if container == "raw":
        path.write_bytes(pickle.dumps(obj, protocol=protocol))
    else:
        torch.save(obj, path, pickle_protocol=protocol,
                   _use_new_zipfile_serialization=container == "zip")
    res = reloader.reload(path, "runs/evil.pt")
    assert res.cause == f"runs/evil.pt: {CODE}posix.system (os.system){WHY}"
    assert res.holds_code == ("posix.system",)
    assert res.failure == "weights-only"
    assert not marker.exists()


def test_every_global_is_named(reloader: Reloader, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payloads = checkpoints.hostile_payloads(marker)
    path = tmp_path / "many.pt"
    torch.save({k: payloads[k] for k in sorted(payloads)}, path, pickle_protocol=4)
    res = reloader.reload(path, "many.pt")
    assert res.cause == (f"many.pt: {CODE}builtins.eval, builtins.exec, posix.system "
                         f"(os.system), subprocess.Popen{WHY}")  # in file order


def test_a_finding_that_holds_code_never_advises_loading_or_resaving(
    pytester: pytest.Pytester, tmp_path: Path,
) -> None:
    """The hint is chosen on the typed ``holds_code``: never "save it again", never
    "protocol", never weights_only=False as a way out."""
    from pytest_itera.checks.artifacts.reloading import reload_findings

    class Ctx:
        def reload(self, relpath: str, claimed: str | None) -> ReloadResult:
            return ReloadResult(path=relpath, ok=False, format=None,
                                cause=f"{relpath}: {CODE}posix.system (os.system){WHY}",
                                holds_code=("posix.system",))

    (finding,) = reload_findings(Ctx(), "evil.pt", None, "here",  # type: ignore[arg-type]
                                  "checkpoint-reloads")
    assert finding.hint is not None
    assert "treat it as hostile" in finding.hint
    for advice in ("save it again", "re-save with", "protocol", "retrieve it again"):
        assert advice not in finding.hint


@pytest.mark.parametrize(("names", "hostile"), [
    (("torch.nn.modules.container.Sequential", "torch.nn.modules.linear.Linear"), False),
    (("torch.nn.modules.linear.Linear", "posix.system"), True),
    (("builtins.eval",), True),
])
def test_a_whole_module_save_is_told_apart_from_hostile_code(
    names: tuple[str, ...], hostile: bool
) -> None:
    """torch.save(model) pickles torch's own nn classes: a format mistake with its own fix;
    any other global (even beside them) is hostile code, never to be loaded or converted."""
    from pytest_itera.checks.artifacts.reloading import CODE_HINT, MODULE_OBJECTS_HINT, code_hint

    assert code_hint(names) == (CODE_HINT if hostile else MODULE_OBJECTS_HINT)
    for advice in ("save it again", "re-save with", "protocol", "weights_only=False,"):
        assert advice not in MODULE_OBJECTS_HINT


class Net(torch.nn.Module):
    """A user's own module class (pickled by reference, as __main__.Net is in a script)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))


WHOLE = "a whole module: save `model.state_dict()` instead (torch.save(model) pickles the " \
    "module's class, so it holds code: unpickling it would call "


@pytest.mark.parametrize(("model", "shown"), [
    pytest.param(Net(), f"{__name__}.Net", id="own-class"),
    pytest.param(torch.nn.Sequential(torch.nn.Linear(2, 2)),
                 "torch.nn.modules.container.Sequential, torch.nn.modules.linear.Linear",
                 id="torch-classes"),
])
def test_a_whole_module_says_so_first_with_the_state_dict_fix(
    reloader: Reloader, tmp_path: Path, model: torch.nn.Module, shown: str
) -> None:
    """Issue 26: torch.save(model) is a common mistake, not an attack: the verdict says what it
    is and what to save instead before "holds code"; the check's fix line follows it."""
    from pytest_itera.checks.artifacts.reloading import MODULE_OBJECTS_HINT, reload_findings

    path = tmp_path / "model.pt"
    torch.save(model, path)
    res = reloader.reload(path, "runs/model.pt")
    assert (res.ok, res.failure) == (False, "whole-module")
    assert res.cause == f"runs/model.pt: {WHOLE}{shown}{WHY})"
    assert res.holds_code

    class Ctx:
        def reload(self, relpath: str, claimed: str | None) -> ReloadResult:
            return res

    (finding,) = reload_findings(Ctx(), "runs/model.pt", None, "here",  # type: ignore[arg-type]
                                  "checkpoint-reloads")
    assert finding.hint == MODULE_OBJECTS_HINT
    # A state dict of the same model loads: the fix works.
    torch.save(model.state_dict(), path)
    assert reloader.reload(path, "runs/model.pt").ok


def test_data_saved_as_objects_is_said_to_be_data_and_still_refused(
    reloader: Reloader, tmp_path: Path
) -> None:
    """timm's checkpoints hold the training ``args`` (an argparse.Namespace), Lightning's the
    hyperparameters as given (a pathlib.Path): torch.load(weights_only=True) refuses both,
    so the file is refused, but as plain data saved as objects, with the fix; beside a
    hostile call, it is hostile."""
    import argparse

    from pytest_itera.checks.artifacts.reloading import CODE_HINT, code_hint

    path = tmp_path / "timm.pth.tar"
    torch.save({"epoch": 1, "arch": "tiny", "state_dict": torch.nn.Linear(2, 2).state_dict(),
                "args": argparse.Namespace(lr=0.1, data_dir=Path("/data/x"))}, path)
    res = reloader.reload(path, "runs/timm.pth.tar")
    assert (res.ok, res.failure) == (False, "weights-only")
    assert res.holds_code == ("argparse.Namespace", "pathlib.PosixPath")
    assert res.cause == (
        "runs/timm.pth.tar: pickles argparse.Namespace, pathlib.PosixPath objects (parsed "
        "arguments saved as an object, not a dict; paths saved as objects, not strings), "
        "outside the weights-only allowlist: torch.load(weights_only=True) refuses it, as "
        "torch's and Lightning's own reload do by default; refused before any load")
    assert code_hint(res.holds_code) == (
        "save plain data instead (save vars(args); save str(path)): Lightning's "
        "save_hyperparameters() keeps its arguments as given (or leave one out: "
        "save_hyperparameters(ignore=[...])); then save the checkpoint again from the run; do "
        "not load this file with weights_only=False to convert it")
    assert code_hint(("argparse.Namespace", "posix.system")) == CODE_HINT
    # A metric from scikit-learn is a numpy scalar (np.float64): saved as is, it is one too.
    torch.save({"state_dict": torch.nn.Linear(2, 2).state_dict(), "best_f1": np.float64(0.8)},
               path)
    res = reloader.reload(path, "runs/timm.pth.tar")
    assert res.cause == (
        "runs/timm.pth.tar: pickles numpy._core.multiarray.scalar objects (numpy scalars saved "
        "as objects, not numbers), outside the weights-only allowlist: torch.load(weights_only="
        "True) refuses it, as torch's and Lightning's own reload do by default; refused before "
        "any load")
    assert code_hint(res.holds_code).startswith("save plain data instead (save float(x) or "
                                                "int(x)): ")
    # A loss history in a defaultdict(list), a save time as a datetime: the same.
    torch.save({"state_dict": torch.nn.Linear(2, 2).state_dict(),
                "history": collections.defaultdict(list, {"loss": [0.5]}),
                "saved_at": datetime.datetime(2026, 11, 20, 8, 0)}, path)
    res = reloader.reload(path, "runs/timm.pth.tar")
    assert res.holds_code == ("collections.defaultdict", "builtins.list", "datetime.datetime")
    assert res.cause == (
        "runs/timm.pth.tar: pickles collections.defaultdict, builtins.list, datetime.datetime "
        "objects (a defaultdict saved as an object, not a dict; a type saved by reference, as a "
        "defaultdict's factory; dates or times saved as objects, not strings), outside the "
        "weights-only allowlist: torch.load(weights_only=True) refuses it, as torch's and "
        "Lightning's own reload do by default; refused before any load")
    assert code_hint(res.holds_code).startswith(
        "save plain data instead (save dict(d); save d.isoformat() or a number of seconds): ")
    assert code_hint(("builtins.list", "builtins.eval")) == CODE_HINT


def test_module_state_beside_a_hostile_call_is_still_hostile(
    reloader: Reloader, tmp_path: Path
) -> None:
    """A file that names os.system is hostile even if it also holds a module's state."""
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"_parameters": 1, "_modules": 2,
                "x": checkpoints.hostile_payloads(marker)["os.system"]}, path)
    res = reloader.reload(path, "runs/x.pt")
    assert res.cause == f"runs/x.pt: {CODE}posix.system (os.system){WHY}"
    assert res.failure == "weights-only"
    assert not marker.exists()


def test_raw_pickle_is_refused(reloader: Reloader, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.bin"
    path.write_bytes(pickle.dumps(checkpoints.hostile_payloads(marker)["os.system"], protocol=2))
    res = reloader.reload(path, "evil.bin")
    assert res.cause == f"evil.bin: {CODE}posix.system (os.system){WHY}"
    assert not marker.exists()


def test_numpy_rng_state_passes_with_exact_allowlist(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.general_checkpoint(tmp_path)  # holds np.random.get_state()
    res = reloader.reload(path, "resume.pt")
    assert res.ok, res.cause
    assert "rng" in res.parts


def test_other_numpy_globals_stay_refused(reloader: Reloader, tmp_path: Path) -> None:
    """Beside an allowed RNG state, a numpy scalar is still refused (said to be data: a
    numpy scalar saved as an object), and any other numpy global is code."""
    path = tmp_path / "np.pt"
    torch.save({"rng": np.random.get_state(), "f": np.float64(1.5)}, path)
    res = reloader.reload(path, "np.pt")
    assert (res.ok, res.failure, res.holds_code) == (
        False, "weights-only", ("numpy._core.multiarray.scalar",))
    assert res.cause is not None
    assert res.cause.startswith("np.pt: pickles numpy._core.multiarray.scalar objects (numpy "
                                "scalars saved as objects, not numbers)")
    torch.save({"rng": np.random.get_state(), "f": np.float64(1.5), "x": np.random.default_rng},
               path)
    res = reloader.reload(path, "np.pt")
    assert (res.ok, res.failure) == (False, "weights-only")
    assert res.cause is not None
    assert res.cause.startswith(f"np.pt: {CODE}numpy.")


def test_zero_byte_file_fails(reloader: Reloader, tmp_path: Path) -> None:
    (tmp_path / "e.pt").write_bytes(b"")
    res = reloader.reload(tmp_path / "e.pt", "runs/e.pt")
    assert (res.ok, res.cause) == (False, "runs/e.pt: empty file (0 bytes)")


@pytest.mark.parametrize(("keep", "expected"), [
    # torch 2.13 raises OSError Errno 22 when the central directory survives the cut...
    (0.5, "unreadable torch archive (truncated or corrupt: invalid argument reading it)"),
    # ...and a RuntimeError when it does not.
    (0.1, "corrupt or truncated torch archive (reading zip archive: failed finding central "
          "directory)"),
])
def test_truncated_zip_fails(reloader: Reloader, tmp_path: Path, keep: float,
                             expected: str) -> None:
    path = checkpoints.general_checkpoint(tmp_path)
    raw = path.read_bytes()
    path.write_bytes(raw[: int(len(raw) * keep)])
    res = reloader.reload(path, "resume.pt")
    assert res.cause == f"resume.pt: {expected}"


def test_corrupt_zip_fails(reloader: Reloader, tmp_path: Path) -> None:
    path = checkpoints.general_checkpoint(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[4:] = bytes(len(raw) - 4)  # zip magic kept, everything else zeroed
    path.write_bytes(bytes(raw))
    res = reloader.reload(path, "resume.pt")
    assert not res.ok
    assert res.cause is not None
    assert res.cause.startswith("resume.pt: ")
    assert "corrupt" in res.cause or "truncated" in res.cause


def test_json_claimed_as_checkpoint_fails(reloader: Reloader, tmp_path: Path) -> None:
    (tmp_path / "last.pt").write_text('{"loss": 0.1}')
    res = reloader.reload(tmp_path / "last.pt", "last.pt")
    assert res.cause == ("last.pt: not a checkpoint: content is JSON/text, neither a torch.save "
                         "archive, a legacy torch pickle nor safetensors (starts with "
                         "b'{\"loss\": 0.1}')")


def test_text_file_fails(reloader: Reloader, tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_text("see the README\n")
    res = reloader.reload(tmp_path / "w.bin", "w.bin")
    assert res.cause is not None
    assert res.cause.startswith("w.bin: not a checkpoint: content is text")


def test_missing_file_fails(reloader: Reloader, tmp_path: Path) -> None:
    res = reloader.reload(tmp_path / "nope.pt", "nope.pt")
    assert not res.ok
    assert res.cause is not None
    assert res.cause == "nope.pt: cannot be read: no such file or directory"  # a sentence
