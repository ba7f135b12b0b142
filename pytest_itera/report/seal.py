"""The closure seal: a standard record of an accepted campaign folder, re-verifiable later
(no pytest import).

Made with OpenSSF model-signing (``pip install 'pytest-itera[seal]'``): an in-toto Statement
v1 whose predicate (model-signing's ``https://model_signing/signature/v1.0``) lists every file
of the folder with its sha256, plus an ``itera`` field -- the predicate's documented extension
point, ignored by other verifiers -- with the campaign, the verdict, the JSON report's sha256,
the waivers applied and when it was sealed, and the result (:mod:`.seal_result`: each compared
run's decision metric, the threshold, the conclusion), recomputed when the seal is verified.

- With a private key (``--itera-seal-key``, ECDSA P-256/384/521, PEM): model-signing's
  key-based Sigstore bundle, a DSSE envelope around that statement, signed offline.
- Without: the statement itself, as JSON (digest-only: it proves integrity against the copy
  you hold, not who made it).

Keyless Sigstore (OIDC identity, Fulcio certificate, Rekor log) needs the network: not offered.
:func:`verify` re-hashes the folder (no reload) and names each changed, missing or added file;
the ``seal-result`` item recomputes the sealed result from the files.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_itera.checks.context import Check, Context
from pytest_itera.core.findings import Finding
from pytest_itera.report import seal_result, write_atomic

__all__ = ["SEAL_FORMAT", "SealError", "Sealed", "Verification", "checks", "key_problem", "read",
           "verify", "write"]

SEAL_FORMAT = "itera-seal/1"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://model_signing/signature/v1.0"
BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
INSTALL = "pip install 'pytest-itera[seal]' (OpenSSF model-signing)"


class SealError(Exception):
    """The seal cannot be made (the library is missing, the folder changed, a key is bad)."""


def _library() -> Any:
    try:
        import model_signing.hashing
    except ImportError as exc:
        raise SealError(f"sealing needs model-signing, which is not installed: {INSTALL} "
                        f"({exc})") from None
    return model_signing.hashing


def _hashing_config() -> Any:
    """Every file, .git* included (a campaign folder is not a repository), links followed."""
    hashing = _library()
    return (hashing.Config()
            .set_ignored_paths(paths=[], ignore_git_paths=False)
            .set_allow_symlinks(True)
            .use_file_serialization(hashing_algorithm="sha256", allow_symlinks=True))


# Relative path -> (sha256, fingerprint) of a file the checks hashed (Context.verified_digests;
# the fingerprint is scan.FileFacts.fingerprint: st_dev, st_ino, size, mtime_ns, ctime_ns).
Known = Mapping[str, tuple[str, tuple[int, int, int, int, int]]]


def _manifest(root: Path, known: Known | None = None) -> Any:
    """model-signing's manifest of every file of ``root``. ``known``: a file whose stat now
    gives the fingerprint it had when the checks hashed it is not read again: its digest is
    the checks' (any write since moves its ctime); every other file is hashed."""
    try:
        if not known:
            return _hashing_config().hash(root)
        _library()
        from model_signing._serialization import file as by_file

        serializer = by_file.Serializer(_reusing_factory(root, known), allow_symlinks=True)
        return serializer.serialize(Path(root), ignore_paths=[])
    except (OSError, ValueError) as exc:
        raise SealError(f"{root}: cannot hash the folder: {exc}") from None


def _reusing_factory(root: Path, known: Known) -> Any:
    """model-signing's file hasher factory (what ``_hashing_config`` configures: SHA-256, 1 MiB
    chunks), answering with the checks' digest where the file is unchanged since."""
    import os

    from model_signing._hashing import hashing, io, memory

    class Reused(io.FileHasher):
        def __init__(self, digest: str) -> None:
            self._digest = bytes.fromhex(digest)

        def compute(self) -> Any:
            return hashing.Digest("sha256", self._digest)

        @property
        def digest_name(self) -> str:
            return "sha256"

        @property
        def digest_size(self) -> int:
            return 32

    def factory(path: Path) -> Any:
        if path != Path():  # model-signing asks once with Path() for the digest's name
            try:
                found = known.get(path.relative_to(root).as_posix())
            except ValueError:
                found = None
            if found is not None:
                try:
                    st = os.stat(path)  # followed, as model-signing reads it
                except OSError:
                    st = None
                if st is not None and found[1] == (st.st_dev, st.st_ino, st.st_size,
                                                   st.st_mtime_ns, st.st_ctime_ns):
                    return Reused(found[0])
        return io.SimpleFileHasher(path, memory.SHA256(), chunk_size=1 << 20)

    return factory


def digests_of(manifest: Any) -> dict[str, str]:
    """Relative POSIX path -> sha256 hex, from a model-signing manifest."""
    return {str(rd.identifier): rd.digest.digest_hex for rd in manifest.resource_descriptors()}


