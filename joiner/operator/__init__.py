"""Composition root: builds every controller and model from a scenario (``wiring``)."""
