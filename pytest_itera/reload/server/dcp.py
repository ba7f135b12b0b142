"""A DCP (torch.distributed.checkpoint) folder, read without DCP's unsafe paths.

Its ``.metadata`` goes through a restricted unpickler; tensors load through DCP into a
template built from it; byte entries are read from their slices with ``weights_only=True``
here, never by DCP's planner (which would use ``weights_only=False``).  The entries are put
back into the nested state the training code saved, and judged like a torch.save dict.
"""

from __future__ import annotations

import enum
import io
import os
import pickle
import re
import warnings
from typing import Any

import torch

from .file_formats import inspect_torch_object
from .loading import explain, explained
from .pickles import numpy_allowlist, py3_name
from .verdict import WEIGHTS_ONLY_WHY, Findings, Refused

DCP_TYPES = {
    "torch.distributed.checkpoint.metadata": {
        "Metadata", "TensorStorageMetadata", "TensorProperties", "ChunkStorageMetadata",
        "BytesStorageMetadata", "MetadataIndex", "StorageMeta", "_MEM_FORMAT_ENCODING"},
    "torch.distributed.checkpoint.filesystem": {"_StorageInfo"},
    "torch.serialization": {"_get_layout"},
    "torch": {"Size"},
    "pathlib": {"PosixPath", "PurePosixPath", "PureWindowsPath"},
}


class DcpMetadataUnpickler(pickle.Unpickler):
    """Admits only the types torch 2.13's DCP writes into .metadata (found from real saves)."""

    def find_class(self, module: str, name: str) -> Any:
        if name in DCP_TYPES.get(module, ()):
            return super().find_class(module, name)
        if module in ("builtins", "__builtin__") and name == "getattr":
            return _enum_member  # Python 3.11.0-3.11.4 pickle an enum member so
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise Refused(f"refers to {py3_name(f'{module}.{name}')}, which is not a DCP metadata type "
                      f"{WEIGHTS_ONLY_WHY}", ".metadata", code=(f"{module}.{name}",))


def _enum_member(cls: Any, name: Any) -> Any:
    """``getattr(cls, name)`` as Python 3.11.0-3.11.4 pickle an enum member (DCP's
    ``_MEM_FORMAT_ENCODING``): admitted only as a member of an enum class this unpickler
    admitted, never as an attribute lookup."""
    if isinstance(cls, type) and issubclass(cls, enum.Enum) and isinstance(name, str) \
            and name in cls.__members__:
        return cls[name]
    raise Refused(f"calls builtins.getattr on {type(cls).__name__} {name!r}, which is not a "
                  f"member of a DCP metadata enum {WEIGHTS_ONLY_WHY}", ".metadata",
                  code=("builtins.getattr",))


def read_dcp_metadata(folder: str) -> Any:
    import torch.distributed.checkpoint.metadata as md
    try:
        with open(os.path.join(folder, ".metadata"), "rb") as fh:
            meta = DcpMetadataUnpickler(fh).load()
    except Refused:
        raise
    except Exception as exc:
        raise Refused(f"unreadable DCP metadata ({explain(exc)})", ".metadata") from exc
    if not isinstance(meta, md.Metadata):
        raise Refused("does not hold a DCP Metadata object", ".metadata")
    for info in (meta.storage_data or {}).values():
        rel = getattr(info, "relative_path", "")
        if os.path.basename(rel) != rel or rel in ("", ".", ".."):
            raise Refused(f"storage path {rel!r} leaves the checkpoint folder", ".metadata")
    return meta


RANK_FILE = re.compile(r"__(\d+)_\d+\.distcp")


def check_dcp_files(folder: str, meta: Any, names: set[str]) -> None:
    """Every data file ``.metadata`` places entries in is there and holds them: one rank's
    ``__<rank>_<n>.distcp`` lost or cut short is named before DCP reads anything (DCP itself
    would fail with an absolute path, or in the middle of a collective)."""
    extent: dict[str, int] = {}
    entries: dict[str, int] = {}
    for info in (meta.storage_data or {}).values():
        rel = info.relative_path
        extent[rel] = max(extent.get(rel, 0), int(info.offset) + int(info.length))
        entries[rel] = entries.get(rel, 0) + 1
    for rel in sorted(extent):
        rank = RANK_FILE.fullmatch(rel)
        whose = f"rank {rank.group(1)}'s data file" if rank else "a data file"
        if rel not in names:
            raise Refused(f"{whose} is missing: .metadata places {entries[rel]} entr"
                          f"{'y' if entries[rel] == 1 else 'ies'} in it", rel)
        size = os.path.getsize(os.path.join(folder, rel))
        if size < extent[rel]:
            raise Refused(f"{whose} is truncated: .metadata places entries up to byte "
                          f"{extent[rel]} in it, it holds {size}", rel)