# ------------------------------------------------------------------ keys


def key_problem(path: Path, *, private: bool, password: str | None = None) -> str | None:
    """Why a PEM key cannot sign (private) or verify (public) a seal, or None."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        raw = path.read_bytes()
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    try:
        if private:
            secret = password.encode() if password else None
            key: Any = serialization.load_pem_private_key(raw, secret).public_key()
        else:
            key = serialization.load_pem_public_key(raw)
    except (ValueError, TypeError) as exc:
        kind = "private" if private else "public"
        return f"{path}: not a usable PEM {kind} key ({exc})"
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name not in (
            "secp256r1", "secp384r1", "secp521r1"):
        return f"{path}: an ECDSA key on P-256, P-384 or P-521 is needed (model-signing's keys)"
    return None


# ------------------------------------------------------------------ sealing


@dataclass(frozen=True)
class Sealed:
    path: Path
    files: int
    signed: bool


def write(
    root: Path, dest: Path, record: Mapping[str, Any], *, key: Path | None = None,
    password: str | None = None, expected: Mapping[str, str] | None = None,
    known: Known | None = None,
) -> Sealed:
    """Hash every file of ``root`` and write the seal to ``dest`` (signed with ``key``).

    ``expected``: relative path -> the sha256 the checks verified; a file whose bytes differ
    now changed after its checks ran, and nothing is sealed. ``known``: the checks' digests
    with their files' fingerprints, reused for a file whose fingerprint is unchanged.
    """
    manifest = _manifest(root, known)
    changed = _changed_since_checks(digests_of(manifest), expected or {})
    if changed:
        raise SealError(f"{', '.join(changed)}: changed after the checks ran; not sealed")
    from model_signing._signing import signing  # the predicate's extension point: see above

    payload = signing.Payload(manifest)
    payload.statement.pb.predicate.update({"itera": {"format": SEAL_FORMAT, **record}})
    if key is None:
        from google.protobuf import json_format

        write_atomic(dest, json_format.MessageToJson(payload.statement.pb) + "\n")
    else:
        from model_signing._signing import sign_ec_key, sign_sigstore_pb

        try:
            signature = sign_ec_key.Signer(key, password).sign(payload)
        except (OSError, ValueError, TypeError) as exc:
            raise SealError(f"{key}: cannot sign with this key: {exc}") from None
        assert isinstance(signature, sign_sigstore_pb.Signature)  # a key signer's bundle
        write_atomic(dest, signature.bundle.to_json() + "\n")
    return Sealed(dest, len(list(manifest.resource_descriptors())), key is not None)


def _changed_since_checks(found: Mapping[str, str], expected: Mapping[str, str]) -> list[str]:
    return sorted(p for p, digest in expected.items() if found.get(p) != digest)


# ------------------------------------------------------------------ reading and verifying


@dataclass(frozen=True)
class SealFile:
    """A seal as read, before any verification."""

    signed: bool
    statement: Mapping[str, Any]
    bundle: Mapping[str, Any] | None = None

    @property
    def record(self) -> Mapping[str, Any]:
        predicate = self.statement.get("predicate")
        itera = predicate.get("itera") if isinstance(predicate, dict) else None
        return itera if isinstance(itera, dict) else {}

    def resources(self) -> dict[str, str]:
        predicate = self.statement.get("predicate")
        items = predicate.get("resources") if isinstance(predicate, dict) else None
        out: dict[str, str] = {}
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                out[item["name"]] = str(item.get("digest", ""))
        return out


def read(path: Path) -> SealFile:
    """The seal at ``path``: a signed bundle or a bare statement; SealError when neither."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SealError(f"{path}: cannot read the seal: {exc}") from None
    if not isinstance(data, dict):
        raise SealError(f"{path}: not a seal (expected a JSON object)")
    if "dsseEnvelope" in data:
        try:
            statement = json.loads(base64.b64decode(data["dsseEnvelope"]["payload"]))
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise SealError(f"{path}: a bundle without a readable statement ({exc})") from None
        if not isinstance(statement, dict):
            raise SealError(f"{path}: a bundle without a readable statement")
        return SealFile(True, statement, data)
    return SealFile(False, data)


