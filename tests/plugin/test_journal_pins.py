"""--itera-journal-pin / itera_journal_pins in a pytest session: a malformed pin is a usage
error; a pin the journal does not hold fails the journal-agrees item, saying the line."""

from __future__ import annotations

import json

import pytest

from pytest_itera.core.journal import JOURNAL_FILE, line_digest
from tests.factory import CampaignBuilder, expect
from tests.runner import BEFORE_WORKERS, Itera

EVENTS = [{"event": "plan", "sha256": "x"},
          {"event": "torn", "line": 2, "bytes": 3, "text": "{\"e"}]


@pytest.mark.one_mode(BEFORE_WORKERS)
@pytest.mark.parametrize("pin", ["12", "x:" + "a" * 64, "3:" + "g" * 64, "0:" + "a" * 64])
def test_a_malformed_journal_pin_is_a_usage_error(itera: Itera, campaign: CampaignBuilder,
                                                  pin: str) -> None:
    campaign.write()
    result = itera("--itera-journal-pin", pin)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--itera-journal-pin: {pin!r} is not LINE:DIGEST*"])


def test_a_pin_the_journal_does_not_hold_fails_its_item(itera: Itera,
                                                         campaign: CampaignBuilder) -> None:
    journal = b"".join(json.dumps(e).encode() + b"\n" for e in EVENTS)
    campaign.files[JOURNAL_FILE] = journal
    campaign.write()
    second = journal.splitlines()[1]
    held = f"2:{line_digest(second)}"
    itera("--itera-journal-pin", held, check="journal-agrees").assert_outcomes(passed=1)
    other = "2:" + "b" * 64
    result = itera("--itera-journal-pin", held, "--itera-journal-pin", other,
                   check="journal-agrees")
    result.assert_outcomes(failed=1)
    expect(result, f"{JOURNAL_FILE}:2: {JOURNAL_FILE} line 2 is not the line the pin "
           f"2:{'b' * 16}… was taken of*")
