"""The sweep file (``kind: Sweep``, ``apiVersion: joiner.dev/v1alpha1``) and its cells.

``SweepFile`` is the pydantic model (JSON Schema ``docs/schemas/sweep.schema.json``, printed by
``joiner schema sweep``). ``load_sweep`` validates it and turns it into a ``SweepPlan``:

1. Read the base scenario document (``spec.scenario``, relative to the sweep file).
2. For each variant (none given: one variant ``base`` with no patch), merge its patch into
   the scenario document and into the manifest documents it addresses (``kind``, ``name``,
   ``namespace``), then collect every file the patched scenario names (each field the
   schema marks as a file, ``scenario_schema.referenced_files``: manifests, traces, traffic,
   price histories, placement scores, NTH values, events, FIS templates; not the as-run
   record, which no cell runs)
   into a ``Bundle``: the files' text by path
   relative to their common directory. A cell ships its bundle, so it reads nothing from
   the machine it runs on and gives the same summary on any worker.
3. Load every variant once, as ``joiner simulate`` would (under every policy and the
   largest interruption-rate multiplier), so bad input fails before any cell runs.
4. The grid is variants x policies x multipliers x seeds, in that order; ``sample`` draws
   a seeded random subset of it (kept in grid order).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    Tag,
    ValidationError,
)

from joiner.api.errors import InputError
from joiner.api.manifests.yamlio import parse_documents, read_documents, read_text
from joiner.api.validation import describe as describe_error
from joiner.api.validation import field_path, shown
from joiner.operator.sweep.patch import DocumentRef, describe, merge_patch, patch_documents

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
#: ``NAME_PATTERN`` in words (a name is part of cell ids and output paths).
NAME_RULE = (
    "a name may contain letters, digits, '.', '_' and '-', starting with a letter or digit "
    "(e.g. 'spot-only'), at most 63 characters"
)
POLICIES = ("joiner", "cost-optimal", "cluster-autoscaler")
#: ``spec.compare``'s record of what the cluster ran: not a policy a sweep runs.
AS_RUN = "as-run"
#: The scenario file's own bound on ``spec.cloud.interruptionRateMultiplier``.
MAX_RATE_MULTIPLIER = 1e5


class _Strict(BaseModel):
    """Unknown fields and values of the wrong YAML type (``"3"`` for a seed, ``"2"`` for a
    multiplier) are errors, as in the scenario file (pydantic's strict mode)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)


class TargetSpec(_Strict):
    """A manifest document of the scenario, by kind, name and (namespaced kinds) namespace."""

    kind: str = Field(min_length=1, description="e.g. NodePool, Provisioner, EC2NodeClass")
    name: str = Field(min_length=1)
    namespace: str | None = Field(
        default=None, min_length=1, description="absent: any namespace (or cluster-scoped)"
    )


class ManifestPatchSpec(_Strict):
    """A JSON merge patch (RFC 7396) onto one manifest document."""

    target: TargetSpec
    patch: dict[str, Any] = Field(description="JSON merge patch; null deletes a key")


class VariantSpec(_Strict):
    """A named configuration: merge patches onto the scenario and its manifests."""

    name: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)
    description: str = ""
    scenario: dict[str, Any] | None = Field(
        default=None, description="JSON merge patch onto the scenario document"
    )
    manifests: list[ManifestPatchSpec] = Field(default_factory=list)


class SeedRange(_Strict):
    """Seeds ``start``, ``start + 1``, ... (``count`` of them)."""

    start: StrictInt = Field(default=0, ge=0, lt=2**63)
    count: StrictInt = Field(ge=1, le=1_000_000)


class SampleSpec(_Strict):
    """A random subset of the grid, drawn with its own seed."""

    count: StrictInt = Field(ge=1, description="cells to draw (the whole grid if larger)")
    seed: StrictInt = Field(default=0, ge=0, lt=2**63)


def _mapping_or_list(value: Any) -> str:
    """The ``seeds`` branch a value's shape selects, so that an error names the field inside
    it (``spec.seeds[0]``) rather than the other branch's complaint."""
    return "list" if isinstance(value, list) else "dict"


