"""Instance user data as Karpenter-AWS builds it (``pkg/providers/amifamily/bootstrap``).

Every family gets the NodeClass's whole ``kubelet`` block, the node labels and the taints the
node registers with (``karpenter.sh/unregistered:NoExecute``), and merges the NodeClass's own
``userData`` the way upstream does:

* **AL2023** (``nodeadm.go`` ``Nodeadm.Script``): a MIME multi-part archive. The user's user
  data keeps its parts (a MIME archive part by part, keeping each part's ``Content-Type``;
  anything else becomes one part, ``application/node.eks.aws`` when it reads as a YAML
  mapping, else a shell script); Karpenter's ``NodeConfig`` is the last part, so nodeadm,
  which merges NodeConfigs in order with the later one winning, applies Karpenter's cluster
  and kubelet values over the user's. The kubelet block is the NodeConfig's inline
  ``kubelet.config`` (KubeletConfiguration field names), taints are its
  ``registerWithTaints``, and labels the ``--node-labels`` flag.
* **AL2** (``eksbootstrap.go`` ``EKS.Script``): a MIME archive with the user's parts first
  (a shell script that is not MIME becomes one ``text/x-shellscript`` part; MIME parts are
  copied with all their headers) and ``/etc/eks/bootstrap.sh`` last, the kubelet block as
  ``--kubelet-extra-args`` (``bootstrap.go`` ``Options.kubeletExtraArgs``), the first
  ``clusterDNS`` as ``--dns-cluster-ip`` (and ``--ip-family ipv6`` when it is IPv6),
  ``--use-max-pods false`` when ``maxPods`` is set.
* **Bottlerocket** (``bottlerocket.go`` ``Bottlerocket.Script``): the user's TOML is read;
  only its ``[settings]`` table is kept, and of ``[settings.kubernetes]`` only the keys
  Bottlerocket models (``bottlerocketsettings.go``; others are dropped with a warning, as
  upstream logs and drops them). Karpenter then sets the cluster name, API server and CA,
  merges the node labels (Karpenter's win), replaces the node taints, and sets each kubelet
  field the NodeClass gives (``max-pods``, ``cluster-dns-ip``, reserved, eviction, image GC
  thresholds, ``cpu-cfs-quota-enforced``); ``settings.autoscaling.should-wait`` is forced
  to false when present. ``podsPerCore`` does not reach Bottlerocket (upstream neither).
* ``instanceStorePolicy: RAID0``: nodeadm's ``instance.localStorage.strategy: RAID0``,
  ``bootstrap.sh --local-disks raid0``, Bottlerocket's ``000-mount-instance-storage``
  bootstrap command (``apiclient ephemeral-storage init`` and ``bind``).
* **Windows**: the user's PowerShell before ``Start-EKSBootstrap.ps1`` with the kubelet
  arguments; **Custom**: the user data unchanged.

Malformed user data (MIME, TOML) raises ``InputError`` naming the EC2NodeClass and
``spec.userData``; the loader rejects it earlier (``api/manifests/userdata.py``).
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Sequence
from typing import Any

import tomli_w
import yaml

from joiner.api.errors import InputError
from joiner.api.manifests import userdata as ud
from joiner.api.objects import KubeletConfig, NodeClass, Taint
from joiner.cloudprovider.instancetype import RAID0

log = logging.getLogger(__name__)

#: The taint every node registers with until Karpenter (or Joiner) initializes it.
UNREGISTERED_TAINT = Taint("karpenter.sh/unregistered", "NoExecute")
NODE_CONFIG_HEADER = "# Karpenter Generated NodeConfig\n"
#: What Bottlerocket binds to the RAID0 instance store (Karpenter's ``--dirs`` form).
BOTTLEROCKET_RAID0_DIRS = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
#: ``[settings.kubernetes]`` keys Bottlerocket models (Karpenter ``BottlerocketKubernetes``);
#: others in the user's TOML are dropped.
BOTTLEROCKET_KUBERNETES_KEYS = frozenset(
    {
        "api-server",
        "cloud-provider",
        "cluster-certificate",
        "cluster-name",
        "cluster-dns-ip",
        "credential-providers",
        "node-labels",
        "node-taints",
        "max-pods",
        "static-pods",
        "eviction-hard",
        "eviction-soft",
        "eviction-soft-grace-period",
        "eviction-max-pod-grace-period",
        "kube-reserved",
        "system-reserved",
        "allowed-unsafe-sysctls",
        "server-tls-bootstrap",
        "registry-qps",
        "registry-burst",
        "event-qps",
        "event-burst",
        "kube-api-qps",
        "kube-api-burst",
        "container-log-max-size",
        "container-log-max-files",
        "cpu-manager-policy",
        "cpu-manager-policy-options",
        "cpu-manager-reconcile-period",
        "topology-manager-scope",
        "topology-manager-policy",
        "image-gc-high-threshold-percent",
        "image-gc-low-threshold-percent",
        "ids-per-pod",
        "cpu-cfs-quota-enforced",
        "shutdown-grace-period",
        "shutdown-grace-period-for-critical-pods",
        "cluster-domain",
        "seccomp-default",
        "pod-pids-limit",
        "device-ownership-from-security-context",
        "single-process-oom-kill",
        "container-log-max-workers",
        "container-log-monitor-interval",
        "hostname-override-source",
        "log-level",
        "",
    }
)


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()``: ``60`` -> ``1m0s``, ``90`` -> ``1m30s``,
    ``3600`` -> ``1h0m0s``, ``0.5`` -> ``500ms``, ``0`` -> ``0s``."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = f"{secs:g}s"
    if hours or minutes:
        out = f"{int(minutes)}m" + out
    if hours:
        out = f"{int(hours)}h" + out
    return out


def _quoted(text: str) -> str:
    # Go's %q for the ASCII text of labels and taints.
    return json.dumps(text)


def taint_string(t: Taint) -> str:
    """``key=value:effect`` (``key:effect`` without a value), as ``corev1.Taint.ToString``."""
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def kubelet_extra_args(
    k: KubeletConfig, labels: Sequence[tuple[str, str]], taints: Sequence[Taint]
) -> list[str]:
    """Karpenter's kubelet flags (``bootstrap.go`` ``Options.kubeletExtraArgs``), in its order;
    map-valued flags have their keys sorted."""
    args = []
    if labels:
        args.append("--node-labels=" + _quoted(",".join(f"{a}={b}" for a, b in sorted(labels))))
    args.append("--register-with-taints=" + _quoted(",".join(taint_string(t) for t in taints)))
    if k.max_pods is not None:
        args.append(f"--max-pods={k.max_pods}")
    if k.pods_per_core is not None:
        args.append(f"--pods-per-core={k.pods_per_core}")
    grace = tuple((s, go_duration(v)) for s, v in k.eviction_soft_grace_period_s)
    for flag, pairs, sep in (
        ("--system-reserved", k.system_reserved_text, "="),
        ("--kube-reserved", k.kube_reserved_text, "="),
        ("--eviction-hard", k.eviction_hard_text, "<"),
        ("--eviction-soft", k.eviction_soft, "<"),
        ("--eviction-soft-grace-period", grace, "="),
    ):
        if pairs:
            args.append(f"{flag}=" + _quoted(",".join(f"{a}{sep}{b}" for a, b in pairs)))
    if k.eviction_max_pod_grace_period_s is not None:
        args.append(f"--eviction-max-pod-grace-period={k.eviction_max_pod_grace_period_s}")
    if k.image_gc_high_threshold_percent is not None:
        args.append(f"--image-gc-high-threshold={k.image_gc_high_threshold_percent}")
    if k.image_gc_low_threshold_percent is not None:
        args.append(f"--image-gc-low-threshold={k.image_gc_low_threshold_percent}")
    if k.cpu_cfs_quota is not None:
        args.append(f"--cpu-cfs-quota={str(k.cpu_cfs_quota).lower()}")
    return args


def kubelet_configuration(k: KubeletConfig) -> dict[str, Any]:
    """The kubelet block as KubeletConfiguration fields (JSON names), only those set: what
    nodeadm's inline ``kubelet.config`` receives (``nodeadm.go``
    ``generateInlineKubeletConfiguration``)."""
    out: dict[str, Any] = {}
    if k.cluster_dns:
        out["clusterDNS"] = list(k.cluster_dns)
    if k.max_pods is not None:
        out["maxPods"] = k.max_pods
    if k.pods_per_core is not None:
        out["podsPerCore"] = k.pods_per_core
    for name, pairs in (
        ("systemReserved", k.system_reserved_text),
        ("kubeReserved", k.kube_reserved_text),
        ("evictionHard", k.eviction_hard_text),
        ("evictionSoft", k.eviction_soft),
    ):
        if pairs:
            out[name] = dict(pairs)
    if k.eviction_soft_grace_period_s:
        out["evictionSoftGracePeriod"] = {
            s: go_duration(v) for s, v in k.eviction_soft_grace_period_s
        }
    for name, value in (
        ("evictionMaxPodGracePeriod", k.eviction_max_pod_grace_period_s),
        ("imageGCHighThresholdPercent", k.image_gc_high_threshold_percent),
        ("imageGCLowThresholdPercent", k.image_gc_low_threshold_percent),
        ("cpuCFSQuota", k.cpu_cfs_quota),
    ):
        if value is not None:
            out[name] = value
    return out


def _invalid(nc: NodeClass, exc: InputError) -> InputError:
    return InputError(
        exc.detail, file=nc.source.file or None, obj=nc.source.ref, field="spec.userData"
    )


def _nodeadm_user_parts(nc: NodeClass) -> list[ud.MIMEPart]:
    text = nc.user_data or ""
    if not text:
        return []
    if ud.is_mime(text):
        try:
            parts = ud.mime_parts(text)
        except InputError as exc:
            raise _invalid(nc, exc) from exc
        return [ud.MIMEPart((("Content-Type", p.content_type),), p.body) for p in parts]
    try:
        content_type = ud.NODE_CONFIG if ud.reads_as_node_config(text) else ud.SHELL_SCRIPT
    except InputError as exc:
        raise _invalid(nc, exc) from exc
    return [ud.MIMEPart((("Content-Type", content_type),), text)]


def nodeadm(
    nc: NodeClass, cluster: Any, labels: Sequence[tuple[str, str]], taints: Sequence[Taint]
) -> str:
    """AL2023 user data (module docstring): the user's parts, then Karpenter's NodeConfig.

    ``cluster`` is a ``ClusterInfo`` (name, endpoint, base64 CA, service CIDR).

    Raises:
        InputError: the NodeClass's user data is malformed MIME or YAML nested too deeply.
    """
    config = kubelet_configuration(nc.kubelet)
    config["registerWithTaints"] = [
        {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
        for t in taints
    ]
    spec_cluster = {
        "apiServerEndpoint": cluster.endpoint,
        "certificateAuthority": cluster.ca_bundle,
        "name": cluster.name,
    }
    if cluster.service_cidr:
        spec_cluster["cidr"] = cluster.service_cidr
    spec: dict[str, Any] = {"cluster": spec_cluster}
    if nc.instance_store_policy == RAID0:
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    kubelet: dict[str, Any] = {"config": config}
    if labels:
        kubelet["flags"] = [
            "--node-labels=" + _quoted(",".join(f"{a}={b}" for a, b in sorted(labels)))
        ]
    node_config = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {**spec, "kubelet": kubelet},
    }
    body = NODE_CONFIG_HEADER + yaml.safe_dump(node_config, sort_keys=True)
    ours = ud.MIMEPart((("Content-Type", ud.NODE_CONFIG),), body)
    return ud.write_mime([*_nodeadm_user_parts(nc), ours])


def eks_bootstrap(
    nc: NodeClass, cluster: Any, labels: Sequence[tuple[str, str]], taints: Sequence[Taint]
) -> str:
    """AL2 user data (module docstring): the user's parts, then ``bootstrap.sh``.

    Raises:
        InputError: the NodeClass's user data is malformed MIME or YAML nested too deeply.
    """
    k = nc.kubelet
    lines = [
        "#!/bin/bash -xe",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
    ]
    command = f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}'"
    if cluster.ca_bundle:
        command += f" --b64-cluster-ca '{cluster.ca_bundle}'"
    options = []
    if k.cluster_dns and ipaddress.ip_address(k.cluster_dns[0]).version == 6:
        options.append("--ip-family ipv6")
    if k.cluster_dns:
        options.append(f"--dns-cluster-ip '{k.cluster_dns[0]}'")
    if k.max_pods is not None:
        options.append("--use-max-pods false")
    options.append(f"--kubelet-extra-args '{' '.join(kubelet_extra_args(k, labels, taints))}'")
    if nc.instance_store_policy == RAID0:
        options.append("--local-disks raid0")
    script = "\n".join([*lines, " \\\n".join([command, *options])])
    parts: list[ud.MIMEPart] = []
    text = nc.user_data or ""
    if text and ud.is_mime(text):
        try:
            parts = ud.mime_parts(text)
        except InputError as exc:
            raise _invalid(nc, exc) from exc
    elif text:
        parts = [ud.MIMEPart((("Content-Type", ud.SHELL_SCRIPT),), text)]
    return ud.write_mime([*parts, ud.MIMEPart((("Content-Type", ud.SHELL_SCRIPT),), script)])


#: The bootstrap command that RAIDs and binds the instance store (``instanceStorePolicy``).
BOTTLEROCKET_RAID0_COMMAND: dict[str, Any] = {
    "commands": [
        ["apiclient", "ephemeral-storage", "init"],
        ["apiclient", "ephemeral-storage", "bind", "--dirs", *BOTTLEROCKET_RAID0_DIRS],
    ],
    "mode": "always",
    "essential": True,
}


def bottlerocket_kubelet(k: KubeletConfig) -> dict[str, Any]:
    """The ``[settings.kubernetes]`` keys the kubelet block sets, only those it gives
    (karpenter-provider-aws ``pkg/providers/amifamily/bootstrap/bottlerocket.go``
    ``Bottlerocket.Script``): ``max-pods``, ``cluster-dns-ip`` (the first), the reserved and
    eviction maps, the soft grace periods as Go durations, the image GC thresholds (as
    strings) and ``cpu-cfs-quota-enforced``."""
    out: dict[str, Any] = {}
    if k.max_pods is not None:
        out["max-pods"] = k.max_pods
    if k.cluster_dns:
        out["cluster-dns-ip"] = k.cluster_dns[0]
    for key, pairs in (
        ("system-reserved", k.system_reserved_text),
        ("kube-reserved", k.kube_reserved_text),
        ("eviction-hard", k.eviction_hard_text),
        ("eviction-soft", k.eviction_soft),
    ):
        if pairs:
            out[key] = dict(pairs)
    if k.eviction_soft_grace_period_s:
        out["eviction-soft-grace-period"] = {
            s: go_duration(v) for s, v in k.eviction_soft_grace_period_s
        }
    for key, value in (
        ("eviction-max-pod-grace-period", k.eviction_max_pod_grace_period_s),
        ("image-gc-high-threshold-percent", _text(k.image_gc_high_threshold_percent)),
        ("image-gc-low-threshold-percent", _text(k.image_gc_low_threshold_percent)),
        ("cpu-cfs-quota-enforced", k.cpu_cfs_quota),
    ):
        if value is not None:
            out[key] = value
    return out


def _text(value: object | None) -> str | None:
    return None if value is None else str(value)


def bottlerocket(
    nc: NodeClass, cluster: Any, labels: Sequence[tuple[str, str]], taints: Sequence[Taint]
) -> str:
    """Bottlerocket TOML (module docstring): the user's settings with Karpenter's merged in.

    Raises:
        InputError: the NodeClass's user data is not TOML.
    """
    try:
        doc = ud.parse_toml(nc.user_data) if nc.user_data else {}
    except InputError as exc:
        raise _invalid(nc, exc) from exc
    settings = dict(doc.get("settings") or {})
    user_k8s = dict(settings.get("kubernetes") or {})
    dropped = sorted(set(user_k8s) - BOTTLEROCKET_KUBERNETES_KEYS)
    if dropped:
        log.warning(
            "EC2NodeClass %s: userData settings.kubernetes keys Bottlerocket does not model are "
            "dropped, as Karpenter drops them: %s",
            nc.name,
            ", ".join(dropped),
        )
    k8s = {key: value for key, value in user_k8s.items() if key not in dropped}
    k8s["cluster-name"] = cluster.name
    k8s["api-server"] = cluster.endpoint
    if cluster.ca_bundle:
        k8s["cluster-certificate"] = cluster.ca_bundle
    k8s["node-labels"] = {**dict(k8s.get("node-labels") or {}), **dict(labels)}
    k8s.update(bottlerocket_kubelet(nc.kubelet))
    node_taints: dict[str, list[str]] = {}
    for t in taints:
        node_taints.setdefault(t.key, []).append(f"{t.value or ''}:{t.effect}")
    k8s["node-taints"] = node_taints
    if nc.instance_store_policy == RAID0:
        commands = dict(settings.get("bootstrap-commands") or {})
        commands["000-mount-instance-storage"] = BOTTLEROCKET_RAID0_COMMAND
        settings["bootstrap-commands"] = commands
    autoscaling = settings.get("autoscaling")
    if isinstance(autoscaling, dict) and "should-wait" in autoscaling:
        settings["autoscaling"] = {**autoscaling, "should-wait": False}
    settings["kubernetes"] = k8s
    return tomli_w.dumps({"settings": settings})


def windows(
    nc: NodeClass, cluster: Any, labels: Sequence[tuple[str, str]], taints: Sequence[Taint]
) -> str:
    """Windows PowerShell user data: the user's script, then ``Start-EKSBootstrap.ps1``."""
    extra = " ".join(kubelet_extra_args(nc.kubelet, labels, taints)).replace("'", "''")
    dns = f" -DNSClusterIP '{nc.kubelet.cluster_dns[0]}'" if nc.kubelet.cluster_dns else ""
    return (
        "<powershell>\n"
        f"{(nc.user_data or '').strip()}\n"
        "[string]$EKSBootstrapScriptFile = "
        '"$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"\n'
        f"& $EKSBootstrapScriptFile -EKSClusterName '{cluster.name}' "
        f"-APIServerEndpoint '{cluster.endpoint}' -Base64ClusterCA '{cluster.ca_bundle}' "
        f"-KubeletExtraArgs '{extra}'{dns} 3>&1 4>&1 5>&1 6>&1\n"
        "</powershell>\n"
    )


def user_data(
    nc: NodeClass,
    cluster: Any,
    labels: Sequence[tuple[str, str]],
    taints: Sequence[Taint] = (UNREGISTERED_TAINT,),
) -> str:
    """The instance user data for ``nc``'s AMI family (module docstring), as text.

    Raises:
        InputError: the NodeClass's user data is malformed for its family.
    """
    family = nc.ami_family
    if family == "Custom":
        return nc.user_data or ""
    if family == "Bottlerocket":
        return bottlerocket(nc, cluster, labels, taints)
    if family.startswith("Windows"):
        return windows(nc, cluster, labels, taints)
    if family == "AL2":
        return eks_bootstrap(nc, cluster, labels, taints)
    return nodeadm(nc, cluster, labels, taints)
