"""YAML reading with positions in errors (the only place PyYAML is called for input files).

Stricter than ``yaml.safe_load``: a mapping with a duplicate key is an error (kubectl's
strict decoding), files are capped at ``MAX_FILE_BYTES``, and parser failures of every kind
(deep nesting, huge integers) become ``InputError`` rather than a traceback.
"""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path
from typing import Any

import yaml

from joiner.api.errors import InputError
from joiner.api.inputfiles import note_read
from joiner.api.manifests import nulls

#: No real manifest or scenario is this large; a bigger input is a mistake (or /dev/zero).
MAX_FILE_BYTES = 64 * 1024 * 1024


#: libyaml's parser when PyYAML was built with it (about ten times faster on a cluster dump),
#: else the pure-Python one; both with the safe constructor.
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BASE_LOADER):  # type: ignore[valid-type,misc]
    """SafeLoader that rejects duplicate mapping keys."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue  # ``<<: *anchor``: merged keys may be overridden (YAML merge key)
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:
            continue  # unhashable key: construct_mapping reports it with its position
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


#: Plain scalars as kubectl reads them (sigs.k8s.io/yaml over go-yaml v2), not as YAML 1.1
#: resolves them in PyYAML: a timestamp-looking value (``release: 2024-01-01``) stays a
#: string, and there are no base-60 numbers (``window: 1:20`` is the string ``1:20``, not
#: the integer 80). go-yaml v2 resolves neither; the API server then takes both files as
#: they were written. Booleans (``yes``/``on``), octal ``010`` and ``1_000`` are YAML 1.1 in
#: both and unchanged.
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_INT = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_StrictLoader.yaml_implicit_resolvers = {
    first: [
        (tag, _INT if tag == _INT_TAG else _FLOAT if tag == _FLOAT_TAG else regexp)
        for tag, regexp in resolvers
        if tag != _TIMESTAMP_TAG
    ]
    for first, resolvers in _BASE_LOADER.yaml_implicit_resolvers.items()
}


#: A path of ``-`` means standard input, wherever a file is read.
STDIN = "-"

#: The standard input stream last read and its bytes: a command may look at its input
#: twice, so a stream is read once; a new stream (another command in the same process, as
#: a test runner's invocations are) is read afresh, never answered with the last one's.
_STDIN_READ: list[tuple[object, bytes]] = []

#: Nodes a document's aliases may add once expanded: far above any real manifest's, far
#: below what would exhaust memory or time (a "billion laughs" document).
MAX_EXPANDED_NODES = 2_000_000


def _stdin_bytes(max_bytes: int) -> bytes:
    """Standard input's bytes (at most ``max_bytes + 1``), read once per stream."""
    stream = sys.stdin
    if not _STDIN_READ or _STDIN_READ[0][0] is not stream:
        _STDIN_READ[:] = [(stream, stream.buffer.read(max_bytes + 1))]
    return _STDIN_READ[0][1]


#: What a manifest file over the size cap can be turned into.
SPLIT_HINT = (
    "; split it into several files (a cluster dump: one `kubectl get -o yaml` per kind or "
    "namespace), each given with its own -f"
)


def read_text(
    path: Path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES, too_large: str = ""
) -> str:
    """Read a UTF-8 text file of at most ``max_bytes`` (``MAX_FILE_BYTES`` unless the kind
    of file needs more); ``-`` is standard input. The one reader of input files: the file is
    noted as the command's input (``api.inputfiles``), so no output is written over it.
    ``too_large`` is added to the error of a file over the cap (what to do instead).

    Raises:
        InputError: missing, a directory, a FIFO, socket or device, unreadable, too large,
            or not UTF-8.
    """
    name = str(path)
    try:
        if name == STDIN:
            name = "<stdin>"
            data = _stdin_bytes(max_bytes)
        else:
            if path.is_dir():
                raise InputError(f"{what} is a directory, not a file", file=name)
            mode = path.stat().st_mode
            if not stat.S_ISREG(mode):
                kind = (
                    "a FIFO"
                    if stat.S_ISFIFO(mode)
                    else "a socket"
                    if stat.S_ISSOCK(mode)
                    else "a device"
                )
                raise InputError(
                    f"{what} is {kind}, not a regular file (give - to read standard input)",
                    file=name,
                )
            with path.open("rb") as handle:
                data = handle.read(max_bytes + 1)
            note_read(path)
    except FileNotFoundError as exc:
        raise InputError(f"{what} not found", file=name) from exc
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=name) from exc
    if len(data) > max_bytes:
        raise InputError(f"{what} is larger than {max_bytes // 2**20} MiB{too_large}", file=name)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start})", file=name) from exc


