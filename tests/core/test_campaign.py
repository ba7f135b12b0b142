"""campaign.py on its own: plan.json and manifest.json into frozen dataclasses, and every way
a document is refused (which error, which message, which JSON path and position).

No pytest session here: real campaign folders written by CampaignBuilder, loaded directly.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_itera.core.campaign import (
    MANIFEST_FILE,
    MAX_DOCUMENT_BYTES,
    PLAN_FILE,
    Campaign,
    ContractError,
    DuplicateKeyError,
    format_version,
    json_path,
    load_campaign,
    load_plan,
    locate,
    parse_json,
    validate,
)
from tests.factory import CONTROL_CKPT, CampaignBuilder, as_plan_2

MISSING = "missing: a campaign folder has plan.json and manifest.json at its root"


def written(tmp_path: Path, version: int = 2,
            edit: Callable[[CampaignBuilder], object] | None = None) -> Path:
    builder = CampaignBuilder(tmp_path / "c", version=version)
    if edit is not None:
        edit(builder)
    return builder.write()


def rewrite(root: Path, name: str, change: Callable[[Any], None]) -> str:
    """Edit one document as JSON (indented like the builder's) and return its new text."""
    data = json.loads((root / name).read_text())
    change(data)
    text = json.dumps(data, indent=2) + "\n"
    (root / name).write_text(text)
    return text


def only_error(campaign: Campaign) -> ContractError:
    assert len(campaign.errors) == 1, campaign.errors
    return campaign.errors[0]


def value_at(text: str, error: ContractError) -> str:
    """The raw text at an error's line and column."""
    assert error.line is not None
    assert error.column is not None
    return text.splitlines()[error.line - 1][error.column - 1:]


# ------------------------------------------------------------------ good documents


def test_a_good_v2_campaign_loads_without_errors(tmp_path: Path) -> None:
    campaign = load_campaign(written(tmp_path))
    assert campaign.errors == ()
    assert campaign.plan is not None
    assert campaign.manifest is not None
    assert (campaign.plan.version, campaign.manifest.version) == (3, 2)
    computation = campaign.plan.decision.computation
    assert computation is not None
    assert (computation.kind, computation.label_field, computation.where) == (
        "accuracy", "label", None)
    assert campaign.plan.computations() == {"accuracy": computation}
    assert campaign.id == "tiny-2026-11"
    assert campaign.root == tmp_path / "c"
    assert [r.id for r in campaign.manifest.runs] == [
        "control", "data-check", "resume-check", "variant-a"]
    assert isinstance(campaign.plan_data, dict)
    assert isinstance(campaign.manifest_data, dict)


def test_a_v1_plan_fills_corpora_from_its_one_corpus(tmp_path: Path) -> None:
    campaign = load_campaign(written(tmp_path, version=1))
    assert campaign.errors == ()
    plan, manifest = campaign.plan, campaign.manifest
    assert plan is not None
    assert manifest is not None
    assert (plan.version, manifest.version) == (1, 1)
    assert plan.corpora == (plan.corpus,)
    assert plan.corpus.id == "tiny-corpus"
    run = manifest.run("control")
    assert run is not None
    assert run.deliverable == "tiny-corpus"
    assert run.corpus is None


def test_a_v2_plan_fills_corpus_with_its_first_corpus(tmp_path: Path) -> None:
    plan = load_campaign(written(tmp_path)).plan
    assert plan is not None
    assert plan.corpus is plan.corpora[0]
    assert plan.corpus.path == "corpus/corpus.jsonl"


def test_loaded_values_are_frozen_and_typed(tmp_path: Path) -> None:
    campaign = load_campaign(written(tmp_path))
    plan, manifest = campaign.plan, campaign.manifest
    assert plan is not None
    assert manifest is not None
    assert plan.frozen_at == datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
    assert isinstance(plan.runs, tuple)
    assert isinstance(plan.checkpoint_policy.resume_state, tuple)
    assert plan.checkpoint_policy.interval_hours == 1.0
    assert isinstance(plan.checkpoint_policy.interval_hours, float)  # JSON 1 becomes 1.0
    assert plan.budget.lots[0].price == "47.14"  # money stays a decimal string
    run = manifest.run("variant-a")
    assert run is not None
    assert dict(run.metrics) == {"accuracy": 1.0}
    with pytest.raises(TypeError):
        run.metrics["accuracy"] = 1.0  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.campaign = "other"  # type: ignore[misc]


# ------------------------------------------------------------------ Plan accessors


def two_corpora(builder: CampaignBuilder) -> None:
    second = dict(builder.plan["corpora"][0], id="second", path="corpus/second.jsonl")
    builder.plan["corpora"].append(second)
    runs = builder.plan["runs"]
    runs[0]["corpus"] = "second"  # control
    runs[1]["corpus"] = "nowhere"  # data-check: names no frozen corpus
    runs[2]["resume_state"] = ["model"]  # resume-check
    runs.append(dict(copy.deepcopy(runs[3]), category="exploratory"))  # a second variant-a


def test_corpus_of_a_run_is_its_own_corpus_else_the_only_one(tmp_path: Path) -> None:
    one = load_campaign(written(tmp_path / "one")).plan
    two = load_campaign(written(tmp_path / "two", edit=two_corpora)).plan
    assert one is not None
    assert two is not None
    assert one.corpus_of("control") == one.corpora[0]
    assert one.corpus_of("not-a-run") == one.corpora[0]
    second = two.corpus_of("control")
    assert second is not None
    assert second.id == "second"
    assert two.corpus_of("variant-a") is None  # two corpora, the run names none
    assert two.corpus_of("data-check") is None  # it names one the plan does not freeze
    assert two.corpus_by_id("tiny-corpus") == two.corpora[0]


def test_resume_state_of_a_run_overrides_the_policy(tmp_path: Path) -> None:
    plan = load_campaign(written(tmp_path, edit=two_corpora)).plan
    assert plan is not None
    policy = ("model", "optimizer", "progress", "scheduler", "rng", "data")
    assert plan.resume_state_of("resume-check") == ("model",)
    assert plan.resume_state_of("control") == policy
    assert plan.resume_state_of("not-a-run") == policy


def test_a_repeated_run_id_resolves_to_its_first_record(tmp_path: Path) -> None:
    plan = load_campaign(written(tmp_path, edit=two_corpora)).plan
    assert plan is not None
    assert [r.id for r in plan.runs].count("variant-a") == 2
    run = plan.run("variant-a")
    assert run is not None
    assert run.category == "useful"
    assert plan.run("nope") is None


def test_format_version_reads_the_number_after_the_slash() -> None:
    assert format_version("itera-plan/1") == 1
    assert format_version("itera-manifest/2") == 2


# ------------------------------------------------------------------ Manifest accessors


def test_owners_of_a_target_by_scope_and_by_the_files_a_run_names(tmp_path: Path) -> None:
    manifest = load_campaign(written(tmp_path)).manifest
    assert manifest is not None
    assert manifest.owners("run", "variant-a") == {"variant-a"}
    assert manifest.owners("campaign", "anything") == set()
    assert manifest.owners("checkpoint", CONTROL_CKPT) == {"control"}
    assert manifest.owners("file", "runs/control/measurements.jsonl") == {"control"}
    assert manifest.owners("file", "configs/variant-a.json") == {"variant-a"}
    assert manifest.owners("file", "analysis.md") == set()


def test_a_checkpoint_folder_owns_every_file_under_it(tmp_path: Path) -> None:
    def folder_checkpoint(builder: CampaignBuilder) -> None:
        builder.files["runs/variant-a/adapter/weights.bin"] = b"w"
        builder.manifest["checkpoints"].append(
            {"path": "runs/variant-a/adapter/", "run": "variant-a", "format": "torch",
             "kind": "weights"})

    manifest = load_campaign(written(tmp_path, edit=folder_checkpoint)).manifest
    assert manifest is not None
    assert manifest.owners("file", "runs/variant-a/adapter/weights.bin") == {"variant-a"}
    assert manifest.owners("file", "runs/variant-a/adapter") == {"variant-a"}
    assert manifest.owners("file", "runs/variant-a/adapterX") == set()
    # Folders' owners are computed once per folder: asked again, deeper, the answer holds.
    assert manifest.owners("file", "runs/variant-a/adapter/sub/deeper.bin") == {"variant-a"}
    assert manifest.owners("file", "runs/variant-a/adapter/weights.bin") == {"variant-a"}
    assert manifest.owners("file", "runs/variant-a/adapterX/weights.bin") == set()


def test_run_position_is_the_index_of_the_first_record(tmp_path: Path) -> None:
    manifest = load_campaign(written(tmp_path)).manifest
    assert manifest is not None
    assert manifest.run_position("resume-check") == 2
    assert manifest.run_position("ghost") is None


# ------------------------------------------------------------------ refused files


def test_a_missing_manifest_is_one_error_and_the_plan_still_loads(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / MANIFEST_FILE).unlink()
    campaign = load_campaign(root)
    error = only_error(campaign)
    assert (error.file, error.json_path, error.message) == (MANIFEST_FILE, "$", MISSING)
    assert error.where() == "manifest.json $"
    assert campaign.manifest is None
    assert campaign.manifest_data is None
    assert campaign.plan is not None
    assert campaign.errors_for(PLAN_FILE) == ()
    assert campaign.errors_for(MANIFEST_FILE) == (error,)


def test_invalid_json_names_the_line_and_column(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).write_text('{\n  "format": ,\n}')
    error = only_error(load_campaign(root))
    assert error == ContractError(PLAN_FILE, "$", "not JSON: Expecting value", 2, 13)
    assert error.where() == "plan.json:2:13 $"


def test_a_byte_order_mark_is_not_json(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).write_bytes(b"\xef\xbb\xbf" + (root / PLAN_FILE).read_bytes())
    error = only_error(load_campaign(root))
    assert error.message == "not JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)"
    assert (error.line, error.column) == (1, 1)


def test_a_document_not_in_utf8_names_the_first_bad_byte(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).write_bytes(b'{"a": "\xe9"}')
    error = only_error(load_campaign(root))
    assert error.message == "is not UTF-8 (byte 7: b'\\xe9')"
    assert error.line is None


def test_a_document_that_is_a_symbolic_link_is_refused_even_to_a_good_file(
    tmp_path: Path,
) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).rename(root / "real-plan.json")
    (root / PLAN_FILE).symlink_to("real-plan.json")
    campaign = load_campaign(root)
    assert only_error(campaign).message == (
        "is a symbolic link: the contract documents must be regular files")
    assert campaign.plan is None
    assert campaign.plan_data is None


