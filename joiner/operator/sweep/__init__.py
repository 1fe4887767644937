"""Sweeps: many simulations of one scenario (seeds x variants x interruption-rate
multipliers x policies), on local processes or a Ray cluster, with a recommendation.

``spec`` (the Sweep file and its grid), ``patch`` (JSON merge patches), ``cell`` (what one
worker runs), ``pool`` (the local backend), ``ray_backend`` (the Ray backend, the only module
that imports Ray), ``results`` (the JSON Lines file, ``--resume``), ``runner`` (cells to rows),
``report`` (statistics, Pareto front, objective, HTML).
"""
