"""Budget check: budget-consistent (R4, R7), on the evidence the folder holds.

Registered as the plugin ``itera.budget``. The arithmetic and the tables (estimate
markers, offer matching, deliverables per corpus) live in
:mod:`pytest_itera.core.money`; the modules of this package read the campaign and word the
findings: :mod:`.budget_consistent` (the check, its kinds) applies :mod:`.hourly`,
:mod:`.lots` (catalogue, lot ids, rental), :mod:`.expenses`, :mod:`.sources` and
:mod:`.receipts` (what a source document states), :mod:`.deliverables` (the accepted
count, the cost per deliverable) and :mod:`.corpora`.

What it checks, each finding with what, where (file and JSON path), expected/found
and a fix:

- **Lots against the catalogue in force (R4).** The catalogue is ``Context.catalogue()``:
  ``Options.catalogue`` (the pytest layer fills it from the ``pytest_itera_catalogue``
  hook, else the ini ``itera_catalogue`` file; a notebook passes its own), else the
  shipped IteraGPU catalogue.
  A lot that is a catalogue offer (same offer name; or same GPU and days, see
  :func:`pytest_itera.core.money.catalogue_offer`) carries the offer's price, days and GPUs
  per lot: a prorated price is refused. Any other lot records a ``source`` (a quote
  file listed in the campaign, or a reference), never a computed price.
- **Hourly billing (R4)**, in every string of both budgets (offers, GPU names, expense
  labels, source references) and, in the rest of both documents (notes, explanations,
  decisions, conclusion), in every sentence that also states an amount: a reading of
  words (:mod:`pytest_itera.checks.prose.hourly`), an advisory. A lot priced by the hour
  is refused from its structure: its price against its offer's, its hours.
- **Rental and ratio (R7).** Σ price x quantity of the engaged lots; GPUs per lot never
  multiply; external expenses never in the rental; the cost per deliverable.
- **Expenses (R7).** Every included expense has a source (a receipt file listed in the
  campaign, present and non-empty, and/or a reference that is not a placeholder); an
  amount declared estimated or derived is refused, and a tax, a percentage or a transfer
  cost needs its receipt file. An external expense (plan or manifest) never comes back
  as an included one, recognised by label, source file or reference, or amount and a
  word of its label.
- **Deliverables (R7).** A deliverable is a distinct corpus (by content: plan corpora
  with the same sha256, or the same example IDs and labels, are one; see
  :mod:`.corpora`) delivered by an accepted control or variant run that
  passed its own checks (``Context.run_failures``, predictions-cover-corpus included).
  The corpus a run delivers is its manifest ``runs[].corpus``, else the plan's corpus
  for it (:meth:`Plan.corpus_of`). A data check, pilot or resume check never delivers.
  An ``itera-manifest/1`` run's ``deliverable`` is a label, not evidence: a /1 campaign
  is counted on its one frozen corpus, and a count that only labels explain is refused
  saying that /1 cannot prove it.

What counts as an accepted deliverable is decided *here*, not read from other items'
reports: ``run_failures`` evaluates the same pure check functions the run's own items
run (memoised per process), so the answer is the same under pytest-xdist, with ``-k
budget-consistent`` alone, or in a notebook.
"""

from __future__ import annotations

from pytest_itera.checks.budget import budget_consistent
from pytest_itera.checks.context import Check

CHECKS = (budget_consistent.CHECK,)


def pytest_itera_checks(config: object) -> tuple[Check, ...]:
    return CHECKS
