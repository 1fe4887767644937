"""Structured log keys as Karpenter writes them, for ``logging``'s ``extra=``.

Karpenter's controllers attach the objects a log line is about as keys named by kind
(``NodeClaim``, ``NodePool``, ``Node``, ``Pod``), each value ``klog.KObj``/``klog.KRef``'s
object reference: ``{"name": ...}`` with ``"namespace"`` only for a namespaced object
(sigs.k8s.io/karpenter pkg/controllers/provisioning/provisioner.go ``Provisioner.Create``,
pkg/controllers/nodeclaim/lifecycle/launch.go ``Launch.launchNodeClaim``; k8s.io/klog/v2
k8s_references.go ``ObjectRef.MarshalLog``). ``log_keys`` builds that mapping; the JSON log
formatter of ``joiner run`` (``joiner.cli.logformat``) writes it as top-level keys, the
text formatter ignores it (the message already names the objects).
"""

from __future__ import annotations

#: The kinds a log line may name, as Karpenter spells the keys.
KINDS = ("NodeClaim", "NodePool", "Node", "Pod")


def ref(name: str, namespace: str = "") -> dict[str, str]:
    """``klog.KRef``'s JSON shape: ``{"name": name}``, plus ``"namespace"`` when not empty."""
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def log_keys(**named: str | None) -> dict[str, dict[str, str]]:
    """The ``extra=`` mapping of a log line about the named objects.

    Each keyword is a kind of ``KINDS`` and its value the object's name, ``namespace/name``
    for a Pod; a ``None`` or empty name is left out (the object is not known).

    Raises:
        ValueError: a keyword that is not one of ``KINDS`` (a misspelt key would otherwise
            be written as a new, unsearchable key).
    """
    out: dict[str, dict[str, str]] = {}
    for kind, name in named.items():
        if kind not in KINDS:
            raise ValueError(f"log key {kind!r}: want one of {', '.join(KINDS)}")
        if not name:
            continue
        if kind == "Pod" and "/" in name:
            namespace, _, pod = name.partition("/")
            out[kind] = ref(pod, namespace)
        else:
            out[kind] = ref(name)
    return out