class SweepSpec(_Strict):
    """The base scenario and the axes of the grid."""

    scenario: str = Field(min_length=1, description="Scenario file, relative to this file")
    seeds: Annotated[
        Annotated[SeedRange, Tag("dict")] | Annotated[list[StrictInt], Tag("list")],
        Discriminator(_mapping_or_list),
    ] = Field(description="{start, count} or an explicit list of seeds")
    variants: list[VariantSpec] = Field(
        default_factory=list, description="absent: one variant 'base', the scenario as is"
    )
    interruptionRateMultipliers: list[float] = Field(
        default_factory=lambda: [1.0],
        min_length=1,
        description="Each multiplies the scenario's spec.cloud.interruptionRateMultiplier",
    )
    policies: list[Literal["joiner", "cost-optimal", "cluster-autoscaler"]] | None = Field(
        default=None,
        min_length=1,
        description="absent: the scenario's spec.compare (without as-run, a record the "
        "grid does not vary), or joiner",
    )
    sample: SampleSpec | None = None


class SweepMetadata(_Strict):
    name: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)


class SweepFile(_Strict):
    """The sweep document."""

    apiVersion: Literal["joiner.dev/v1alpha1"]
    kind: Literal["Sweep"]
    metadata: SweepMetadata
    spec: SweepSpec


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the sweep file."""
    schema = SweepFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Joiner Sweep"
    return schema


@dataclass(frozen=True, slots=True)
class Bundle:
    """The files a cell reads: ``(path, text)`` pairs relative to a common root, sorted,
    and the scenario's path among them."""

    files: tuple[tuple[str, str], ...]
    scenario: str

    @contextmanager
    def materialized(self, scenario_text: str | None = None) -> Iterator[Path]:
        """Write the files into a fresh directory, make it the working directory for the
        duration, and yield the scenario's relative path (so every path a summary quotes is
        the same on any machine). ``scenario_text`` replaces the scenario file's text.

        Not thread-safe (it changes the process's working directory): a sweep worker runs
        one cell at a time.
        """
        before = os.getcwd()
        with TemporaryDirectory(prefix="joiner-cell-") as tmp:
            for rel, text in self.files:
                if rel == self.scenario and scenario_text is not None:
                    text = scenario_text
                target = Path(tmp) / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            os.chdir(tmp)
            try:
                yield Path(self.scenario)
            finally:
                os.chdir(before)


@dataclass(frozen=True, slots=True)
class Variant:
    """A variant ready to run: its bundle, its scenario document (cells patch the seed, the
    multiplier and the policy onto it), its NodePools as ``karpenter.sh/v1`` YAML, and a
    digest of all of it (``Cell.input_digest`` builds on it)."""

    name: str
    description: str
    bundle: Bundle
    scenario_doc: dict[str, Any]
    node_pools_yaml: str
    digest: str


@dataclass(frozen=True, slots=True)
class Cell:
    """One simulation of the grid."""

    variant: str
    policy: str
    rate_multiplier: float
    seed: int

    @property
    def cell_id(self) -> str:
        """``variant/policy/x<multiplier>/seed-<seed>``: unique within a sweep."""
        return f"{self.variant}/{self.policy}/x{self.rate_multiplier:g}/seed-{self.seed}"


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """A validated sweep: its variants by name and its cells in grid order."""

    name: str
    file: str
    variants: dict[str, Variant]
    cells: tuple[Cell, ...]

    def input_digest(self, cell: Cell) -> str:
        """SHA-256 of everything the cell's result depends on (``--resume`` compares it)."""
        return _sha256(f"{self.variants[cell.variant].digest}\n{cell.cell_id}")


def cell_scenario(variant: Variant, cell: Cell) -> dict[str, Any]:
    """The cell's scenario document: the variant's, with ``spec.seed``, ``spec.compare`` and
    ``spec.cloud.interruptionRateMultiplier`` (the variant's times the cell's) set, and
    ``spec.asRun`` removed (a cell runs one simulated policy)."""
    doc: dict[str, Any] = merge_patch(
        variant.scenario_doc,
        {"spec": {"seed": cell.seed, "compare": [cell.policy], "asRun": None}},
    )
    cloud = doc["spec"].setdefault("cloud", {})
    cloud["interruptionRateMultiplier"] = (
        float(cloud.get("interruptionRateMultiplier", 1.0)) * cell.rate_multiplier
    )
    return doc


