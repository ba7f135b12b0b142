"""The closure seal (issue 17): written only when accepted, verified later file by file."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pytest_itera.report import seal, seal_result
from tests.factory import CampaignBuilder, expect
from tests.runner import BEFORE_WORKERS, Itera

# Why a test runs in one xdist mode (tests/plugin/conftest.py).
CONTENT = ("what a seal holds and what verifying it says: the seal is made from the folder and "
           "the written report, and test_a_signed_seal_verifies_and_names_each_changed_file "
           "writes and verifies one in every xdist mode")


def keypair(folder: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = folder / f"{name}.pem", folder / f"{name}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.fixture
def keys(pytester: pytest.Pytester) -> tuple[Path, Path]:
    return keypair(pytester.path, "seal")


@pytest.fixture
def signed(itera: Itera, campaign: CampaignBuilder, keys: tuple[Path, Path]) -> Path:
    """The campaign written and sealed with the private key of ``keys``: the public key."""
    private, public = keys
    sealed(itera, campaign, "--itera-seal-key", str(private))
    return public


def sealed(itera: Itera, campaign: CampaignBuilder, *args: str) -> pytest.RunResult:
    campaign.write()
    result = itera("--itera-report", "r.json", "--itera-seal", "closure.seal.json", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return result


def verify(itera: Itera, *args: str) -> pytest.RunResult:
    return itera("--itera-verify-seal", "closure.seal.json", *args)


# ------------------------------------------------------------------ signed


def test_a_signed_seal_verifies_and_names_each_changed_file(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, keys: tuple[Path, Path]
) -> None:
    private, public = keys
    written = sealed(itera, campaign, "--itera-seal-key", str(private))
    written.stdout.fnmatch_lines([f"closure seal: {pytester.path / 'closure.seal.json'} "
                                  "(signed, * files)"])
    bundle = json.loads((pytester.path / "closure.seal.json").read_text())
    assert bundle["mediaType"] == seal.BUNDLE_MEDIA_TYPE  # a model-signing (Sigstore) bundle
    holds = verify(itera, "--itera-seal-pubkey", str(public), "--itera-require-accepted")
    assert holds.ret == pytest.ExitCode.OK, holds.stdout.str()
    holds.assert_outcomes(passed=3)  # seal-signature, seal-files, seal-result: nothing reloaded
    holds.stdout.fnmatch_lines(["campaign tiny-2026-11: SEAL HOLDS — * files as sealed on "
                                "*Z (signature holds); sealed verdict accepted, JSON report "
                                "sha256 *"])
    # One byte changed, one file removed, one added: each named.
    target = campaign.root / "runs/control/predictions.jsonl"
    data = bytearray(target.read_bytes())
    data[0] ^= 1
    target.write_bytes(bytes(data))
    (campaign.root / "RELOAD.md").unlink()
    (campaign.root / "late.txt").write_text("added later\n")
    campaign.seal()
    broken = verify(itera, "--itera-seal-pubkey", str(public))
    assert broken.ret == pytest.ExitCode.TESTS_FAILED
    broken.assert_outcomes(passed=1, failed=2)  # the changed predictions: seal-result too
    expect(broken, "seal-files: 3 problems",
           "RELOAD.md: missing: sealed, no longer in the folder",
           "late.txt: added after the seal",
           "runs/control/predictions.jsonl: changed since the seal (sha256 differs)",
           "campaign tiny-2026-11: SEAL BROKEN — seal-files, seal-result (*closure.seal.json)")


@pytest.mark.one_mode(CONTENT)
def test_a_wrong_key_or_no_key_fails(itera: Itera, pytester: pytest.Pytester,
                                     signed: Path) -> None:
    _, other = keypair(pytester.path, "other")
    wrong = verify(itera, "--itera-seal-pubkey", str(other))
    assert wrong.ret == pytest.ExitCode.TESTS_FAILED
    wrong.assert_outcomes(passed=2, failed=1)
    expect(wrong, f"the signature of *closure.seal.json does not hold with {other}: Key "
           "mismatch*")
    none = verify(itera)
    assert none.ret == pytest.ExitCode.TESTS_FAILED
    expect(none, "*closure.seal.json is signed: give the signer's public key to check it",
           "    fix:      pass --itera-seal-pubkey KEY.pub")


@pytest.mark.one_mode(CONTENT)
def test_an_edited_signed_seal_fails_its_signature(itera: Itera, pytester: pytest.Pytester,
                                                   signed: Path) -> None:
    path = pytester.path / "closure.seal.json"
    bundle = json.loads(path.read_text())
    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    statement["predicate"]["itera"]["verdict"] = "accepted, honestly"
    bundle["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    path.write_text(json.dumps(bundle))
    result = verify(itera, "--itera-seal-pubkey", str(signed))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED out/manifest.json::seal-signature*"])


@pytest.mark.one_mode(CONTENT)
def test_the_seal_is_model_signings_own_format(
    pytester: pytest.Pytester, campaign: CampaignBuilder, signed: Path
) -> None:
    """Anyone can check it with model-signing's public API, without pytest-itera."""
    from model_signing import verifying

    config = verifying.Config()  # type: ignore[no-untyped-call]
    config.use_elliptic_key_verifier(public_key=signed).verify(
        campaign.root, pytester.path / "closure.seal.json")


