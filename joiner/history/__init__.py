"""A cluster's history read from Prometheus: series, their sources and the messy cases.

``series.py`` holds the shapes every reader and the translation share (``Series``,
``QueryRange``, ``SeriesSource``, ``HistoryWarnings``); ``prometheus.py`` reads the
HTTP API, ``files.py`` reads saved responses, ``response.py`` reads one response of
either, ``clean.py`` sorts samples and drops duplicates (scrape gaps are the translation's).
"""
