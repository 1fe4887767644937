"""Fault injection with AWS FIS experiment templates: parse and validate (``template``), then
run them against the simulation (``experiment``), driving the same interruption path real
Spot reclaims take."""