# ------------------------------------------------------------------ unsigned


@pytest.mark.one_mode(CONTENT)
def test_a_digest_only_seal_is_an_in_toto_statement_over_every_file(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    result = sealed(itera, campaign)
    result.stdout.fnmatch_lines(["closure seal: * (digest-only, unsigned, * files)"])
    statement = json.loads((pytester.path / "closure.seal.json").read_text())
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://model_signing/signature/v1.0"
    resources = {r["name"]: r["digest"] for r in statement["predicate"]["resources"]}
    on_disk = {p.relative_to(campaign.root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in campaign.root.rglob("*") if p.is_file()}
    assert resources == on_disk
    record = statement["predicate"]["itera"]
    report = (pytester.path / "r.json").read_bytes()
    assert record["report_sha256"] == hashlib.sha256(report).hexdigest()
    assert (record["format"], record["campaign"], record["verdict"]) == (
        "itera-seal/1", "tiny-2026-11", "accepted")
    assert record["reports"] == [str(pytester.path / "r.json")]
    assert verify(itera).ret == pytest.ExitCode.OK
    _, public = keypair(pytester.path, "k")
    unsigned = verify(itera, "--itera-seal-pubkey", str(public))
    assert unsigned.ret == pytest.ExitCode.TESTS_FAILED
    expect(unsigned, "*closure.seal.json is not signed (digest-only): * cannot vouch for it")


# ------------------------------------------------------------------ when not to seal


@pytest.mark.one_mode("whether a seal is written follows the verdict alone, which "
                      "test_report.py and test_integration.py check in every xdist mode")
def test_no_seal_unless_accepted(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder
) -> None:
    campaign.files["analysis.md"] = b""
    campaign.write()
    rejected = itera("--itera-report", "r.json", "--itera-seal", "s.json")
    assert rejected.ret == pytest.ExitCode.TESTS_FAILED
    rejected.stdout.fnmatch_lines(["closure seal NOT written: *s.json: not written: the verdict "
                                   "is REJECTED; only an accepted campaign is sealed"])
    assert not (pytester.path / "s.json").exists()
    incomplete = itera("--itera-report", "r.json", "--itera-seal", "s.json", "-k",
                       "manifest")
    assert incomplete.ret == pytest.ExitCode.TESTS_FAILED  # every item passed, yet no seal
    assert not (pytester.path / "s.json").exists()


@pytest.mark.one_mode(BEFORE_WORKERS)
@pytest.mark.parametrize(
    ("args", "error"),
    [(("--itera-report", "r.json", "--itera-seal", "out/s.json"),
      "--itera-seal: out/s.json is inside the campaign */out: keep it outside*"),
     (("--itera-seal", "s.json"), "--itera-seal: the seal carries the JSON report's sha256: "
      "add --itera-report PATH.json"),
     (("--itera-report", "r.json", "--itera-seal", "s.json", "--itera-seal-key", "bad.pem"),
      "--itera-seal-key: *bad.pem: not a usable PEM private key*"),
     (("--itera-report", "r.json", "--itera-seal", "s.json", "--itera-fast"),
      "--itera-seal: not with --itera-fast*"),
     (("--itera-verify-seal", "missing.json"), "--itera-verify-seal: missing.json: no such file"),
     (("--itera-seal-key", "bad.pem"), "--itera-seal-key and --itera-seal-pubkey go with*")],
    ids=["inside", "no-json-report", "bad-key", "fast", "no-seal-file", "key-alone"],
)
def test_seal_usage_errors(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, args: tuple[str, ...],
    error: str,
) -> None:
    campaign.write()
    (pytester.path / "bad.pem").write_text("not a key")
    result = itera(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {error}"])


def test_a_folder_changed_after_its_checks_is_not_sealed(tmp_path: Path) -> None:
    builder = CampaignBuilder(tmp_path / "camp")
    builder.write()
    expected = {"RELOAD.md": "0" * 64}
    with pytest.raises(seal.SealError, match=r"RELOAD\.md: changed after the checks ran"):
        seal.write(builder.root, tmp_path / "s.json", {}, expected=expected)
    assert not (tmp_path / "s.json").exists()


# ------------------------------------------------------------------ the result it carries


def sealed_record(path: Path) -> dict[str, Any]:
    """The itera record of a seal file, signed or not (without its format: seal.write adds it)."""
    record = dict(seal.read(path).record)
    record.pop("format")
    return record


@pytest.mark.one_mode(CONTENT)
def test_the_seal_records_the_result_and_verifying_recomputes_it(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, signed: Path
) -> None:
    result = sealed_record(pytester.path / "closure.seal.json")["result"]
    assert seal_result.problems(result) == []
    plan_sha256 = hashlib.sha256((campaign.root / "plan.json").read_bytes()).hexdigest()
    predictions = campaign.root / "runs/variant-a/predictions.jsonl"
    assert (result["plan_sha256"], result["journal"], result["verdict"]) == (
        plan_sha256, None, "accepted")  # the factory's campaign is hand-written: no journal
    assert result["decision"]["threshold"] == 0.8
    assert result["decision"]["computation"]["kind"] == "accuracy"
    variant = next(r for r in result["runs"] if r["run"] == "variant-a")
    assert variant["value"] == 1.0
    assert variant["source"].startswith("recomputed")
    assert variant["predictions_sha256"] == hashlib.sha256(predictions.read_bytes()).hexdigest()
    assert result["conclusion"]["meets_threshold"] == ["variant-a"]
    holds = verify(itera, "--itera-seal-pubkey", str(signed))
    assert holds.ret == pytest.ExitCode.OK, holds.stdout.str()
    holds.stdout.fnmatch_lines([
        "*: SEAL HOLDS — *",
        "sealed result: accuracy (higher, threshold 0.8) recomputed from the sealed "
        "predictions: control 0.75, variant-a 1; meets the threshold: variant-a",
        "sealed conclusion: variant-a meets the 0.8 accuracy threshold; the control does not."])


def metric_raised(record: dict[str, Any]) -> None:
    control = next(r for r in record["result"]["runs"] if r["run"] == "control")
    control["value"] = 0.85
    record["result"]["conclusion"]["meets_threshold"] = ["control", "variant-a"]


def interval_made_decisive(record: dict[str, Any]) -> None:
    variant = next(r for r in record["result"]["runs"] if r["run"] == "variant-a")
    assert "interval" in variant  # a variant's, or why it has none
    variant["interval"] = {"gain": 0.25, "low": 0.2, "high": 0.3, "level": 0.95,
                           "method": "paired bootstrap, 2000 resamples, seed 0",
                           "decisive": True}


def result_dropped(record: dict[str, Any]) -> None:
    del record["result"]  # what itera-seal/1 wrote before the result was recorded


def schema_broken(record: dict[str, Any]) -> None:
    record["result"]["runs"] = "all of them"
    del record["result"]["conclusion"]


FORGED = {"passed": 2, "failed": 1}  # the signature and the files hold


@pytest.mark.one_mode(CONTENT)
@pytest.mark.parametrize(
    ("signs", "rewrite", "ret", "outcomes", "lines", "also"),
    [pytest.param(True, metric_raised, pytest.ExitCode.TESTS_FAILED, FORGED, (
        "seal-result: 2 problems",
        "*run control's accuracy: sealed 0.85, recomputed 0.75 (recomputed *",
        "*the conclusion (manifest.json): the seal records one value, the folder gives another*",
        "campaign tiny-2026-11: SEAL BROKEN — seal-result (*closure.seal.json)"), (),
        id="metric-signed-again"),
     pytest.param(True, interval_made_decisive, pytest.ExitCode.TESTS_FAILED, FORGED, (
         "seal-result: 1 problem",
         "*run variant-a: its interval (recomputed with the sealed seed): the seal records one "
         "value, the folder gives another*"), (),
         id="interval-signed-again"),
     pytest.param(False, result_dropped, pytest.ExitCode.OK, {"passed": 3},
                  ("*: SEAL HOLDS — *", seal_result.NO_RESULT), (),
                  id="older-version"),
     pytest.param(False, schema_broken, pytest.ExitCode.TESTS_FAILED, {"passed": 2, "failed": 1},
                  ("seal-result: 1 problem",
                   "*closure.seal.json: the result the seal records breaks its schema "
                   "(seal-result): *'conclusion' is a required property*"),
                  ("$.runs: 'all of them' is not of type 'array'",),
                  id="result-breaks-schema")],
)
def test_a_rewritten_seal_is_judged_by_the_result_it_records(
    itera: Itera, pytester: pytest.Pytester, campaign: CampaignBuilder, keys: tuple[Path, Path],
    signs: bool, rewrite: Callable[[dict[str, Any]], None], ret: pytest.ExitCode,
    outcomes: dict[str, int], lines: tuple[str, ...], also: tuple[str, ...],
) -> None:
    """The seal's record rewritten, then written again (signed by the same key where it was).

    A metric edited and signed again: every digest holds and so does the signature (the same
    key signed the forgery): only recomputing the value from the sealed predictions finds it.
    An interval made decisive: how sure the decision is is sealed too, and an interval
    rewritten to look decisive is found by resampling the sealed predictions again (the same
    seed). A seal of an older version (no result) is verified for bytes and says so; a result
    that breaks its schema is a finding."""
    private, public = keys
    sealed(itera, campaign, *(("--itera-seal-key", str(private)) if signs else ()))
    path = pytester.path / "closure.seal.json"
    record = sealed_record(path)
    rewrite(record)
    seal.write(campaign.root, path, record, key=private if signs else None)
    judged = verify(itera, *(("--itera-seal-pubkey", str(public)) if signs else ()))
    assert judged.ret == ret, judged.stdout.str()
    judged.assert_outcomes(**outcomes)
    expect(judged, *lines)
    for words in also:
        assert words in judged.stdout.str()
