"""The finding codes that no rule test yet states a failing case, or a passing one, for, in a
way the coverage scan reads (tests/checks/test_coverage_of_codes.py says which). Many are
tested through a pytest session (``itera.fails``: the rendered lines) or by a whole message,
which the scan cannot tie to a code: restating such a test with ``expect_finding`` (or
adding the missing case) removes its code here. The lists only shrink:
test_the_known_gaps_only_shrink fails on a code that is covered."""

# No test expects the code on a break.
NO_FAILING_CASE = (
)

# No test expects the code absent on an honest twin.
NO_PASSING_CASE = (
)
