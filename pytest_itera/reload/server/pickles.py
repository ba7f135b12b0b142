"""Code in pickles: the globals a pickle would import and call, found without unpickling.

A symbolic walk over the opcodes (pickletools) names every global a pickle refers to; a
file naming one outside torch's ``weights_only`` allowlist is refused before any load, and
the verdict says which (``holds_code``).  The walk's stack helpers serve ``archives`` too.
"""

from __future__ import annotations

import _compat_pickle
import pickletools
import zipfile
from typing import IO, Any

import torch

from .siblings import formats
from .verdict import WEIGHTS_ONLY_WHY, Refused


def numpy_allowlist() -> list[Any]:
    """Exactly the numpy globals of a pickled RNG state (transformers/accelerate allow these)."""
    try:
        import numpy as np
    except ImportError:
        return []
    core = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1 spelling
    allowed: list[Any] = [core.multiarray._reconstruct, np.ndarray, np.dtype]
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None and hasattr(dtypes, "UInt32DType"):
        allowed.append(dtypes.UInt32DType)
    return allowed


def py3_name(dotted: str) -> str:
    """The callable a pickled global resolves to: protocol-2 pickles spell subprocess as
    ``commands`` and torch drops ``builtins.``; ``posix.system`` is shown as os.system too."""
    module, _, name = dotted.rpartition(".")
    module = module or "builtins"
    module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
    module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    shown = f"{module}.{name}"
    if module in ("posix", "nt"):
        shown += f" (os.{name})"
    return shown


CODE_SCAN_OPS = 5_000_000  # opcodes walked per pickle (a large model's data.pkl: ~100,000)
LEGACY_PICKLES = 5  # magic number, protocol, sys info, the object, the storage keys
COMPUTED_GLOBAL = "a global whose name is computed while unpickling"
PICKLE_CAP = 256 << 20  # a checkpoint's data.pkl is KiB..MiB; tensors live in data/<key>
_ALLOWED: set[str] | None = None


def allowed_globals() -> set[str]:
    """Dotted names torch.load(weights_only=True) resolves here: torch's own allowlist and
    the numpy RNG-state globals this server adds (the same lists, not a copy of them)."""
    global _ALLOWED
    if _ALLOWED is None:
        from torch import _weights_only_unpickler as wou

        with torch.serialization.safe_globals(numpy_allowlist()):
            _ALLOWED = set(wou._get_allowed_globals()) | set(
                wou._get_user_allowed_globals())  # type: ignore[no-untyped-call]
    return _ALLOWED


def torch_spelling(module: str, name: str) -> str:
    """The dotted name torch's unpickler checks (protocol-2 names mapped to Python 3's)."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        module, name = _compat_pickle.NAME_MAPPING[(module, name)]
    else:
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
    return f"{module}.{name}"


# The symbolic stack of a walk: strings as themselves, a MARK, every other value OPAQUE.
MARK = object()
OPAQUE = object()
STR_OPS = {"BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
           "SHORT_BINSTRING"}


def pickle_globals(stream: IO[bytes]) -> tuple[list[str], bool]:
    """The globals one pickle would import and call (GLOBAL, INST, STACK_GLOBAL, EXT*), by a
    symbolic walk over its opcodes (nothing imported), at most CODE_SCAN_OPS of them; and
    whether the walk reached its STOP (a well-formed pickle)."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    found: list[str] = []
    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(stream)):
            if count >= CODE_SCAN_OPS:
                return found, False
            name = op.name
            if name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                found.append(torch_spelling(module, attr))
            elif name == "STACK_GLOBAL":
                attr, module = stack[-1], stack[-2]
                found.append(f"{module}.{attr}" if isinstance(module, str) and
                             isinstance(attr, str) else COMPUTED_GLOBAL)
            elif name.startswith("EXT"):
                found.append(f"copyreg extension code {arg}")
            elif name == "STOP":
                return found, True
            if name in STR_OPS:
                stack.append(arg if isinstance(arg, str) else OPAQUE)
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[int(str(arg))] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(int(str(arg)), OPAQUE))
            elif name == "MARK":
                stack.append(MARK)
            else:
                generic_stack_effect(stack, op)
    except (ValueError, IndexError, KeyError, EOFError, OSError, UnicodeDecodeError):
        return found, False
    return found, False


