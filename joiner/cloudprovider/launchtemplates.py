"""The launch-template cache both clouds share (Karpenter-AWS
``pkg/providers/launchtemplate/launchtemplate.go``).

Karpenter-AWS keeps the launch templates it manages in a go-cache
(``cache.New(DefaultTTL, DefaultCleanupInterval)``, both 1 minute, ``pkg/cache/cache.go``):

* ``ensureLaunchTemplate``: a hit refreshes the entry's expiry (``SetDefault``); a miss
  describes the template by name, creates it when absent, and caches it;
* the cache's janitor runs every cleanup interval and evicts the entries whose expiry has
  passed; its ``OnEvicted`` callback (``cachedEvictedFunc``) deletes the template
  (``DeleteLaunchTemplate`` by id, NotFound ignored) unless it was set again meanwhile. So a
  template no launch used for ``ttl_s`` is deleted within one more cleanup interval;
* ``hydrateCache``: once elected, every template tagged for this cluster is put in the
  cache, so templates a previous leader left are deleted a TTL later unless used again;
* ``DeleteAll``: an EC2NodeClass being deleted (its termination controller) deletes every
  template tagged with the cluster and the NodeClass;
* ``InvalidateCache``: a launch that found its template gone drops the entry without
  deleting anything.

``LaunchTemplateCache`` is that cache with the clock injected (``now`` in seconds, any
epoch); ``SimulatedLaunchTemplates`` is the simulated cloud's template store behind it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

#: Karpenter-AWS ``cache.DefaultTTL``: a template unused this long is deleted.
LAUNCH_TEMPLATE_TTL_S = 60.0
#: Karpenter-AWS ``cache.DefaultCleanupInterval``: how often expired templates are evicted.
LAUNCH_TEMPLATE_CLEANUP_INTERVAL_S = 60.0


@dataclass(slots=True)
class CachedTemplate:
    """One cached launch template: its name, cloud id, the NodeClass it was built for
    (``""`` when unknown, e.g. hydrated without the tag) and its expiry (seconds)."""

    name: str
    template_id: str
    node_class: str
    expires_at_s: float


class LaunchTemplateCache:
    """go-cache semantics for launch templates (module docstring).

    ``get`` returns a live entry and refreshes its expiry; an expired entry counts as
    missing (go-cache's ``Get``) but stays until ``evict_expired`` hands it out for
    deletion.

    Raises:
        ValueError: ``ttl_s`` is not positive.
    """

    def __init__(self, now: Callable[[], float], ttl_s: float = LAUNCH_TEMPLATE_TTL_S) -> None:
        if ttl_s <= 0:
            raise ValueError(f"launch template TTL must be positive, got {ttl_s}")
        self._now = now
        self.ttl_s = ttl_s
        self._entries: dict[str, CachedTemplate] = {}

    def get(self, name: str) -> CachedTemplate | None:
        """The live entry named ``name``, its expiry pushed to now + TTL (``SetDefault``)."""
        entry = self._entries.get(name)
        now = self._now()
        if entry is None or entry.expires_at_s <= now:
            return None
        entry.expires_at_s = now + self.ttl_s
        return entry

    def put(self, name: str, template_id: str, node_class: str = "") -> CachedTemplate:
        """Cache (or refresh) a template for TTL from now."""
        entry = CachedTemplate(name, template_id, node_class, self._now() + self.ttl_s)
        self._entries[name] = entry
        return entry

    def drop(self, name: str) -> None:
        """Forget ``name`` without deleting it (``InvalidateCache``)."""
        self._entries.pop(name, None)

    def drop_node_class(self, node_class: str) -> list[CachedTemplate]:
        """Forget and return every entry of ``node_class`` (its templates are being deleted)."""
        gone = [e for e in self._entries.values() if e.node_class == node_class]
        for e in gone:
            del self._entries[e.name]
        return gone

    def evict_expired(self) -> list[CachedTemplate]:
        """The janitor: remove and return entries whose expiry has passed, by name. The
        caller deletes their templates (``cachedEvictedFunc``)."""
        now = self._now()
        gone = sorted(
            (e for e in self._entries.values() if e.expires_at_s <= now), key=lambda e: e.name
        )
        for e in gone:
            del self._entries[e.name]
        return gone

    def names(self) -> list[str]:
        """Cached names (live or not yet evicted), sorted."""
        return sorted(self._entries)


def template_hash(content: Any) -> str:
    """SHA-256 of ``content`` as canonical JSON (sorted keys): equal content, equal name
    (Karpenter-AWS ``LaunchTemplateName`` hashes the resolved launch-template options)."""
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


class SimulatedLaunchTemplates:
    """The simulated cloud's launch templates, kept as Karpenter-AWS keeps them on EC2:
    one per distinct content (named ``joiner.dev/<hash>``), cached for ``ttl_s`` after its
    last use, deleted by ``collect`` once expired, and all of a NodeClass's deleted by
    ``delete_all``. ``created`` and ``deleted`` count template creations and deletions."""

    def __init__(self, now: Callable[[], float], ttl_s: float = LAUNCH_TEMPLATE_TTL_S) -> None:
        self.cache = LaunchTemplateCache(now, ttl_s)
        #: Templates that exist in the simulated account: name -> NodeClass.
        self.templates: dict[str, str] = {}
        self.created = 0
        self.deleted = 0

    def ensure(self, node_class: str, content: Any) -> str:
        """The template holding ``content`` for ``node_class``, created when absent."""
        name = "joiner.dev/" + template_hash([node_class, content])[:32]
        if self.cache.get(name) is not None:
            return name
        if name not in self.templates:
            self.templates[name] = node_class
            self.created += 1
        self.cache.put(name, name, node_class)
        return name

    def use(self, node_class: str, content: Any) -> str:
        """A launch's template: expired ones deleted first (``collect``), then ``ensure``."""
        self.collect()
        return self.ensure(node_class, content)

    def delete_removed(self, before: Iterable[str], after: Iterable[str]) -> None:
        """``delete_all`` for each NodeClass in ``before`` that ``after`` no longer has (the
        EC2NodeClass termination controller)."""
        for name in sorted(set(before) - set(after)):
            self.delete_all(name)

    def collect(self) -> list[str]:
        """Delete the templates whose cache entry expired; their names."""
        gone = [e.name for e in self.cache.evict_expired() if e.name in self.templates]
        self._delete(gone)
        return gone

    def delete_all(self, node_class: str) -> list[str]:
        """Delete every template of ``node_class`` (``DeleteAll``); their names."""
        self.cache.drop_node_class(node_class)
        gone = sorted(n for n, nc in self.templates.items() if nc == node_class)
        self._delete(gone)
        return gone

    def _delete(self, names: Iterable[str]) -> None:
        for n in names:
            del self.templates[n]
            self.deleted += 1
