"""The one portability rule for listed paths (pytest_itera/portable.py), and where it applies:
the files-intact check and the recorder.  Names from bagit's and Frictionless's own
refusals, which Linux accepts literally."""

from __future__ import annotations

import unicodedata

import pytest

from pytest_itera.core.portable import RENAME_HINT, collisions, path_problem
from pytest_itera.record import RecordError, check_relpath
from tests.factory import CampaignBuilder, expect
from tests.runner import Itera

UNSAFE = {
    "C:\\win32\\cmd.exe": "starts with a drive letter ('C:'): an absolute path on Windows",
    "..\\..\\..\\win32\\cmd.exe": "contains a backslash, which Windows reads as a folder "
    "separator (it may leave the campaign folder there): write '/' between folders",
    "\\\\?\\C:\\": "starts with a Windows device prefix (\\\\?\\): an absolute path on Windows",
    "data/COM1:": "component 'COM1:' is a Windows reserved device name (COM1), with or "
    "without an extension",
    "data/a:b.csv": "component 'a:b.csv' contains ':', a drive or stream separator on Windows "
    "(and a folder separator in macOS Finder)",
    "%userprofile%/data.csv": "component '%userprofile%' looks like an unexpanded Windows "
    "variable (%userprofile%)",
    "$UNKNOWN_VAR": "component '$UNKNOWN_VAR' looks like an unexpanded shell variable "
    "($UNKNOWN_VAR)",
    "out/${HOME}/x.csv": "component '${HOME}' looks like an unexpanded shell variable (${HOME})",
    "~invalid_user/data.csv": "starts with '~invalid_user', which looks like a home-directory "
    "reference: a shell would expand it",
    "runs/x/preds.csv.": "component 'preds.csv.' ends with a dot, which Windows strips (it "
    "would name another file)",
    "runs/x /preds.csv": "component 'x ' ends with a space, which Windows strips (it would "
    "name another file)",
}
DEVICES = ["CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
           *(f"LPT{i}" for i in range(1, 10))]


@pytest.mark.parametrize("path", sorted(UNSAFE))
def test_unsafe_names_are_refused_with_their_reason(path: str) -> None:
    assert path_problem(path) == UNSAFE[path]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("spelling", ["{}", "{}.txt", "{}.tar.gz", "{lower}", "{lower}.Log"])
def test_every_reserved_device_name_in_any_case_with_or_without_extension(
    device: str, spelling: str,
) -> None:
    name = spelling.format(device, lower=device.lower())
    assert path_problem(f"runs/{name}") == (
        f"component {name!r} is a Windows reserved device name ({device}), with or without "
        "an extension")


@pytest.mark.parametrize("path", ["runs/control/last.pt", "COM10.txt", "console.log",
                                  "nul-results/x.csv", "a/x~y.csv", "runs/épreuve.csv",
                                  "runs/v1.2/data.jsonl", ".hidden/x"])
def test_portable_names_pass(path: str) -> None:
    assert path_problem(path) is None


def test_case_and_normalisation_collisions() -> None:
    nfc = unicodedata.normalize("NFC", "runs/café.csv")
    nfd = unicodedata.normalize("NFD", "runs/café.csv")
    assert nfc != nfd
    found = collisions([nfc, nfd, "runs/CAFÉ.csv", "runs/other.csv", "README.md",
                        "readme.md"])
    assert found == {nfc: tuple(sorted({nfd, "runs/CAFÉ.csv"})),
                     nfd: tuple(sorted({nfc, "runs/CAFÉ.csv"})),
                     "runs/CAFÉ.csv": tuple(sorted({nfc, nfd})),
                     "README.md": ("readme.md",), "readme.md": ("README.md",)}


@pytest.mark.parametrize("path", sorted(p for p in UNSAFE if "\\" not in p))
def test_the_recorder_refuses_to_write_an_unportable_name(path: str) -> None:
    with pytest.raises(RecordError) as info:
        check_relpath(path, field="path")
    # a drive letter is told by the recorder's own absolute-path rule first
    assert str(info.value) in (f"path: {path!r} {UNSAFE[path]}; {RENAME_HINT}",
                               f"path: {path!r} is absolute; record paths relative to the "
                               "campaign")


def test_files_intact_refuses_unportable_and_colliding_listed_names(
    itera: Itera, campaign: CampaignBuilder,
) -> None:
    names = ["C:\\win32\\cmd.exe", "..\\..\\..\\win32\\cmd.exe", "COM1:", "%userprofile%",
             "$UNKNOWN_VAR", "~invalid_user/data.csv", "extra/README.md", "extra/readme.md"]
    for name in names:
        campaign.files[name] = b"data\n"
    campaign.write()
    result = itera(check="files-intact")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == len(names), result.stdout.str()[-3000:]
    for name in names[:6]:
        expect(result, f"manifest.json $.files[*].path: listed file {name!r} "
               f"{path_problem(name)}")
    expect(result, "manifest.json $.files[*].path: listed file 'extra/README.md' differs "
           "from 'extra/readme.md' only by letter case or Unicode normalisation: on Windows "
           "or macOS both name one file")
    expect(result, f"*fix:*{RENAME_HINT[:40]}*")