@dataclass(frozen=True)
class Verification:
    """What :func:`verify` found: signature problems apart from the files' problems."""

    seal: SealFile | None
    signature: tuple[Finding, ...] = ()
    files: tuple[Finding, ...] = ()
    checked: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def verify(root: Path, seal_path: Path, public_key: Path | None) -> Verification:
    """Does ``root`` still match the seal file by file, and does its signature hold?"""
    try:
        seal = read(seal_path)
    except SealError as exc:
        problem = Finding(str(exc), where=str(seal_path), code="seal.unreadable",
                          hint="give the seal file written by --itera-seal")
        return Verification(None, (problem,), (problem,))
    signature = tuple(_signature_findings(seal, seal_path, public_key))
    expected = seal.resources()
    try:
        found = digests_of(_manifest(root))
    except SealError as exc:
        return Verification(seal, signature, (Finding(str(exc), code="seal.unreadable"),))
    files = tuple(_file_findings(expected, found, seal_path))
    return Verification(seal, signature, files, checked=len(expected))


def _signature_findings(seal: SealFile, path: Path, public_key: Path | None) -> list[Finding]:
    out = list(_statement_findings(seal, path))
    if seal.signed and public_key is None:
        out.append(Finding(f"{path} is signed: give the signer's public key to check it",
                           code="seal.no-key", hint="pass --itera-seal-pubkey KEY.pub"))
    elif not seal.signed and public_key is not None:
        out.append(Finding(f"{path} is not signed (digest-only): {public_key} cannot vouch "
                           "for it", code="seal.unsigned",
                           hint="verify it without --itera-seal-pubkey, or seal again with "
                           "--itera-seal-key"))
    elif seal.signed and public_key is not None:
        problem = _signature_problem(path, public_key)
        if problem is not None:
            out.append(Finding(f"the signature of {path} does not hold with {public_key}: "
                               f"{problem}", code="seal.signature",
                               hint="use the public key of the key that sealed it; a seal "
                               "that was edited after signing cannot be repaired, only "
                               "made again"))
    return out


def _statement_findings(seal: SealFile, path: Path) -> Iterable[Finding]:
    statement = seal.statement
    if statement.get("_type") != STATEMENT_TYPE or statement.get("predicateType") != \
            PREDICATE_TYPE:
        yield Finding(f"{path} is not a model-signing in-toto statement", code="seal.format",
                      expected=f"{STATEMENT_TYPE} / {PREDICATE_TYPE}",
                      found=f"{statement.get('_type')} / {statement.get('predicateType')}")
    elif seal.record.get("format") != SEAL_FORMAT:
        yield Finding(f"{path} is not a pytest-itera seal (no itera record)", code="seal.format",
                      expected=SEAL_FORMAT, found=str(seal.record.get("format")))


def _signature_problem(path: Path, public_key: Path) -> str | None:
    problem = key_problem(public_key, private=False)
    if problem is not None:
        return problem
    from model_signing._signing import sign_ec_key, sign_sigstore_pb

    try:
        sign_ec_key.Verifier(public_key).verify(sign_sigstore_pb.Signature.read(path))
    except Exception as exc:  # model-signing raises ValueError, cryptography InvalidSignature
        return str(exc) or f"{type(exc).__name__}: the signature does not match the statement"
    return None


def _file_findings(
    expected: Mapping[str, str], found: Mapping[str, str], seal_path: Path
) -> Iterable[Finding]:
    for name in sorted(set(expected) | set(found)):
        if name not in found:
            yield Finding("missing: sealed, no longer in the folder", where=name,
                          expected=expected[name], found="no file", code="seal.missing",
                          hint="restore it from the sealed copy")
        elif name not in expected:
            yield Finding("added after the seal", where=name, expected="no file",
                          found=found[name], code="seal.added",
                          hint=f"remove it, or accept and seal the folder again ({seal_path})")
        elif found[name] != expected[name]:
            yield Finding("changed since the seal (sha256 differs)", where=name,
                          expected=expected[name], found=found[name], code="seal.changed",
                          hint="restore the sealed bytes, or accept and seal the folder again")


def checks(seal_path: Path, public_key: Path | None) -> tuple[Check, ...]:
    """The items of ``--itera-verify-seal``: the signature, and the files (one verification,
    memoised per campaign, serves both)."""

    def verification(ctx: Context) -> Verification:
        return ctx.memo("seal", lambda: verify(ctx.root, seal_path, public_key))

    def result(ctx: Context) -> Iterable[Finding]:
        found = verification(ctx).seal
        return () if found is None else seal_result.findings(ctx, found.record, str(seal_path))

    return (
        Check("seal-signature", "the seal is a pytest-itera statement and its signature holds "
              "with the given public key", lambda ctx, _: verification(ctx).signature,
              needs=frozenset(), fast=True),
        Check("seal-files", "every file of the folder is the one sealed: none changed, missing "
              "or added", lambda ctx, _: verification(ctx).files, needs=frozenset(), fast=True),
        Check("seal-result", "the result the seal records is the one its files give: each "
              "sealed decision metric recomputed from the sealed predictions and corpus, the "
              "plan, the journal's head and the conclusion as sealed",
              lambda ctx, _: tuple(result(ctx)), fast=True),
    )