def test_a_fifo_or_folder_as_document_is_refused_without_being_opened(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).unlink()
    os.mkfifo(root / PLAN_FILE)  # opening it for reading would block
    (root / MANIFEST_FILE).unlink()
    (root / MANIFEST_FILE).mkdir()
    campaign = load_campaign(root)
    assert [(e.file, e.message) for e in campaign.errors] == [
        (PLAN_FILE, "is not a regular file"), (MANIFEST_FILE, "is not a regular file")]


def test_a_document_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = written(tmp_path)
    with open(root / MANIFEST_FILE, "r+b") as handle:  # sparse: no 64 MiB written
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    assert only_error(load_campaign(root)).message == (
        f"is {MAX_DOCUMENT_BYTES + 1} bytes, over the 67108864-byte limit")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"format": "itera-plan/2", "format": "x"}',
         "not acceptable JSON: duplicate key 'format' in one object"),
        ('{"a": NaN}', "not acceptable JSON: NaN is not JSON (non-finite numbers are refused)"),
        ('{"a": 1e999}', "not acceptable JSON: number 1e999 overflows a float"),
        ("[" * 100_000 + "]" * 100_000, "not acceptable JSON: nested too deeply"),
    ],
    ids=["duplicate-key", "nan", "overflow", "deep"],
)
def test_json_the_contract_refuses_is_one_error_at_the_document(
    tmp_path: Path, text: str, message: str
) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).write_text(text)
    campaign = load_campaign(root)
    assert only_error(campaign) == ContractError(PLAN_FILE, "$", message)
    assert campaign.plan_data is None


