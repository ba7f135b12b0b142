"""Every reading of human text, in one place: one module per reading, one table each.

A reading looks at words a person wrote (a conclusion, an analysis, a receipt, an expense's
label, reload instructions) and says what it understood. It advises and does not decide:
its findings are advisories (``Finding(advisory=True)``), shown under the verdict with their
code and failing only under ``--itera-strict-text``. What decides is the structured evidence
beside the text (a receipt's ``issued_on``, an expense's ``kind``, the conclusion's
``meets_threshold``, the ``itera-metrics`` table), judged exactly in every language.

Readings are plain functions over text and facts: no Context, no file access (the family
checks read the files and call them).
"""

# What an advisory's hint ends with: how much its reading weighs.
ADVISES = " (a reading of words: it fails only under --itera-strict-text)"
