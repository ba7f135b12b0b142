"""Fuzzed contracts: valid campaigns, mutated by Hypothesis, never crash a check.

Every mutation that makes a document invalid must fail the `manifest` check with
the JSON path; whatever the mutation, no check raises (a raise would be a plugin
traceback or an INTERNALERROR for the user). Checks are evaluated in-process
through the same Context the items use, so hundreds of cases stay fast.
"""

from __future__ import annotations

import copy
import importlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_itera.checks import Check, Context, Options
from pytest_itera.checks.engine import judge
from pytest_itera.checks.model import FAMILIES
from pytest_itera.core.campaign import _fast_validator, _validator, load_campaign, validate
from pytest_itera.reload import Reloader
from tests.factory import CampaignBuilder

JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.just("47.14"),
    st.just(47.14),
    st.just("/tmp/x"),
    st.just("é" * 40 + "\u202e"),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def all_checks() -> dict[str, Check]:
    checks: dict[str, Check] = {}
    for module in FAMILIES.values():
        for check in importlib.import_module(module).CHECKS:
            checks[check.id] = check
    return checks


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from paths(value, (*prefix, i))


def get(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated(draw: st.DrawFn, document: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(document)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from([p for p in paths(doc) if p]))
        parent, key = get(doc, path[:-1]), path[-1]
        action = draw(st.sampled_from(["delete", "replace", "extra", "deep"]))
        if action == "delete" and isinstance(parent, dict):
            del parent[key]
        elif action == "extra" and isinstance(get(doc, path), dict):
            get(doc, path)[draw(st.text(min_size=1, max_size=8))] = draw(JSON_LEAVES)
        elif action == "deep":
            parent[key] = json.loads("[" * 60 + "]" * 60)
        else:
            parent[key] = draw(JSON_VALUES)
    return doc


@pytest.fixture(scope="module")
def reloader() -> Iterator[Reloader]:
    """One reload server for the module's examples, as a pytest process has one for all its
    campaigns (a server per example would import torch again: 15-18 s an example)."""
    with Reloader(timeout=30) as shared:
        yield shared


def evaluate(root: Path, reloader: Reloader) -> dict[tuple[str, str | None], tuple[str, ...]]:
    """Every check on every target, as the items would run them."""
    checks = all_checks()
    ctx = Context(load_campaign(root), Options(timeout=30), checks,
                  reloader_factory=lambda: reloader, close_reloader=False)
    try:
        return {
            (check.id, target): tuple(f.render() for f in judge(ctx).findings(check.id, target))
            for check in checks.values()
            for target in judge(ctx).targets(check)
        }
    finally:
        ctx.close()


FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _write(builder: CampaignBuilder) -> Path:
    try:
        return builder.write()
    except (
        TypeError,
        ValueError,
    ):  # json cannot encode the mutation (e.g. a key that is not a str)
        return Path()


@FUZZ
@given(data=st.data(), which=st.sampled_from(["plan", "manifest"]))
def test_mutated_documents_fail_clearly_and_never_crash(
    data: st.DataObject, which: str, reloader: Reloader
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="itera-fuzz-"))
    try:
        builder = CampaignBuilder(workdir / "out")
        original = builder.plan if which == "plan" else builder.manifest
        doc = data.draw(mutated(original))
        setattr(builder, which, doc)
        if _write(builder) == Path():
            return
        results = evaluate(builder.root, reloader)
        on_disk = json.loads((builder.root / f"{which}.json").read_text())
        if validate(which, on_disk):
            assert results[("manifest", None)], "an invalid document passed the manifest check"
            assert any(f"{which}.json" in line for line in results[("manifest", None)])
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@FUZZ
@given(data=st.data())
def test_mutated_bytes_never_crash(data: st.DataObject, reloader: Reloader) -> None:
    """Text-level damage: truncation, duplicate keys, NaN, stray bytes."""
    workdir = Path(tempfile.mkdtemp(prefix="itera-fuzz-"))
    try:
        builder = CampaignBuilder(workdir / "out")
        builder.write()
        path = builder.root / data.draw(st.sampled_from(["plan.json", "manifest.json"]))
        text = path.read_bytes()
        cut = data.draw(st.integers(0, len(text)))
        damage = data.draw(
            st.sampled_from(
                [b"", b'"format": "x", ', b"NaN", b"\x00\xff", b"{" * 50, b'"campaign": "a",']
            )
        )
        path.write_bytes(text[:cut] + damage + text[cut:])
        results = evaluate(builder.root, reloader)
        try:
            valid = not validate(path.stem, json.loads(path.read_bytes()))
        except ValueError:
            valid = False
        if not valid:
            assert results[("manifest", None)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# Strings that differ from a pattern's match only by a final newline: Python's `re` lets
# `$` match before it, ECMA-262 (jsonschema-rs, the JSON Schema dialect) does not.
NEWLINE_ENDED = st.sampled_from(["USD\n", "47.14\n", "control\n", "a" * 64 + "\n",
                                 "2026-11-02T08:00:00Z\n"])


@settings(FUZZ, max_examples=400)
@given(data=st.data(), which=st.sampled_from(["plan", "manifest"]))
def test_the_two_validators_agree(data: st.DataObject, which: str) -> None:
    """jsonschema-rs decides validity, the Python validator explains: they must agree on
    every mutated document, except that jsonschema-rs also refuses a final newline after a
    pattern (then its own errors are reported, see test_contract_checks)."""
    original = copy.deepcopy(CampaignBuilder(Path("unused")).plan if which == "plan"
                             else CampaignBuilder(Path("unused")).manifest)
    doc = data.draw(mutated(original))
    if data.draw(st.booleans()):  # also plant a newline-ended string where a pattern applies
        path = data.draw(st.sampled_from([p for p in paths(doc) if p]))
        if isinstance(get(doc, path), str):
            get(doc, path[:-1])[path[-1]] = data.draw(NEWLINE_ENDED)
    fast = _fast_validator(which).is_valid(doc)
    python_errors = list(_validator(which).iter_errors(doc))
    if fast:
        assert not python_errors, "jsonschema-rs accepted what the Python validator refuses"
    elif not python_errors:
        rs_errors = list(_fast_validator(which).iter_errors(doc))
        assert rs_errors
        assert all(e.message.split(" does not match ")[0].endswith('\\n"') for e in rs_errors)
    assert bool(validate(which, doc)) is not fast


JUNK = {
    "empty": b"",
    "binary": bytes(range(256)) * 4,
    "bare-cr-lines": b"id,prediction\rex-1,pos\r",
    "not-utf8": b'\xff\xfe\xfa{"id": 1}\n',
    "nul-in-json": b'{"id": "a\x00"}\n',
    "deep-json": b"[" * 5000 + b"]" * 5000,
    "huge-number": b"1e999999\n",
    "mixed-jsonl": b'{"id": "ex-1"}\n[1,2]\n"str"\nnull\n{"id": null}\n{"id": 1.5}\n{"id": true}\n',
    "unterminated-csv": b'id\n"unterminated\n',
    "one-long-line": b"x" * (3 << 20),
}


@pytest.mark.parametrize("corpus", [False, True], ids=["data-files", "corpus"])
@pytest.mark.parametrize("junk", sorted(JUNK))
def test_junk_data_files_never_crash_a_check(
    tmp_path: Path, junk: str, corpus: bool, reloader: Reloader
) -> None:
    """Every file a check reads (predictions, metrics, configs, notes; or the corpus, which
    blocks the predictions check when unreadable) replaced by junk: findings, never a raise."""
    builder = CampaignBuilder(tmp_path / "out")
    for name in builder.files:
        if (name == "corpus/corpus.jsonl") == corpus:
            builder.files[name] = JUNK[junk]
    builder.write()
    results = evaluate(builder.root, reloader)  # raises if a check raises
    assert any(results.values()), "junk everywhere and no check noticed"