# ------------------------------------------------------------------ schema errors


def test_a_schema_error_names_its_json_path_and_where_the_value_is(tmp_path: Path) -> None:
    root = written(tmp_path)

    def maybe(manifest: Any) -> None:
        manifest["runs"][2]["outcome"] = "maybe"

    text = rewrite(root, MANIFEST_FILE, maybe)
    campaign = load_campaign(root)
    error = only_error(campaign)
    assert error.json_path == "$.runs[2].outcome"
    assert error.message == (
        "'maybe' is not one of ['accepted', 'stopped', 'rejected', 'dropped']")
    assert value_at(text, error).startswith('"maybe"')
    assert error.where() == f"manifest.json:{error.line}:{error.column} $.runs[2].outcome"
    # The parsed data is kept for the string scans; the dataclass is not built.
    assert campaign.manifest is None
    assert campaign.manifest_data["runs"][2]["outcome"] == "maybe"


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (lambda p: p["budget"]["lots"][0].update(price=47.14), "$.budget.lots[0].price",
         '47.14 is a float; money and identifiers are strings (write "47.14")'),
        (lambda p: p["budget"]["lots"][0].update(price="47.1.4"), "$.budget.lots[0].price",
         "'47.1.4' is not a decimal money string like \"47.14\""),
        (lambda p: p.update(runz=[]), "$",
         "unknown field 'runz' (typo? unknown fields are rejected)"),
        (lambda p: p.update(stop_rules=[]), "$.stop_rules",
         "no stop rule: write the stop rules down before the trials (non-finite loss, quality "
         "under a threshold, a truncated input, no usable resume)"),
        (lambda p: p.update(frozen_at="2026-02-30T08:00:00Z"), "$.frozen_at",
         "'2026-02-30T08:00:00Z': day is out of range for month"),
        # Python's re takes "USD\n" for ^[A-Z]{3}$; the schema's ECMA regex does not.
        (lambda p: p["budget"].update(currency="USD\n"), "$.budget.currency",
         '"USD\\n" does not match "^[A-Z]{3}$"'),
    ],
    ids=["float-money", "money-pattern", "unknown-field", "no-stop-rule", "calendar",
         "trailing-newline"],
)
def test_common_schema_failures_are_explained(
    tmp_path: Path, change: Callable[[Any], None], path: str, message: str
) -> None:
    root = written(tmp_path)
    rewrite(root, PLAN_FILE, change)
    error = only_error(load_campaign(root))
    assert (error.file, error.json_path, error.message) == (PLAN_FILE, path, message)
    assert error.line is not None