def read_documents(path: Path, *, drop_nulls: bool = False) -> list[Any]:
    """All documents of a multi-document YAML (or JSON) file, empty documents dropped
    (``drop_nulls``: as ``parse_documents``).

    Raises:
        InputError: the file is missing or unreadable, or not valid YAML (with line and column).
    """
    text = read_text(path, too_large=SPLIT_HINT)
    return parse_documents(text, str(path), drop_nulls=drop_nulls)


def is_scenario_file(path: Path) -> bool:
    """True when ``path`` holds a ``kind: Scenario`` document (errors surface on load).

    Here rather than in ``sim.scenario`` so that commands which take either a Scenario or
    cluster manifests (``joiner plan -f dump.yaml``) ask without importing the simulator.
    """
    try:
        text = read_text(path)
        # A Scenario names its kind: a cluster dump (tens of MB) is not parsed twice.
        if "Scenario" not in text:
            return False
        docs = parse_documents(text, str(path))
    except InputError:
        return False
    return len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") == "Scenario"


def _expanded_size(root: yaml.Node, name: str) -> None:
    """Refuse a document whose aliases, expanded, add more than ``MAX_EXPANDED_NODES``
    nodes to it (or refer to themselves), before anything is constructed from it. A
    document without aliases is never refused here, however large (its size is bounded by
    ``MAX_FILE_BYTES``): a cluster dump of tens of thousands of Pods has millions of nodes.

    Raises:
        InputError: the aliases expand too much, or an alias is recursive.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()
    added = [0]

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:  # an alias: its node once more
            added[0] += sizes[key]
            if added[0] > MAX_EXPANDED_NODES:
                raise InputError(
                    f"YAML aliases expand this document by more than {MAX_EXPANDED_NODES:,} "
                    "values; refusing to expand it",
                    file=name,
                )
            return sizes[key]
        if key in active:
            raise InputError("a YAML alias refers to the node that contains it", file=name)
        active.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        active.discard(key)
        sizes[key] = total
        return total

    size(root)


class _NeedsNodes(Exception):
    """The text has what ``_from_events`` leaves to the node path: an anchor or alias (their
    expansion is bounded there), an explicit tag, a merge key, a key that is not a scalar,
    a duplicate key (reported there), or nesting deeper than ``MAX_EVENT_DEPTH``."""


_STR_TAG = "tag:yaml.org,2002:str"

#: Collections nested deeper than this go to the node path: its constructor recurses about
#: three Python frames per nested mapping and refuses (``RecursionError``) a few hundred
#: levels down, where the event reader would still accept; no manifest nests this deep.
MAX_EVENT_DEPTH = 100


class _EventReader:
    """Plain YAML (no anchor, alias, explicit tag or merge key: every manifest kubectl
    prints) built into values straight from libyaml's events, without the node graph and
    its constructor, each distinct plain scalar resolved and constructed once (the values
    are immutable: a string, number, bool or null): the values are the node path's (an
    error sends the text there)."""

    def __init__(self, loader: _StrictLoader, *, drop_nulls: bool = False) -> None:
        self.loader = loader
        self.get = loader.get_event
        #: plain scalar text -> its value
        self.plain: dict[str, Any] = {}
        #: leave out every mapping key whose value is null (``nulls.drop_nulls``)
        self.drop_nulls = drop_nulls
        #: collections open around the event being read
        self.depth = 0

    def value(self, event: yaml.Event) -> Any:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            return self.scalar(event)  # type: ignore[arg-type]
        if kind is yaml.MappingStartEvent:
            self.check(event)  # type: ignore[arg-type]
            self.depth += 1
            out: Any = self.mapping()
        elif kind is yaml.SequenceStartEvent:
            self.check(event)  # type: ignore[arg-type]
            self.depth += 1
            out = self.sequence()
        else:
            raise _NeedsNodes  # an alias
        self.depth -= 1
        return out

    def sequence(self) -> list[Any]:
        get, out = self.get, []
        item = get()
        while type(item) is not yaml.SequenceEndEvent:
            out.append(self.value(item))
            item = get()
        return out

    def check(self, event: yaml.NodeEvent) -> None:
        """Refuse (to the node path) an anchor, an explicit tag, or a collection nested
        deeper than ``MAX_EVENT_DEPTH`` (the node path refuses deep nesting as it always did)."""
        if event.anchor is not None or getattr(event, "tag", None) not in (None, "!"):
            raise _NeedsNodes
        if self.depth >= MAX_EVENT_DEPTH:
            raise _NeedsNodes

    def scalar(self, event: yaml.ScalarEvent) -> Any:
        if event.anchor is not None or event.tag not in (None, "!"):
            raise _NeedsNodes
        text = event.value
        if not event.implicit[0]:
            return text  # quoted (or the non-specific tag "!"): a string
        try:
            return self.plain[text]
        except KeyError:
            value = self.plain[text] = self._construct(text, event.implicit)
            return value

    def _construct(self, text: str, implicit: tuple[bool, bool]) -> Any:
        tag = self.loader.resolve(yaml.ScalarNode, text, implicit)
        if tag == _STR_TAG:
            return text
        construct = self.loader.yaml_constructors.get(tag)
        if construct is None:
            # A merge key, or a tag the safe constructor has no constructor for (``=``
            # resolves to YAML 1.1's value tag): the node path merges or refuses it.
            raise _NeedsNodes
        node = yaml.ScalarNode(tag, text)  # an error sends the text to the node path
        return construct(self.loader, node)

    def mapping(self) -> dict[Any, Any]:
        get, out = self.get, {}
        dropped: set[Any] = set()  # keys left out for their null value
        event = get()
        while type(event) is not yaml.MappingEndEvent:
            if type(event) is not yaml.ScalarEvent:
                raise _NeedsNodes  # a collection as a key
            key = self.scalar(event)
            if key in out or key in dropped:
                raise _NeedsNodes  # a duplicate key: the node path says where, as always
            item = get()
            value = self.scalar(item) if type(item) is yaml.ScalarEvent else self.value(item)
            if value is None and self.drop_nulls:
                dropped.add(key)
            else:
                out[key] = value
            event = get()
        return out


def _from_events(text: str, *, drop_nulls: bool = False) -> list[Any]:
    """``text``'s documents as ``_EventReader`` builds them (``drop_nulls``: without the
    mapping keys whose value is null).

    Raises:
        _NeedsNodes: the text needs the node path.
        yaml.YAMLError, ValueError, RecursionError: invalid YAML, a value that cannot be
            read, nesting too deep.
    """
    loader = _StrictLoader(text)
    try:
        reader = _EventReader(loader, drop_nulls=drop_nulls)
        get, docs = loader.get_event, []
        get()  # the stream's start
        while not loader.check_event(yaml.StreamEndEvent):
            get()  # a document's start
            docs.append(reader.value(get()))
            get()  # its end
        return docs
    finally:
        loader.dispose()


def _load_all(text: str, name: str, *, drop_nulls: bool = False) -> list[Any]:
    try:
        return _from_events(text, drop_nulls=drop_nulls)
    except (_NeedsNodes, yaml.YAMLError, ValueError, RecursionError):
        # Anchors, aliases or tags: the node path, which bounds what aliases expand. Any
        # error: the node path too, so that it is reported as it always was (a YAML error
        # before the duplicate key of the same document, and with its lines).
        pass
    loader = _StrictLoader(text)
    try:
        docs: list[Any] = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                _expanded_size(node, name)
            docs.append(loader.construct_document(node))
        return [nulls.drop_nulls(d) for d in docs] if drop_nulls else docs
    finally:
        loader.dispose()


class _NotPlainJson(Exception):
    """The text is JSON that YAML would read differently, or reject: parse it as YAML."""


#: Text the YAML path may read differently or reject, so it decides: characters YAML 1.1
#: does not accept (C0 and C1 controls, DEL, surrogates, U+FFFE/U+FFFF, a BOM inside the
#: text) or reads as line breaks (NEL U+0085, U+2028, U+2029), tabs (not YAML whitespace
#: before a token), and a line break between a key and its colon (a YAML simple key is on
#: one line).
_YAML_MAY_DIFFER = re.compile(
    "[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
    '|"[ \r]*\n[ \r\n]*:'
)
#: Longer keys go to the YAML path: a YAML simple key is at most 1,024 characters.
_MAX_JSON_KEY = 1000


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _NotPlainJson  # a duplicate key: the YAML path reports it with its line
    if out and max(map(len, out)) > _MAX_JSON_KEY:
        raise _NotPlainJson
    return out


def _json_object_without_nulls(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _json_object(pairs)
    if None in out.values():
        return {k: v for k, v in out.items() if v is not None}
    return out


def _json_float(literal: str) -> float:
    if "e" in literal or "E" in literal:
        raise _NotPlainJson  # YAML 1.1 reads 1e3 as a string and 1.0e+3 as a float
    return float(literal)


def _json_constant(_literal: str) -> Any:
    raise _NotPlainJson  # NaN and Infinity are not JSON; YAML reads them as strings


def _load_json(text: str, *, drop_nulls: bool = False) -> list[Any] | None:
    """A JSON document (``kubectl get -o json``, a cluster dump) parsed by the json module,
    or None for anything else, for which the YAML path decides (tens of times faster on a
    dump). JSON is YAML, and for the JSON accepted here the value is the one YAML gives:
    every string is quoted (so no implicit typing), integers and plain decimals read alike,
    and whatever could differ (an exponent, NaN, a ``\\u`` escape such as a surrogate
    pair, a duplicate key, trailing text, deep nesting, a key over 1,000 characters, a
    character YAML rejects or reads as a line break, a tab, a key and its colon on two
    lines) goes to the YAML path, with its errors. JSON has no aliases, so the alias
    expansion bound does not apply.
    """
    if text.lstrip()[:1] not in ("{", "[") or "\\u" in text or _YAML_MAY_DIFFER.search(text):
        return None
    try:
        return [
            json.loads(
                text,
                object_pairs_hook=_json_object_without_nulls if drop_nulls else _json_object,
                parse_float=_json_float,
                parse_constant=_json_constant,
            )
        ]
    except (ValueError, RecursionError, _NotPlainJson):
        return None


#: What JSON's "Extra data" means in a file that was meant to hold one value.
_EXTRA_DATA = (
    " (text after the end of the top-level value: an extra closing brace or bracket before it?)"
)


def _syntax_error(exc: yaml.MarkedYAMLError, text: str, name: str) -> InputError:
    """The error for text YAML cannot parse: JSON's own (line, column, what) for a ``.json``
    file that is not valid JSON either, which a YAML message ("did not find expected
    <document start>") explains poorly; YAML's otherwise."""
    if name.lower().endswith(".json"):
        try:
            json.loads(text)
        except json.JSONDecodeError as bad:
            why = _EXTRA_DATA if bad.msg == "Extra data" else ""
            return InputError(
                f"invalid JSON at line {bad.lineno}, column {bad.colno}: {bad.msg}{why}",
                file=name,
            )
        except (ValueError, RecursionError):
            pass
    mark = exc.problem_mark or exc.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = exc.problem or exc.context or "invalid YAML"
    return InputError(f"YAML syntax error at {where}{problem}", file=name)


def parse_documents(text: str, name: str, *, drop_nulls: bool = False) -> list[Any]:
    """Parse YAML text; ``name`` is used in error messages. With ``drop_nulls``, every
    mapping key whose value is null is left out, as ``nulls.drop_nulls`` does (Kubernetes
    objects; a duplicate key is still an error).

    Raises:
        InputError: invalid YAML (with line and column), a duplicate key, nesting too deep,
            or aliases that expand to a huge document.
    """
    docs = _load_json(text, drop_nulls=drop_nulls)
    if docs is not None:
        return [d for d in docs if d is not None]
    try:
        docs = _load_all(text, name, drop_nulls=drop_nulls)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, text, name) from exc
    except yaml.YAMLError as exc:
        raise InputError(f"YAML syntax error: {exc}", file=name) from exc
    except RecursionError as exc:
        raise InputError("YAML is nested too deeply", file=name) from exc
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise InputError(f"YAML value cannot be read: {exc}", file=name) from exc
    return [d for d in docs if d is not None]
