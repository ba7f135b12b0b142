"""The bottom layer: the campaign contract and the arithmetic every other layer shares.

Pure functions and frozen values, no I/O beyond the campaign's own documents and atomic
writes, no pytest and no torch: ``campaign`` (plan.json/manifest.json), ``money`` (lots,
catalogues, cost per deliverable), ``schedule`` (makespan, lots' spans, the window),
``findings`` (what a check reports), ``text`` (what counts as blank), ``portable``
(relative paths), ``atomic`` (durable writes), ``journal`` (the recorder's event log),
``provenance`` (where a report comes from).
"""
