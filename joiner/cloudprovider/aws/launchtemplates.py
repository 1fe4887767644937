"""The launch templates Joiner manages on EC2, created, reused and garbage-collected as
Karpenter-AWS does (``pkg/providers/launchtemplate/launchtemplate.go``; the cache rules are
in ``joiner/cloudprovider/launchtemplates.py``).

* Name: ``joiner.dev/<hash>``, the SHA-256 of the template data and its tags (Karpenter:
  ``karpenter.k8s.aws/<hashstructure of the options>``, tags and NodeClass included), so
  equal content reuses one template and two NodeClasses never share one.
* Tags: the NodeClass's ``tags``, ``kubernetes.io/cluster/<cluster>=owned``,
  ``eks:eks-cluster-name=<cluster>`` (Karpenter v1's cluster tag, which hydration and
  ``DeleteAll`` filter on), ``karpenter.k8s.aws/cluster=<cluster>`` (the pre-v1 tag) and
  ``karpenter.k8s.aws/ec2nodeclass=<name>``.
* ``ensure``: cache hit (refreshes the TTL), else ``DescribeLaunchTemplates`` by name, else
  ``CreateLaunchTemplate`` (an ``AlreadyExists`` race is taken as success).
* ``hydrate``: ``DescribeLaunchTemplates`` filtered on ``tag:eks:eks-cluster-name`` (200
  per page) into the cache, once this process leads (``hydrateCache``).
* ``collect``: the cache's janitor; each expired template is deleted by id
  (``DeleteLaunchTemplate``; NotFound ignored; another error logged and the template left
  for the next hydration, as ``cachedEvictedFunc`` does).
* ``delete_all``: every template tagged with this cluster and the NodeClass is deleted
  (``DeleteAll``, called when an EC2NodeClass is deleted); errors are gathered and raised
  after every deletion was tried.
* ``invalidate``: a CreateFleet that found its template gone drops it from the cache
  (``InvalidateCache``), so the next launch creates it again.

Templates of another cluster carry another ``eks:eks-cluster-name`` value: no filter here
selects them, and the cache only ever holds names this cluster's filter or launches gave.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from joiner.cloudprovider.aws.api import AWSError, aws_errors
from joiner.cloudprovider.launchtemplates import (
    LAUNCH_TEMPLATE_TTL_S,
    LaunchTemplateCache,
    template_hash,
)

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ec2.type_defs import FilterTypeDef, LaunchTemplateTypeDef

log = logging.getLogger(__name__)

LAUNCH_TEMPLATE_PREFIX = "joiner.dev/"
#: Karpenter v1's cluster tag (``v1.EKSClusterNameTagKey``); hydration filters on it.
EKS_CLUSTER_TAG = "eks:eks-cluster-name"
#: Karpenter's pre-v1 launch-template cluster tag (``karpenterManagedTagKey``).
LEGACY_CLUSTER_TAG = "karpenter.k8s.aws/cluster"
NODECLASS_TAG = "karpenter.k8s.aws/ec2nodeclass"
#: DescribeLaunchTemplates' page size cap.
DESCRIBE_PAGE_SIZE = 200
_NOT_FOUND = ("InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound")


def is_template_not_found(code: str) -> bool:
    """True for the EC2 error codes of a missing launch template."""
    return code in _NOT_FOUND


def launch_template_name(data: dict[str, Any], tags: Sequence[tuple[str, str]] = ()) -> str:
    """``joiner.dev/<first 32 hex digits of SHA-256>`` of the data (and tags, when given)."""
    content: Any = data if not tags else [data, sorted(tags)]
    return LAUNCH_TEMPLATE_PREFIX + template_hash(content)[:32]


def _tag_map(lt: LaunchTemplateTypeDef) -> dict[str, str]:
    return {str(t["Key"]): str(t["Value"]) for t in lt.get("Tags") or []}


class LaunchTemplates:
    """Launch templates of one cluster (module docstring). ``now`` returns seconds;
    ``created`` and ``deleted`` count this process's creations and deletions.

    Raises:
        ValueError: ``ttl_s`` is not positive.
    """

    def __init__(
        self,
        ec2: EC2Client,
        cluster_name: str,
        now: Callable[[], float],
        *,
        ttl_s: float = LAUNCH_TEMPLATE_TTL_S,
    ) -> None:
        self._ec2 = ec2
        self.cluster_name = cluster_name
        self.cache = LaunchTemplateCache(now, ttl_s)
        self.created = 0
        self.deleted = 0

    def cluster_tags(self, node_class: str) -> tuple[tuple[str, str], ...]:
        """The tags that mark a template as this cluster's and ``node_class``'s."""
        return (
            (f"kubernetes.io/cluster/{self.cluster_name}", "owned"),
            (EKS_CLUSTER_TAG, self.cluster_name),
            (LEGACY_CLUSTER_TAG, self.cluster_name),
            (NODECLASS_TAG, node_class),
        )

    def ensure(
        self, data: dict[str, Any], node_class: str, tags: Sequence[tuple[str, str]] = ()
    ) -> str:
        """The name of a launch template holding ``data`` for ``node_class``, tagged with
        ``tags`` (the NodeClass's) and the cluster tags.

        Raises:
            AWSError: describe or create failed for another reason.
        """
        all_tags = sorted({**dict(tags), **dict(self.cluster_tags(node_class))}.items())
        name = launch_template_name(data, all_tags)
        if self.cache.get(name) is not None:
            return name
        try:
            with aws_errors():
                resp = self._ec2.describe_launch_templates(LaunchTemplateNames=[name])
            found = resp.get("LaunchTemplates") or [{}]
            self.cache.put(name, str(found[0].get("LaunchTemplateId", "")), node_class)
            return name
        except AWSError as exc:
            if not is_template_not_found(exc.code):
                raise
        params: dict[str, Any] = {
            "LaunchTemplateName": name,
            "LaunchTemplateData": data,
            "TagSpecifications": [
                {
                    "ResourceType": "launch-template",
                    "Tags": [{"Key": k, "Value": v} for k, v in all_tags],
                }
            ],
        }
        template_id = ""
        try:
            with aws_errors():
                created = self._ec2.create_launch_template(**params)
            template_id = str((created.get("LaunchTemplate") or {}).get("LaunchTemplateId", ""))
            self.created += 1
            log.debug("created launch template %s (%s)", name, template_id)
        except AWSError as exc:
            if exc.code != "InvalidLaunchTemplateName.AlreadyExistsException":
                raise
        self.cache.put(name, template_id, node_class)
        return name

    def invalidate(self, name: str) -> None:
        """Drop ``name`` from the cache without deleting it (it was deleted behind our back)."""
        self.cache.drop(name)

    def _describe(self, filters: list[FilterTypeDef]) -> list[LaunchTemplateTypeDef]:
        """Every launch template ``filters`` select, over all DescribeLaunchTemplates pages.

        Raises:
            AWSError: a page failed after botocore's retries.
        """
        out: list[LaunchTemplateTypeDef] = []
        paginator = self._ec2.get_paginator("describe_launch_templates")
        with aws_errors():
            for page in paginator.paginate(
                Filters=filters, PaginationConfig={"PageSize": DESCRIBE_PAGE_SIZE}
            ):
                out.extend(page.get("LaunchTemplates") or [])
        return out

    def _cluster_filter(self) -> FilterTypeDef:
        return {"Name": f"tag:{EKS_CLUSTER_TAG}", "Values": [self.cluster_name]}

    def hydrate(self) -> int:
        """Cache every template tagged for this cluster (``hydrateCache``); how many.

        Raises:
            AWSError: DescribeLaunchTemplates failed (the caller logs it; Karpenter logs
                and carries on with an unhydrated cache).
        """
        found = self._describe([self._cluster_filter()])
        for lt in found:
            self.cache.put(
                str(lt["LaunchTemplateName"]),
                str(lt.get("LaunchTemplateId", "")),
                _tag_map(lt).get(NODECLASS_TAG, ""),
            )
        log.debug("hydrated %d launch templates of cluster %s", len(found), self.cluster_name)
        return len(found)

    def _delete(self, name: str, template_id: str) -> None:
        try:
            with aws_errors():
                if template_id:
                    self._ec2.delete_launch_template(LaunchTemplateId=template_id)
                else:
                    self._ec2.delete_launch_template(LaunchTemplateName=name)
            self.deleted += 1
        except AWSError as exc:
            if not is_template_not_found(exc.code):
                raise

    def collect(self) -> list[str]:
        """Delete the templates whose cache entry expired (the janitor with
        ``cachedEvictedFunc``); the names deleted. A failed delete is logged and skipped."""
        gone = []
        for entry in self.cache.evict_expired():
            try:
                self._delete(entry.name, entry.template_id)
            except AWSError as exc:
                log.error("deleting launch template %s failed: %s", entry.name, exc)
                continue
            gone.append(entry.name)
        if gone:
            log.info("deleted %d unused launch templates: %s", len(gone), ", ".join(gone))
        return gone

    def delete_all(self, node_class: str) -> list[str]:
        """Delete every template of this cluster and ``node_class`` (``DeleteAll``); the
        names deleted.

        Raises:
            AWSError: the listing failed, or a deletion failed (the first such error,
                after every deletion was tried).
        """
        self.cache.drop_node_class(node_class)
        found = self._describe(
            [
                self._cluster_filter(),
                {"Name": f"tag:{NODECLASS_TAG}", "Values": [node_class]},
            ]
        )
        names = sorted(str(lt["LaunchTemplateName"]) for lt in found)
        first: AWSError | None = None
        for name in names:
            self.cache.drop(name)
            try:
                self._delete(name, "")
            except AWSError as exc:
                first = first or exc
        if names:
            log.info("deleted launch templates of EC2NodeClass %s: %s", node_class, names)
        if first is not None:
            raise first
        return names
