"""``_Attempt.scratch`` (the copy ``_try_claims`` hands to each NodeClaim it tries) equals
``dataclasses.replace(attempt, reasons=[])``: same fields, the summaries shared, a fresh
list of reasons."""

from __future__ import annotations

from dataclasses import fields, replace

from joiner.api import labels
from joiner.api.pods import PodAffinityTerm
from joiner.api.requirements import Requirements
from joiner.scheduling import PodRequest
from joiner.scheduling.placement import _Attempt, _Prefs
from joiner.scheduling.topology import Summary
from joiner.testing.builders import make_pod_template


def test_scratch_equals_replace_with_no_reasons() -> None:
    sel = Requirements.from_labels({"app": "a"})
    template = replace(make_pod_template(), pod_affinity=(PodAffinityTerm(labels.ZONE, sel),))
    pod = PodRequest("p0", template, 0)
    prefs = _Prefs(template, pns_exists=False)
    attempt = _Attempt(pod, prefs, prefs.terms(pod.volume_terms), prefs.active(), ["refused"])
    attempt.summaries[attempt.terms[0]] = Summary(attempt.active)
    scratch = attempt.scratch()
    assert scratch == replace(attempt, reasons=[])
    assert scratch.summaries is attempt.summaries
    assert scratch.reasons == [] and scratch.reasons is not attempt.reasons
    assert attempt.reasons == ["refused"]
    # A new field must be carried by ``scratch`` too.
    assert [f.name for f in fields(_Attempt)] == [
        "pod",
        "prefs",
        "terms",
        "active",
        "reasons",
        "summaries",
    ]
