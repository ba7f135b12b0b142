"""A genuine tiny campaign written through pytest_itera.record: ``python -m example_campaign``."""