def dcp_bytes_entry(folder: str, info: Any) -> Any:
    """A BytesStorageMetadata value, read from its slice with weights_only=True ourselves
    (DCP's own planner would torch.load it with weights_only=False)."""
    path = os.path.join(folder, info.relative_path)
    if info.offset < 0 or info.offset + info.length > os.path.getsize(path):
        raise Refused("a byte entry lies outside the file (truncated?)", info.relative_path)
    with open(path, "rb") as fh:
        fh.seek(info.offset)
        data = io.BytesIO(fh.read(info.length))
    with torch.serialization.safe_globals(numpy_allowlist()):
        try:
            return torch.load(data, weights_only=True, map_location="cpu")
        except Exception as exc:
            kind, sentence = explained(exc)
            raise Refused(sentence, info.relative_path, kind=kind) from exc


def inspect_dcp(found: Findings, folder: str, names: set[str]) -> None:
    """Load every entry (tensors through DCP into a template, byte entries ourselves), put
    them back into the nested state the training code saved (DCP's planner_data paths),
    and judge that state like a torch.save dict."""
    import torch.distributed.checkpoint as dcp
    import torch.distributed.checkpoint.metadata as md

    meta = read_dcp_metadata(folder)
    check_dcp_files(folder, meta, names)
    template: dict[str, torch.Tensor] = {}
    paths: dict[str, tuple[Any, ...]] = {}
    for fqn, entry in meta.state_dict_metadata.items():
        path = (meta.planner_data or {}).get(fqn) or tuple(fqn.split("."))
        paths[fqn] = tuple(path)
        if isinstance(entry, md.TensorStorageMetadata):
            template[fqn] = torch.empty(entry.size, dtype=entry.properties.dtype)
    byte_infos = {idx.fqn: info for idx, info in meta.storage_data.items()
                  if idx.fqn not in template}
    values: dict[str, Any] = {fqn: dcp_bytes_entry(folder, info)
                              for fqn, info in sorted(byte_infos.items())}
    load_dcp_tensors(dcp, folder, template)
    values.update(template)
    state = nest_dcp({paths.get(fqn, (fqn,)): value for fqn, value in values.items()})
    inspect_torch_object(found, state, mapped=False)


class _DcpNode(dict):  # type: ignore[type-arg]
    """A container rebuilt from DCP's flattened paths (not a value the checkpoint holds)."""


def nest_dcp(entries: dict[tuple[Any, ...], Any]) -> Any:
    """DCP's flat ``{path: value}`` back into nested dicts and lists (an int path element
    is a list index); a dict with ``param_groups`` gets back the empty ``state`` DCP drops
    (a stateless optimizer's)."""
    root = _DcpNode()
    for path, value in entries.items():
        node = root
        for key in path[:-1]:
            child = node.setdefault(key, _DcpNode())
            if not isinstance(child, _DcpNode):
                raise Refused(f"DCP entries {'.'.join(map(str, path))} and {key} overlap",
                              ".metadata")
            node = child
        node[path[-1]] = value

    def rebuilt(node: Any) -> Any:
        if not isinstance(node, _DcpNode):
            return node
        out = {key: rebuilt(value) for key, value in node.items()}
        if out and all(isinstance(k, int) for k in out) and sorted(out) == list(range(len(out))):
            return [out[i] for i in range(len(out))]
        if "param_groups" in out and "state" not in out:
            out["state"] = {}
        return out

    return rebuilt(root)


def load_dcp_tensors(dcp: Any, folder: str, template: dict[str, torch.Tensor]) -> None:
    from torch.distributed.checkpoint.planner import LoadItemType

    class SafeReader(dcp.FileSystemReader):  # type: ignore[misc]
        def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
            meta = read_dcp_metadata(folder)
            meta.storage_meta = meta.storage_meta or __import__(
                "torch.distributed.checkpoint.metadata", fromlist=["StorageMeta"]).StorageMeta()
            meta.storage_meta.load_id = self.load_id
            return meta

        def read_data(self, plan: Any, planner: Any) -> Any:
            if any(item.type == LoadItemType.BYTE_IO for item in plan.items):
                raise Refused("DCP tried to read a byte entry (never unpickled unsafely)")
            return super().read_data(plan, planner)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            dcp.load(template, storage_reader=SafeReader(folder), no_dist=True)
        except Refused:
            raise
        except Exception as exc:
            raise Refused(f"DCP could not load the tensors ({explain(exc)})") from exc