def test_a_v1_plan_with_v2_corpora_says_which_version_has_what(tmp_path: Path) -> None:
    root = written(tmp_path, edit=lambda c: as_plan_2(c.plan))
    rewrite(root, PLAN_FILE, lambda p: p.update(format="itera-plan/1"))
    messages = [e.message for e in load_campaign(root).errors]
    assert messages == [
        "'corpus' is a required property",
        "'corpora' is itera-plan/2: an itera-plan/1 has one 'corpus' (or set format to "
        "itera-plan/2)",
    ]


def test_a_v2_plan_with_a_v1_corpus_says_which_version_has_what(tmp_path: Path) -> None:
    root = written(tmp_path)

    def v1_corpus(plan: Any) -> None:
        plan["corpus"] = plan["corpora"][0]

    rewrite(root, PLAN_FILE, v1_corpus)
    assert [e.message for e in load_campaign(root).errors] == [
        "'corpus' is itera-plan/1 only: an itera-plan/2 lists its frozen corpora in 'corpora'"]


def test_a_v2_manifest_with_a_v1_deliverable_points_at_the_run(tmp_path: Path) -> None:
    root = written(tmp_path)
    rewrite(root, MANIFEST_FILE, lambda m: m["runs"][0].update(deliverable="tiny-corpus"))
    error = only_error(load_campaign(root))
    assert error.json_path == "$.runs[0]"
    assert error.message == (
        "'deliverable' is itera-manifest/1 only: in /2 a run names the plan corpus its "
        "predictions cover in 'corpus'")


def test_schema_errors_are_capped_at_fifty(tmp_path: Path) -> None:
    root = written(tmp_path)

    def many(manifest: Any) -> None:
        manifest["files"] = [{"path": f"f{i}", "bytes": -1, "sha256": "x"} for i in range(40)]

    rewrite(root, MANIFEST_FILE, many)
    errors = load_campaign(root).errors
    assert len(errors) == 50
    assert {e.file for e in errors} == {MANIFEST_FILE}
    assert errors[0].json_path.startswith("$.files[0].")


def test_a_plan_that_is_not_an_object_is_one_error(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).write_text("[]")
    assert [e.message for e in load_campaign(root).errors] == ["[] is not of type 'object'"]


def test_validate_lists_problems_as_path_and_message(tmp_path: Path) -> None:
    root = written(tmp_path)
    plan = json.loads((root / PLAN_FILE).read_text())
    assert validate("plan", plan) == []
    del plan["question"]
    plan["decision"]["direction"] = "up"
    assert validate("plan", plan) == [
        "$: 'question' is a required property",
        "$.decision.direction: 'up' is not one of ['higher', 'lower']",
    ]


# ------------------------------------------------------------------ the campaign's id


