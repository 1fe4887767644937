"""Converters from validated manifest models to domain objects for the core kinds: pods and
their controllers (Deployment, ReplicaSet, StatefulSet, Job, CronJob, DaemonSet, Pod), pod
templates (requests, affinity, spread, host ports, local storage, termination), label
selectors, PodDisruptionBudgets, Nodes and volumes (PVC, PV, StorageClass).

NodePools, node classes and NodeClaims are in ``convert``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC

from joiner.api import corevalidation, cron, labels, quantity, resourcenames
from joiner.api import objects as o
from joiner.api.errors import InputError
from joiner.api.manifests import models as m
from joiner.api.manifests import priority, termination
from joiner.api.manifests.convert import first_by_type, requirements, resources, taints
from joiner.api.requirements import DOES_NOT_EXIST, Requirement, Requirements


def _container_requests(c: m.Container, field: str) -> quantity.Resources:
    # Kubernetes defaults a missing request to the limit.
    limits = quantity.parse_resources(
        c.resources.limits, field=f"{field}.resources.limits", names=resourcenames.CONTAINER
    )
    requests = quantity.parse_resources(
        c.resources.requests, field=f"{field}.resources.requests", names=resourcenames.CONTAINER
    )
    return {**limits, **requests}


#: Cluster Autoscaler's pod annotations (``utils/drain``).
CA_SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
CA_SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"


def _local_volumes(spec: m.PodSpec, annotations: Mapping[str, str]) -> tuple[str, ...]:
    """CA ``drain.HasBlockingLocalStorage``: hostPath and emptyDir volumes not in memory,
    minus those ``safe-to-evict-local-volumes`` names."""
    safe = {v.strip() for v in annotations.get(CA_SAFE_TO_EVICT_LOCAL_VOLUMES, "").split(",")}
    return tuple(
        v.name
        for v in spec.volumes
        if (v.hostPath is not None or (v.emptyDir is not None and v.emptyDir.medium != "Memory"))
        and v.name not in safe
    )


def _deletion_cost(annotations: Mapping[str, str], field: str) -> int | None:
    """The ``controller.kubernetes.io/pod-deletion-cost`` annotation, None when absent.

    Raises:
        InputError: not a 32-bit integer (``corevalidation.pod_deletion_cost``).
    """
    value = annotations.get(labels.POD_DELETION_COST)
    if value is None:
        return None
    return corevalidation.pod_deletion_cost(value, f"{field}.{labels.POD_DELETION_COST}")


def _pinned_nodes(required: m.NodeSelector | None) -> tuple[str, ...]:
    """The node names a required node affinity pins a pod to: each term only
    ``matchFields`` of ``metadata.name In`` (DaemonSet pods' shape), the names of all of
    them; ``()`` when a term says anything else (the nodes it allows are not named)."""
    names: list[str] = []
    for term in required.nodeSelectorTerms if required is not None else ():
        if term.matchExpressions or not term.matchFields:
            return ()
        for field in term.matchFields:
            if field.key != "metadata.name" or field.operator != "In":
                return ()
            names += field.values
    return tuple(dict.fromkeys(names))


def pod_template(
    spec: m.PodSpec,
    pod_labels: Mapping[str, str],
    field: str,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
) -> o.PodTemplate:
    """Scheduling view of a pod spec: effective requests, selectors, affinity, tolerations.

    Effective requests follow kube-scheduler: the larger of the containers' sum and each init
    container (restartable init containers, i.e. sidecars, add to both), plus pod overhead,
    plus ``pods: 1``.
    """
    total: quantity.Resources = {}
    sidecars: quantity.Resources = {}
    init_peak: quantity.Resources = {}
    for i, c in enumerate(spec.initContainers):
        req = _container_requests(c, f"{field}.initContainers[{i}]")
        if c.restartPolicy == "Always":
            sidecars = quantity.add(sidecars, req)
        else:
            init_peak = quantity.maximum(init_peak, quantity.add(req, sidecars))
    for i, c in enumerate(spec.containers):
        total = quantity.add(total, _container_requests(c, f"{field}.containers[{i}]"))
    total = quantity.maximum(quantity.add(total, sidecars), init_peak)
    overhead = quantity.parse_resources(
        spec.overhead, field=f"{field}.overhead", names=resourcenames.RESOURCE
    )
    total = quantity.add(total, overhead)
    quantity.check_plausible(total, field=field)
    total[quantity.PODS] = 1
    selector = Requirements(Requirement.in_(k, v) for k, v in sorted(spec.nodeSelector.items()))
    terms: list[Requirements] = []
    first_term: Requirements | None = None
    pinned = False
    na = spec.affinity.nodeAffinity if spec.affinity else None
    required = na.requiredDuringSchedulingIgnoredDuringExecution if na else None
    if required is not None:
        base = f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(required.nodeSelectorTerms):
            if i == 0 and not term.matchFields and term.matchExpressions:
                first_term = Requirements(
                    requirements(
                        term.matchExpressions, f"{base}.nodeSelectorTerms[0].matchExpressions"
                    )
                )
            if term.matchFields:
                # DaemonSet pods are pinned to their node this way; Karpenter does not
                # provision for such pods, and kube-scheduler binds them by node name.
                pinned = True
                continue
            if not term.matchExpressions:
                raise InputError(
                    "an empty node selector term matches no node",
                    field=f"{base}.nodeSelectorTerms[{i}]",
                )
            terms.append(
                Requirements(
                    requirements(
                        term.matchExpressions, f"{base}.nodeSelectorTerms[{i}].matchExpressions"
                    )
                )
            )
    preferred: list[tuple[int, Requirements]] = []
    if na is not None:
        base = f"{field}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
        for i, pterm in enumerate(na.preferredDuringSchedulingIgnoredDuringExecution):
            preferred.append(
                (
                    pterm.weight,
                    Requirements(
                        requirements(pterm.preference.matchExpressions, f"{base}[{i}].preference")
                    ),
                )
            )
    preferred_sorted = tuple(sorted(preferred, key=lambda p: -p[0]))
    aff = spec.affinity
    pa = aff.podAffinity if aff else None
    paa = aff.podAntiAffinity if aff else None
    base_aff = f"{field}.affinity"
    # With hostNetwork, every containerPort is bound on the node (the API server defaults
    # hostPort to containerPort; kube-scheduler's NodePorts filter sees them).
    host_network = spec.hostNetwork is True
    ports = tuple(
        o.HostPort(
            port=p.hostPort or p.containerPort, protocol=p.protocol, ip=p.hostIP or "0.0.0.0"
        )
        for c in (*spec.initContainers, *spec.containers)
        for p in c.ports
        if p.hostPort or host_network
    )
    return o.PodTemplate(
        requests=total,
        node_selector=selector,
        required_affinity=tuple(terms),
        tolerations=tuple(
            o.Toleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect)
            for t in spec.tolerations
        ),
        labels=tuple(sorted(pod_labels.items())),
        namespace=namespace,
        preferred_affinity=preferred_sorted,
        spread=_spread(spec, pod_labels, field),
        pod_affinity=_affinity_terms(pa, pod_labels, f"{base_aff}.podAffinity", anti=False),
        pod_anti_affinity=_affinity_terms(
            paa, pod_labels, f"{base_aff}.podAntiAffinity", anti=True
        ),
        preferred_pod_affinity=_weighted_terms(pa, pod_labels, f"{base_aff}.podAffinity"),
        preferred_pod_anti_affinity=_weighted_terms(paa, pod_labels, f"{base_aff}.podAntiAffinity"),
        host_ports=ports,
        critical=spec.priorityClassName in ("system-cluster-critical", "system-node-critical"),
        pinned=pinned,
        pinned_nodes=_pinned_nodes(required) if pinned else (),
        karpenter_ignores=karpenter_ignores(
            selector, terms, first_term, preferred_sorted[0][1] if preferred_sorted else None
        ),
        volume_claims=tuple(
            v.persistentVolumeClaim.claimName for v in spec.volumes if v.persistentVolumeClaim
        ),
        # A pod with spec.overhead already went through RuntimeClass admission (a dump).
        runtime_class=(spec.runtimeClassName or None) if not spec.overhead else None,
        local_volumes=_local_volumes(spec, annotations or {}),
        ca_safe_to_evict={"true": True, "false": False}.get(
            (annotations or {}).get(CA_SAFE_TO_EVICT, "")
        ),
        shutdown_s=termination.shutdown_seconds(spec, field),
        termination_grace_period_s=termination.grace_seconds(spec),
        **priority.pod_fields(spec, field),
        deletion_cost=_deletion_cost(annotations or {}, _annotations_field(field)),
        do_not_disrupt=(annotations or {}).get(labels.DO_NOT_DISRUPT),
    )


def _spread(
    spec: m.PodSpec, pod_labels: Mapping[str, str], field: str
) -> tuple[o.TopologySpreadConstraint, ...]:
    """The pod's topology spread constraints; ``matchLabelKeys`` add ``key In [the pod's
    value]`` to the selector (kube-scheduler ``podtopologyspread/common.go``
    ``filterTopologySpreadConstraints``
    and the API server's merge). One without ``labelSelector`` is left out: it counts no pod.

    Raises:
        InputError: ``matchLabelKeys`` without ``labelSelector``, or a bad selector.
    """
    out = []
    for i, tsc in enumerate(spec.topologySpreadConstraints):
        where = f"{field}.topologySpreadConstraints[{i}]"
        if tsc.labelSelector is None:
            # Counts no pod: every domain's skew is 0 (kube-scheduler; Karpenter
            # topologygroup.go NewTopologyGroup takes a nil selector as labels.Nothing()).
            _no_keys_without_selector(tsc.matchLabelKeys, (), where)
            continue
        sel = label_selector(tsc.labelSelector, f"{where}.labelSelector")
        sel = sel.add(
            *[Requirement.in_(k, pod_labels[k]) for k in tsc.matchLabelKeys if k in pod_labels]
        )
        out.append(
            o.TopologySpreadConstraint(
                key=labels.normalize_key(tsc.topologyKey),
                max_skew=tsc.maxSkew,
                selector=sel,
                when_unsatisfiable=tsc.whenUnsatisfiable,
                min_domains=tsc.minDomains,
                node_affinity_policy=tsc.nodeAffinityPolicy,
                node_taints_policy=tsc.nodeTaintsPolicy,
            )
        )
    return tuple(out)


def _annotations_field(spec_field: str) -> str:
    """Where the annotations of the pod spec at ``spec_field`` are: ``spec`` ->
    ``metadata.annotations``, ``spec.template.spec`` -> ``spec.template.metadata.annotations``."""
    head = spec_field.removesuffix("spec").removesuffix(".")
    return f"{head}.metadata.annotations" if head else "metadata.annotations"


def _no_keys_without_selector(match: Sequence[str], mismatch: Sequence[str], field: str) -> None:
    """The API server refuses ``matchLabelKeys``/``mismatchLabelKeys`` on a term or
    constraint without ``labelSelector`` (Kubernetes ``pkg/apis/core/validation``
    ``validateMatchLabelKeysAndMismatchLabelKeys``, ``validateMatchLabelKeysInTopologySpread``).

    Raises:
        InputError: naming the field set without a selector.
    """
    for name, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        if keys:
            raise InputError(
                "must not be set when labelSelector is not set (the API server refuses it)",
                field=f"{field}.{name}",
            )


def _affinity_term(
    t: m.PodAffinityTermModel, pod_labels: Mapping[str, str], field: str
) -> o.PodAffinityTerm | None:
    """One pod (anti-)affinity term; None when it has no ``labelSelector`` (see
    ``objects.SELECTS_NO_POD``: the caller keeps such a term only where it still has an effect).

    ``matchLabelKeys`` add ``key In [the pod's value]`` and ``mismatchLabelKeys``
    ``key NotIn [the pod's value]`` to the selector, as the API server merges them at pod
    creation (Kubernetes ``pkg/registry/core/pod/strategy.go``
    ``applyMatchLabelKeysAndMismatchLabelKeys``)."""
    if t.labelSelector is None:
        _no_keys_without_selector(t.matchLabelKeys, t.mismatchLabelKeys, field)
        return None
    both = sorted(set(t.matchLabelKeys) & set(t.mismatchLabelKeys))
    if both:  # Kubernetes validateMatchLabelKeysAndMismatchLabelKeys refuses it
        raise InputError(
            f"{both[0]!r} exists in both matchLabelKeys and mismatchLabelKeys",
            field=f"{field}.matchLabelKeys",
        )
    sel = label_selector(t.labelSelector, f"{field}.labelSelector")
    sel = sel.add(*[Requirement.in_(k, pod_labels[k]) for k in t.matchLabelKeys if k in pod_labels])
    sel = sel.add(
        *[
            Requirement.new(k, "NotIn", [pod_labels[k]])
            for k in t.mismatchLabelKeys
            if k in pod_labels
        ]
    )
    if t.namespaces:
        namespaces: tuple[str, ...] | None = tuple(t.namespaces)
    elif t.namespaceSelector is not None:
        # Namespace labels are not modelled: a namespaceSelector counts every namespace.
        namespaces = ()
    else:
        namespaces = None
    return o.PodAffinityTerm(
        key=labels.normalize_key(t.topologyKey), selector=sel, namespaces=namespaces
    )


def _affinity_terms(
    a: m.PodAffinity | None, pod_labels: Mapping[str, str], field: str, anti: bool
) -> tuple[o.PodAffinityTerm, ...]:
    """The required terms; one without ``labelSelector`` selects no pod, so a required
    affinity term keeps the pod pending (``objects.SELECTS_NO_POD``) and an anti-affinity term has
    no effect."""
    if a is None:
        return ()
    base = f"{field}.requiredDuringSchedulingIgnoredDuringExecution"
    out = []
    for i, t in enumerate(a.requiredDuringSchedulingIgnoredDuringExecution):
        term = _affinity_term(t, pod_labels, f"{base}[{i}]")
        if term is None and not anti:
            term = o.PodAffinityTerm(
                key=labels.normalize_key(t.topologyKey), selector=o.SELECTS_NO_POD
            )
        if term is not None:
            out.append(term)
    return tuple(out)


def _weighted_terms(
    a: m.PodAffinity | None, pod_labels: Mapping[str, str], field: str
) -> tuple[tuple[int, o.PodAffinityTerm], ...]:
    if a is None:
        return ()
    base = f"{field}.preferredDuringSchedulingIgnoredDuringExecution"
    out = []
    for i, w in enumerate(a.preferredDuringSchedulingIgnoredDuringExecution):
        term = _affinity_term(w.podAffinityTerm, pod_labels, f"{base}[{i}].podAffinityTerm")
        if term is not None:  # a preference for or against no pod has no effect
            out.append((w.weight, term))
    return tuple(sorted(out, key=lambda p: -p[0]))


def label_selector(sel: m.LabelSelector | None, field: str) -> Requirements:
    """A ``metav1.LabelSelector`` as requirements (matchLabels are ``In [value]``)."""
    if sel is None:
        return Requirements()
    reqs = [Requirement.in_(k, v) for k, v in sorted(sel.matchLabels.items())]
    for i, e in enumerate(sel.matchExpressions):
        if e.operator in ("In", "NotIn") and not e.values:
            raise InputError(
                f"operator {e.operator} needs at least one value",
                field=f"{field}.matchExpressions[{i}].values",
            )
        reqs.append(Requirement.new(e.key, e.operator, e.values))
    return Requirements(reqs)


def selects(selector: Requirements, pod_labels: Mapping[str, str]) -> bool:
    """Label-selector matching: every requirement holds on the labels (absent satisfies
    NotIn/DoesNotExist only). An empty selector matches everything."""
    have = Requirements.from_labels(pod_labels)
    return have.compatible(selector, allow_undefined=frozenset()) is None


def _namespace(meta: m.Metadata) -> str:
    return meta.namespace or "default"


def _owner(meta: m.Metadata) -> str | None:
    owners = [r for r in meta.ownerReferences if r.controller] or meta.ownerReferences
    return f"{owners[0].kind}/{owners[0].name}" if owners else None


def workload(doc: m.Deployment | m.ReplicaSet | m.StatefulSet | m.Job, file: str) -> o.Workload:
    """A Deployment, ReplicaSet, StatefulSet or Job as a fixed-size workload."""
    ns = _namespace(doc.metadata)
    spec = doc.spec
    tmpl_labels = dict(spec.template.metadata.labels)
    if isinstance(doc, m.Job):
        # A Job runs min(parallelism, completions left) pods until it completes or fails;
        # its controller labels them job-name=<name>, which is how its pods are found.
        done = doc.spec.suspend is True or any(
            c.type in ("Complete", "Failed") and c.status == "True" for c in doc.status.conditions
        )
        replicas = 0 if done else doc.spec.parallelism
        if doc.spec.completions is not None and not done:
            replicas = max(0, min(replicas, doc.spec.completions - doc.status.succeeded))
        tmpl_labels["job-name"] = doc.metadata.name
        selector = Requirements.from_labels({"job-name": doc.metadata.name})
        total = doc.spec.completions if doc.spec.completions is not None else doc.spec.parallelism
        completions: int | None = 0 if done else max(0, total - doc.status.succeeded)
    else:
        assert not isinstance(spec, m.JobSpec)
        replicas = spec.replicas
        completions = None
        selector = label_selector(spec.selector, "spec.selector")
    if not selector:
        selector = Requirements.from_labels(tmpl_labels)
    elif not selects(selector, tmpl_labels):
        raise InputError(
            "spec.selector does not match the pod template's labels", field="spec.selector"
        )
    return o.Workload(
        kind=doc.kind,
        namespace=ns,
        name=doc.metadata.name,
        replicas=replicas,
        template=pod_template(
            spec.template.spec,
            tmpl_labels,
            "spec.template.spec",
            ns,
            spec.template.metadata.annotations,
        ),
        source=o.Source(file, doc.kind, f"{ns}/{doc.metadata.name}", doc.apiVersion),
        selector=selector,
        annotations=tuple(sorted(spec.template.metadata.annotations.items())),
        completions=completions,
    )


def cronjob(doc: m.CronJob, file: str) -> o.CronJob:
    """A ``batch/v1`` CronJob."""
    ns = _namespace(doc.metadata)
    tmpl = doc.spec.jobTemplate.spec.template
    return o.CronJob(
        namespace=ns,
        name=doc.metadata.name,
        schedule=cron.check_schedule(doc.spec.schedule, field="spec.schedule", every=True),
        template=pod_template(
            tmpl.spec,
            tmpl.metadata.labels,
            "spec.jobTemplate.spec.template.spec",
            ns,
            tmpl.metadata.annotations,
        ),
        source=o.Source(file, "CronJob", f"{ns}/{doc.metadata.name}", doc.apiVersion),
        parallelism=doc.spec.jobTemplate.spec.parallelism,
        completions=doc.spec.jobTemplate.spec.completions,
        suspend=doc.spec.suspend,
        concurrency_policy=doc.spec.concurrencyPolicy or "Allow",
        time_zone=cron.check_time_zone(doc.spec.timeZone, field="spec.timeZone"),
    )


def daemonset(doc: m.DaemonSet, file: str) -> o.DaemonSet:
    """An ``apps/v1`` DaemonSet."""
    ns = _namespace(doc.metadata)
    return o.DaemonSet(
        namespace=ns,
        name=doc.metadata.name,
        template=pod_template(
            doc.spec.template.spec,
            doc.spec.template.metadata.labels,
            "spec.template.spec",
            ns,
            doc.spec.template.metadata.annotations,
        ),
        source=o.Source(file, "DaemonSet", f"{ns}/{doc.metadata.name}", doc.apiVersion),
    )


def pod(doc: m.Pod, file: str) -> o.StandalonePod:
    """A ``v1`` Pod (pending, or running when ``spec.nodeName`` is set)."""
    ns = _namespace(doc.metadata)
    return o.StandalonePod(
        namespace=ns,
        name=doc.metadata.name,
        template=pod_template(doc.spec, doc.metadata.labels, "spec", ns, doc.metadata.annotations),
        source=o.Source(file, "Pod", f"{ns}/{doc.metadata.name}", doc.apiVersion),
        node_name=doc.spec.nodeName,
        owner=_owner(doc.metadata),
        annotations=tuple(sorted(doc.metadata.annotations.items())),
        phase=doc.status.phase,
        deleting=doc.metadata.deletionTimestamp is not None,
        started_at=doc.status.startTime
        if doc.status.startTime is None or doc.status.startTime.tzinfo is not None
        else doc.status.startTime.replace(tzinfo=UTC),
        scheduling_gates=tuple(g.name for g in doc.spec.schedulingGates),
        nominated_node_name=doc.status.nominatedNodeName or None,
        scheduler_tried=any(c.type == "PodScheduled" for c in doc.status.conditions),
        failed_to_schedule=any(
            c.type == "PodScheduled" and c.reason == "Unschedulable" for c in doc.status.conditions
        ),
    )


def _int_or_percent(value: int | str | None, field: str) -> int | str | None:
    """A PodDisruptionBudget's ``minAvailable`` / ``maxUnavailable``: a count, or a string
    percentage (``ValidatePositiveIntOrPercent`` in ``pkg/apis/policy/validation``: a string
    must be a percentage, so ``"1"`` is rejected, and nothing may be negative)."""
    if value is None or isinstance(value, int):
        if isinstance(value, int) and value < 0:
            raise InputError(f"{value} must not be negative", field=field)
        return value
    text = value.strip()
    digits = text[:-1]
    if text.endswith("%") and digits.isascii() and digits.isdigit() and int(digits) <= 100:
        return text
    hint = f" (a count is written without quotes: {text})" if text.isdigit() else ""
    raise InputError(f"{value!r} is neither a count nor a percentage like 50%{hint}", field=field)


def pdb(doc: m.PodDisruptionBudget, file: str) -> o.PodDisruptionBudget:
    """A ``policy/v1`` PodDisruptionBudget."""
    ns = _namespace(doc.metadata)
    spec = doc.spec
    if spec.minAvailable is not None and spec.maxUnavailable is not None:
        raise InputError(
            "minAvailable and maxUnavailable are mutually exclusive", field="spec.maxUnavailable"
        )
    return o.PodDisruptionBudget(
        namespace=ns,
        name=doc.metadata.name,
        # A nil selector selects nothing, an empty one everything (PodDisruptionBudget).
        selector=None if spec.selector is None else label_selector(spec.selector, "spec.selector"),
        source=o.Source(file, "PodDisruptionBudget", f"{ns}/{doc.metadata.name}", doc.apiVersion),
        min_available=_int_or_percent(spec.minAvailable, "spec.minAvailable"),
        max_unavailable=_int_or_percent(spec.maxUnavailable, "spec.maxUnavailable"),
    )


def node(doc: m.Node, file: str) -> o.ClusterNode:
    """A ``v1`` Node; ``status.conditions`` are kept by type (see ``ClusterNode.conditions``
    for a Node without them)."""
    node_labels = {labels.normalize_key(k): v for k, v in doc.metadata.labels.items()}
    return o.ClusterNode(
        name=doc.metadata.name,
        labels=tuple(sorted(node_labels.items())),
        taints=taints(doc.spec.taints),
        capacity=resources(doc.status.capacity, "status.capacity", names=resourcenames.RESOURCE),
        allocatable=resources(
            doc.status.allocatable, "status.allocatable", names=resourcenames.RESOURCE
        ),
        source=o.Source(file, "Node", doc.metadata.name, doc.apiVersion),
        unschedulable=doc.spec.unschedulable,
        provider_id=doc.spec.providerID,
        annotations=tuple(sorted(doc.metadata.annotations.items())),
        deleting=doc.metadata.deletionTimestamp is not None
        or any(t.key == labels.TAINT_DISRUPTED for t in doc.spec.taints),
        conditions=tuple(sorted(first_by_type((c.type, c.status) for c in doc.status.conditions))),
    )


def pvc(doc: m.PersistentVolumeClaim, file: str) -> o.PersistentVolumeClaim:
    """A ``v1`` PersistentVolumeClaim."""
    ns = _namespace(doc.metadata)
    quantity.parse_resources(
        doc.spec.resources.requests, field="spec.resources.requests", names=resourcenames.RESOURCE
    )
    return o.PersistentVolumeClaim(
        namespace=ns,
        name=doc.metadata.name,
        source=o.Source(file, "PersistentVolumeClaim", f"{ns}/{doc.metadata.name}", doc.apiVersion),
        storage_class=doc.spec.storageClassName,
        volume_name=doc.spec.volumeName,
        deleting=doc.metadata.deletionTimestamp is not None,
    )


def pv(doc: m.PersistentVolume, file: str, warnings: list[str] | None = None) -> o.PersistentVolume:
    """A ``v1`` PersistentVolume; ``warnings`` gets a line for each node selector term's
    ``matchFields``, which are not modelled (``_pv_terms``).

    Raises:
        InputError: a node selector term with neither matchExpressions nor matchFields.
    """
    terms: list[Requirements] = []
    na = doc.spec.nodeAffinity
    if na is not None and na.required is not None:
        terms = _pv_terms(
            na.required.nodeSelectorTerms,
            f"{file}: PersistentVolume/{doc.metadata.name}",
            warnings if warnings is not None else [],
        )
    quantity.parse_resources(doc.spec.capacity, field="spec.capacity", names=resourcenames.RESOURCE)
    return o.PersistentVolume(
        name=doc.metadata.name,
        source=o.Source(file, "PersistentVolume", doc.metadata.name, doc.apiVersion),
        storage_class=doc.spec.storageClassName,
        node_affinity=tuple(terms),
        deleting=doc.metadata.deletionTimestamp is not None,
    )


def _pv_terms(
    selector_terms: Sequence[m.NodeSelectorTerm], where: str, warnings: list[str]
) -> list[Requirements]:
    """A PersistentVolume's required node affinity, one alternative per term with
    matchExpressions, as Karpenter reads it (``pkg/controllers/provisioning/scheduling/
    volumetopology.go`` ``getPersistentVolumeRequirements``: a term's matchExpressions only,
    a term without any adds no alternative). ``matchFields`` are not modelled: a line naming
    ``where`` (``file: PersistentVolume/name``) and the field goes to ``warnings``."""
    base = "spec.nodeAffinity.required.nodeSelectorTerms"
    terms: list[Requirements] = []
    for i, t in enumerate(selector_terms):
        if not t.matchExpressions and not t.matchFields:
            raise InputError("an empty node selector term matches no node", field=f"{base}[{i}]")
        if t.matchFields:
            effect = (
                "the term's matchExpressions apply alone"
                if t.matchExpressions
                else "the term restricts no node (Karpenter reads matchExpressions only)"
            )
            warnings.append(f"{where}: field {base}[{i}].matchFields: not modelled; {effect}")
        if t.matchExpressions:
            terms.append(
                Requirements(requirements(t.matchExpressions, f"{base}[{i}].matchExpressions"))
            )
    return terms


def storageclass(doc: m.StorageClass, file: str) -> o.StorageClass:
    """A ``storage.k8s.io/v1`` StorageClass."""
    return o.StorageClass(
        name=doc.metadata.name,
        source=o.Source(file, "StorageClass", doc.metadata.name, doc.apiVersion),
        provisioner=doc.provisioner,
        volume_binding_mode=doc.volumeBindingMode,
        allowed_topologies=tuple(
            Requirements(Requirement.in_(e.key, *e.values) for e in t.matchLabelExpressions)
            for t in doc.allowedTopologies
        ),
    )


def karpenter_ignores(
    selector: Requirements,
    terms: Sequence[Requirements],
    first_term: Requirements | None = None,
    heaviest_preference: Requirements | None = None,
) -> str:
    """Why Karpenter's provisioner ignores a pod, or ``""`` when it provisions for it
    (Karpenter pkg/controllers/provisioning/provisioner.go ``Validate``).

    * ``validateKarpenterManagedLabelCanExist``: ``karpenter.sh/nodepool DoesNotExist`` in
      the pod's requirements as ``NewPodRequirements`` (pkg/scheduling/requirements.go)
      builds them: ``selector`` (``spec.nodeSelector``), the heaviest preferred node-affinity
      term (``heaviest_preference``) and the first required term (``first_term``).
    * ``validateNodeSelector``, ``validateAffinity``: a restricted label in ``selector`` or
      in any required term (``terms``), through pkg/apis/v1/nodeclaim_validation.go
      ``ValidateRequirement`` and labels.go ``IsRestrictedLabel``.
    """
    merged = selector
    for extra in (heaviest_preference, first_term):
        if extra is not None:
            merged = merged.merge(extra)
    nodepool = merged.get(labels.NODEPOOL)
    if nodepool is not None and nodepool.operator == DOES_NOT_EXIST:
        return (
            "configured to not run on a Karpenter provisioned node "
            "(karpenter.sh/nodepool DoesNotExist)"
        )
    for reqs in (selector, *terms):
        for key in reqs:
            if labels.restricted_label(key):
                return (
                    f"label {key} is restricted: Karpenter does not provision for a pod that "
                    "requires it (use a well-known label or a custom one outside karpenter.sh "
                    "and karpenter.k8s.aws)"
                )
    return ""