def generic_stack_effect(stack: list[Any], op: Any) -> None:
    """Pop what ``op`` consumes (to the mark when it takes one), push opaque results."""
    before = list(op.stack_before)
    if pickletools.markobject in before:
        mark = len(stack) - 1 - stack[::-1].index(MARK)
        del stack[mark:]
        count = before.index(pickletools.markobject)
    else:
        count = len(before)
    if count > len(stack):
        raise ValueError(f"stack underflow at {op.name}")
    del stack[len(stack) - count:]
    stack.extend(OPAQUE for _ in op.stack_after)


def code_globals(path: str, kind: str, also: frozenset[str] = frozenset()) -> list[str]:
    """Globals outside the allowlist (and ``also``: a format's stand-ins) in the pickles of
    a torch zip (data.pkl), a legacy torch file or a raw pickle (each of its leading
    pickles), in file order, once each."""
    found: list[str] = []
    if kind == "zip":
        try:
            with zipfile.ZipFile(path) as zf:
                pkl = next((i for i in zf.infolist()
                            if i.filename.rpartition("/")[2] == "data.pkl"), None)
                if pkl is not None and pkl.file_size <= PICKLE_CAP:
                    with zf.open(pkl) as member:
                        found = pickle_globals(member)[0]
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError):
            return []
    else:
        with open(path, "rb") as fh:
            for index in range(LEGACY_PICKLES):
                names, complete = pickle_globals(fh)
                # Text that merely parses as opcodes for a while holds no code: only a
                # well-formed pickle is judged, except in a file that began as one.
                if complete or index or kind == "legacy":
                    found += names
                if not complete or fh.tell() > PICKLE_CAP:
                    break
    allowed = allowed_globals() | also
    return [g for g in dict.fromkeys(found) if g not in allowed]


# Modules whose globals no torch.nn.Module's pickle calls: a file naming one is hostile,
# whatever module state it also holds.
NEVER_A_MODULE = frozenset({
    "builtins", "__builtin__", "os", "posix", "nt", "subprocess", "sys", "socket", "shutil",
    "importlib", "runpy", "pickle", "marshal", "types", "codecs", "operator", "functools",
    "ctypes", "io", "pty", "webbrowser", "code", "pdb", "signal", "multiprocessing"})
# How much of a legacy or raw pickle is searched for a module's state (its pickle comes first).
MODULE_SCAN = 4 << 20


def pickles_a_module(path: str, kind: str) -> bool:
    """Whether the file pickles a whole torch.nn.Module (``torch.save(model)``): its pickle
    holds a module's state, ``_parameters`` and ``_modules`` (read as bytes, not unpickled)."""
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as zf:
                pkl = next((i for i in zf.infolist()
                            if i.filename.rpartition("/")[2] == "data.pkl"), None)
                if pkl is None or pkl.file_size > PICKLE_CAP:
                    return False
                data = zf.read(pkl)
        else:
            with open(path, "rb") as fh:
                data = fh.read(MODULE_SCAN)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError):
        return False
    return b"_parameters" in data and b"_modules" in data


def refuse_code(path: str, kind: str, also: frozenset[str] = frozenset()) -> None:
    code = tuple(code_globals(path, kind, also))
    if code and all(g in formats.DATA_OBJECTS for g in code):
        what = "; ".join(dict.fromkeys(formats.DATA_OBJECTS[g][0] for g in code))
        raise Refused(f"pickles {', '.join(code)} objects ({what}), outside the weights-only "
                      "allowlist: torch.load(weights_only=True) refuses it, as torch's and "
                      "Lightning's own reload do by default; refused before any load",
                      code=code)
    if code:
        shown = ", ".join(py3_name(g) if g.count(".") and " " not in g else g
                          for g in code[:5])
        more = f" and {len(code) - 5} more" if len(code) > 5 else ""
        said = (f"unpickling it would call {shown}{more}, outside the weights-only allowlist "
                f"{WEIGHTS_ONLY_WHY}; refused before any load")
        if not any(g.replace(" ", ".").split(".")[0] in NEVER_A_MODULE for g in code) \
                and pickles_a_module(path, kind):
            # The common mistake first, and what to do: the class is code, the weights are not.
            raise Refused(f"a whole module: save `model.state_dict()` instead (torch.save(model) "
                          f"pickles the module's class, so it holds code: {said})",
                          code=code, kind="whole-module")
        raise Refused(f"holds code: {said}", code=code)