def test_the_campaign_id_comes_from_the_manifest_then_the_plan_then_the_folder(
    tmp_path: Path,
) -> None:
    root = written(tmp_path)
    rewrite(root, MANIFEST_FILE, lambda m: m.update(campaign="from-manifest"))
    assert load_campaign(root).id == "from-manifest"
    (root / MANIFEST_FILE).write_text("{")
    assert load_campaign(root).id == "tiny-2026-11"
    (root / PLAN_FILE).write_text("{")
    assert load_campaign(root).id == "c"


# ------------------------------------------------------------------ a plan judged alone


def test_load_plan_names_the_file_as_called_and_reads_no_manifest(tmp_path: Path) -> None:
    root = written(tmp_path)
    (root / PLAN_FILE).rename(root / "draft.json")
    (root / MANIFEST_FILE).write_text("not even json")
    alone = load_plan(root / "draft.json")
    assert alone.errors == ()
    assert alone.plan is not None
    assert alone.plan.campaign == "tiny-2026-11"
    assert (alone.manifest, alone.root) == (None, root)
    (root / "draft.json").write_text('{"a": 1, "a": 2}')
    assert only_error(load_plan(root / "draft.json")) == ContractError(
        "draft.json", "$", "not acceptable JSON: duplicate key 'a' in one object")


def test_load_plan_of_a_missing_file_is_one_error(tmp_path: Path) -> None:
    campaign = load_plan(tmp_path / "nowhere.json")
    assert only_error(campaign) == ContractError("nowhere.json", "$", MISSING)
    assert campaign.plan is None


# ------------------------------------------------------------------ parse_json


def test_parse_json_refuses_a_duplicate_key_at_any_depth() -> None:
    with pytest.raises(DuplicateKeyError, match="duplicate key 'b' in one object"):
        parse_json('{"a": [{"b": 1, "b": 1}]}')
    assert parse_json('[{"b": 1}, {"b": 2}]') == [{"b": 1}, {"b": 2}]  # two objects: fine


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_parse_json_refuses_non_finite_constants(constant: str) -> None:
    with pytest.raises(ValueError, match=f"^{constant} is not JSON"):
        parse_json(f'{{"loss": {constant}}}')


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1" + "0" * 400 + ".0"])
def test_parse_json_refuses_floats_that_overflow(number: str) -> None:
    with pytest.raises(ValueError, match="overflows a float"):
        parse_json(f"[{number}]")


def test_parse_json_keeps_large_finite_numbers_and_big_integers_exactly() -> None:
    assert parse_json("[1e308, -1e308, 5e-324]") == [1e308, -1e308, 5e-324]
    assert parse_json("[" + "9" * 4000 + "]") == [int("9" * 4000)]


def test_parse_json_refuses_an_integer_past_pythons_digit_limit() -> None:
    # Not parse_json's own rule: int() refuses over 4300 digits, and loading reports it.
    with pytest.raises(ValueError, match="Exceeds the limit"):
        parse_json("[" + "1" * 5000 + "]")


def test_parse_json_lets_deep_nesting_raise_recursion_error() -> None:
    with pytest.raises(RecursionError):
        parse_json("[" * 100_000 + "]" * 100_000)


# ------------------------------------------------------------------ positions and paths


@pytest.mark.parametrize(
    ("raw", "path", "position"),
    [
        ('{"a": [1, {"b": 2}]}', ["a", 1, "b"], (1, 17)),
        ('{\n  "x": 1,\n  "y": [\n    true,\n    "here"\n  ]\n}', ["y", 1], (5, 5)),
        ('{"a\\u0062": 3}', ["ab"], (1, 13)),  # an escaped key is found by its value
        ('{"é": {"k": 1}}', ["é", "k"], (1, 13)),  # columns count characters, not bytes
        ("  [0]", [], (1, 3)),
        ('{"a": 1}', ["z"], (None, None)),
        ('{"a": [1]}', ["a", 5], (None, None)),
        ('{"a":', ["a"], (None, None)),  # broken text: no position, no exception
        ('{"a": 1}', [0], (None, None)),  # an index into an object
    ],
)
def test_locate_finds_where_a_value_starts(
    raw: str, path: list[str | int], position: tuple[int | None, int | None]
) -> None:
    assert locate(raw, path) == position


def test_json_path_writes_keys_with_dots_and_indexes_in_brackets() -> None:
    assert json_path([]) == "$"
    assert json_path(["runs", 2, "stop", "rule"]) == "$.runs[2].stop.rule"
    assert json_path([0, 1]) == "$[0][1]"