def dump_scenario(doc: dict[str, Any]) -> str:
    """A scenario document as YAML text (key order kept)."""
    return yaml.safe_dump(doc, sort_keys=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _validation_error(
    exc: ValidationError, file: str, obj: str, model: type[BaseModel]
) -> InputError:
    err = exc.errors()[0]
    loc = field_path(tuple(err["loc"]))
    msg = describe_error(err, model)
    if err["type"] == "string_pattern_mismatch" and err["loc"][-1] == "name":
        msg = f"{shown(err.get('input'))} is not a usable name: {NAME_RULE}"
    return InputError(msg, file=file, obj=obj, field=loc)


#: Makes the error for a message and the field it is about (in the sweep file).
_Fail = Callable[[str, str], InputError]


def load_sweep(path: Path | str) -> SweepPlan:
    """Read and validate a sweep file, its scenario, every variant, and build the grid.

    Raises:
        InputError: naming the sweep file, ``Sweep/<name>`` and the field (a variant's own
            problem names ``spec.variants[i]`` and quotes the scenario's error).
    """
    path = Path(path)
    file = str(path)
    doc, obj = _read_sweep(path)
    spec = doc.spec

    def fail(message: str, field: str) -> InputError:
        return InputError(message, file=file, obj=obj, field=field)

    scenario_path, base_doc = _base_scenario(path.parent / spec.scenario, fail)
    seeds = _seeds(spec, fail)
    multipliers = spec.interruptionRateMultipliers
    _check_multipliers(multipliers, fail)
    policies = _policies(spec, base_doc)
    if len(set(policies)) != len(policies):
        raise fail("each policy may be listed once", "spec.policies")
    variants: dict[str, Variant] = {}
    for i, v in enumerate(_variant_specs(spec, fail)):
        variants[v.name] = _variant(
            v, f"spec.variants[{i}]", scenario_path, base_doc, policies, max(multipliers), fail
        )
    axes = (list(variants), policies, [float(m) for m in multipliers], seeds)
    cells = _grid(axes, spec.sample, fail)
    return SweepPlan(name=doc.metadata.name, file=file, variants=variants, cells=cells)


#: The most cells a sweep may run (after ``sample``): far beyond a night on a Ray cluster, and
#: a grid larger than this is never built whole.
MAX_CELLS = 1_000_000


def _grid(
    axes: tuple[list[str], list[str], list[float], list[int]],
    sample: SampleSpec | None,
    fail: _Fail,
) -> tuple[Cell, ...]:
    """The cells in grid order (variants x policies x multipliers x seeds), or the
    ``sample`` of them, drawn by index without building the grid (``random.Random.sample``
    over a ``range``, the indices sorted; a cell is its index in mixed radix).

    Raises:
        InputError: more than ``MAX_CELLS`` cells would run.
    """
    total = math.prod(len(a) for a in axes)
    if sample is not None and sample.count < total:
        if sample.count > MAX_CELLS:
            raise fail(f"at most {MAX_CELLS:,} cells may be drawn", "spec.sample.count")
        indices: Iterable[int] = sorted(
            random.Random(sample.seed).sample(range(total), sample.count)
        )
    elif total > MAX_CELLS:
        raise fail(
            f"the grid has {total:,} cells, more than {MAX_CELLS:,}; draw some of them with "
            "spec.sample",
            "spec",
        )
    else:
        indices = range(total)
    return tuple(_cell(axes, i) for i in indices)


def _cell(axes: tuple[list[str], list[str], list[float], list[int]], index: int) -> Cell:
    """The cell at ``index`` in grid order (the last axis varies fastest)."""
    picks: list[Any] = []
    for axis in reversed(axes):
        index, at = divmod(index, len(axis))
        picks.append(axis[at])
    v, p, m, s = reversed(picks)
    return Cell(v, p, m, s)


def _read_sweep(path: Path) -> tuple[SweepFile, str]:
    """The validated Sweep document and how errors name it (``Sweep/<name>``).

    Raises:
        InputError: not one Sweep document, or an invalid one.
    """
    file = str(path)
    docs = read_documents(path)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise InputError(f"expected one Sweep document, found {len(docs)}", file=file)
    raw = docs[0]
    if raw.get("kind") != "Sweep":
        raise InputError(
            f"this is a {raw.get('kind') or 'document without a kind'}, not a Sweep "
            "(kind: Sweep, apiVersion: joiner.dev/v1alpha1; see examples/*/sweep.yaml)",
            file=file,
            field="kind",
        )
    meta = raw.get("metadata")
    obj = f"Sweep/{meta['name']}" if isinstance(meta, dict) and meta.get("name") else "Sweep"
    try:
        return SweepFile.model_validate(raw), obj
    except ValidationError as exc:
        raise _validation_error(exc, file, obj, SweepFile) from exc


def _base_scenario(scenario_path: Path, fail: _Fail) -> tuple[Path, dict[str, Any]]:
    """``spec.scenario``'s path and its one Scenario document (unvalidated).

    Raises:
        InputError: the file is missing, or does not hold one document.
    """
    if not scenario_path.is_file():
        what = "is a directory" if scenario_path.is_dir() else "does not exist"
        raise fail(f"scenario file {str(scenario_path)!r} {what}", "spec.scenario")
    base_docs = read_documents(scenario_path)
    if len(base_docs) != 1 or not isinstance(base_docs[0], dict):
        raise fail("the scenario file must hold one Scenario document", "spec.scenario")
    return scenario_path, base_docs[0]


def _seeds(spec: SweepSpec, fail: _Fail) -> list[int]:
    """``spec.seeds`` as a list (a range expanded).

    Raises:
        InputError: none given, one out of [0, 2^63), or one listed twice.
    """
    seeds = (
        list(range(spec.seeds.start, spec.seeds.start + spec.seeds.count))
        if isinstance(spec.seeds, SeedRange)
        else list(spec.seeds)
    )
    if not seeds:
        raise fail("give at least one seed", "spec.seeds")
    for i, s in enumerate(seeds):
        if not 0 <= s < 2**63:
            raise fail(f"seed {s} is out of range [0, 2^63)", f"spec.seeds[{i}]")
    if len(set(seeds)) != len(seeds):
        raise fail("each seed may be listed once", "spec.seeds")
    return seeds


def _check_multipliers(multipliers: Sequence[float], fail: _Fail) -> None:
    """Raises InputError for a multiplier out of [0, MAX_RATE_MULTIPLIER] or listed twice."""
    for i, m in enumerate(multipliers):
        if not 0 <= m <= MAX_RATE_MULTIPLIER:
            raise fail(
                f"multiplier {m} is out of range [0, {MAX_RATE_MULTIPLIER:g}]",
                f"spec.interruptionRateMultipliers[{i}]",
            )
    if len({f"{m:g}" for m in multipliers}) != len(multipliers):
        raise fail("each multiplier may be listed once", "spec.interruptionRateMultipliers")


def _variant_specs(spec: SweepSpec, fail: _Fail) -> list[VariantSpec]:
    """``spec.variants`` (one ``base`` variant when none).

    Raises:
        InputError: a variant's name listed twice.
    """
    variant_specs = spec.variants or [VariantSpec(name="base")]
    names = [v.name for v in variant_specs]
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise fail(f"variant {name!r} is listed twice", f"spec.variants[{i}].name")
    return variant_specs


def _policies(spec: SweepSpec, base_doc: dict[str, Any]) -> list[str]:
    """The sweep's policies: ``spec.policies``, else the scenario's simulated ``spec.compare``
    policies (``as-run`` is a record no seed or multiplier changes: it is left out), else
    ``joiner``."""
    if spec.policies is not None:
        return list(spec.policies)
    compare = base_doc.get("spec", {}).get("compare") if isinstance(base_doc, dict) else None
    if isinstance(compare, list) and compare and all(p in (*POLICIES, AS_RUN) for p in compare):
        simulated = [str(p) for p in compare if p != AS_RUN]
        return simulated or ["joiner"]
    return ["joiner"]


def _referenced_files(doc: dict[str, Any]) -> list[str]:
    """Every file a (validated) scenario document names, relative to the scenario
    (``scenario_schema.referenced_files``: each field marked as a file)."""
    from joiner.sim.scenario_schema import ScenarioFile, referenced_files

    scenario = ScenarioFile.model_validate(doc)
    # A cell carries no spec.asRun (the record does not vary), so its files stay behind.
    as_run = set(referenced_files(scenario.spec.asRun)) if scenario.spec.asRun else set()
    return [f for f in referenced_files(scenario) if f not in as_run]


def _variant(
    v: VariantSpec,
    where: str,
    scenario_path: Path,
    base_doc: dict[str, Any],
    policies: list[str],
    max_multiplier: float,
    fail: _Fail,
) -> Variant:
    """Apply a variant's patches, bundle its files and load it once (see the module doc)."""
    doc = merge_patch(base_doc, v.scenario) if v.scenario is not None else dict(base_doc)
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        raise fail("the patched scenario has no spec", f"{where}.scenario")
    from joiner.sim.scenario_schema import ScenarioFile

    try:
        referenced = _referenced_files(doc)
    except ValidationError as exc:
        e = _validation_error(exc, str(scenario_path), f"Scenario (variant {v.name})", ScenarioFile)
        raise fail(f"the patched scenario is invalid: {e}", f"{where}.scenario") from exc
    scenario_dir = scenario_path.parent
    texts: dict[str, str] = {}  # absolute path -> text
    for rel in referenced:
        p = scenario_dir / rel
        if not p.is_file():
            raise fail(f"the scenario names {rel!r}, which is not a file", f"{where}")
        texts.setdefault(os.path.abspath(p), read_text(p))
    scenario_abs = os.path.abspath(scenario_path)
    root = os.path.commonpath([os.path.dirname(scenario_abs), *texts])
    if os.path.isfile(root):
        root = os.path.dirname(root)
    manifests_abs = {os.path.abspath(scenario_dir / m) for m in doc["spec"]["manifests"]}
    manifest_docs = {
        a: parse_documents(texts[a], os.path.relpath(a, root)) for a in sorted(manifests_abs)
    }
    for j, mp in enumerate(v.manifests):
        ref = DocumentRef(mp.target.kind, mp.target.name, mp.target.namespace)
        hits = sum(patch_documents(d, ref, mp.patch) for d in manifest_docs.values())
        if hits == 0:
            have = sorted(
                {n for d in manifest_docs.values() for n in map(describe, _flatten(d)) if n}
            )
            raise fail(
                f"no manifest document {ref} in the scenario's manifests "
                f"(have: {', '.join(have) or 'none'})",
                f"{where}.manifests[{j}].target",
            )
        if hits > 1 and mp.target.namespace is None:
            raise fail(
                f"{ref} names {hits} documents; add target.namespace",
                f"{where}.manifests[{j}].target",
            )
    patched = {
        a for a in manifest_docs if any(_touches(mp, manifest_docs[a]) for mp in v.manifests)
    }
    for a in patched:
        texts[a] = yaml.safe_dump_all(manifest_docs[a], sort_keys=False)
    # Absolute paths in the scenario become relative ones, so the bundle is self-contained.
    spec = doc["spec"]
    spec["manifests"] = [_relative(m, scenario_dir) for m in spec["manifests"]]
    scenario_rel = os.path.relpath(scenario_abs, root)
    files = {os.path.relpath(a, root): t for a, t in texts.items()}
    files[scenario_rel] = dump_scenario(doc)
    bundle = Bundle(files=tuple(sorted(files.items())), scenario=scenario_rel)
    node_pools = _check_variant(v.name, where, bundle, doc, policies, max_multiplier, fail)
    digest = _sha256(json.dumps([bundle.files, bundle.scenario, doc], sort_keys=True))
    return Variant(v.name, v.description, bundle, doc, node_pools, digest)


def _flatten(docs: list[Any]) -> Iterator[Any]:
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == "List" and isinstance(d.get("items"), list):
            yield from _flatten(d["items"])
        else:
            yield d


def _touches(mp: ManifestPatchSpec, docs: list[Any]) -> bool:
    ref = DocumentRef(mp.target.kind, mp.target.name, mp.target.namespace)
    return any(ref.matches(d) for d in _flatten(docs))


def _relative(name: str, scenario_dir: Path) -> str:
    if not os.path.isabs(name):
        return name
    return os.path.relpath(name, os.path.abspath(scenario_dir))


def _check_variant(
    name: str,
    where: str,
    bundle: Bundle,
    doc: dict[str, Any],
    policies: list[str],
    max_multiplier: float,
    fail: _Fail,
) -> str:
    """Load the variant as a cell would (every policy, the largest multiplier) and return
    its NodePools as ``karpenter.sh/v1`` YAML.

    Raises:
        InputError: the variant does not load; the scenario's message is quoted.
    """
    from joiner.api.manifests.to_v1 import convert_files
    from joiner.operator.compare import prepare_policies
    from joiner.sim.scenario import load_scenario

    probe = merge_patch(doc, {"spec": {"compare": policies, "asRun": None}})
    cloud = probe["spec"].setdefault("cloud", {})
    cloud["interruptionRateMultiplier"] = (
        float(cloud.get("interruptionRateMultiplier", 1.0)) * max_multiplier
    )
    with bundle.materialized(dump_scenario(probe)) as scenario:
        try:
            sc = load_scenario(scenario)
            prepare_policies(sc)
            manifests = [scenario.parent / m for m in doc["spec"]["manifests"]]
            conversion = convert_files(manifests)
        except InputError as exc:
            raise fail(f"variant {name!r} does not load: {exc}", where) from exc
    pools = [d for d in conversion.documents if d.get("kind") == "NodePool"]
    return yaml.safe_dump_all(pools, sort_keys=False)
