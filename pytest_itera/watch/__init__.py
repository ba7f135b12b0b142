"""Judged while it runs (issue 37): ``python -m pytest_itera watch DIR`` follows an open
campaign's journal and forecasts the engaged lot's end (:mod:`pytest_itera.watch.status`,
:mod:`pytest_itera.watch.follow`); it never writes into the campaign folder."""
