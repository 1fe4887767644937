"""EC2NodeClass ``userData`` formats: MIME multi-part archives (AL2, AL2023) and Bottlerocket
TOML, read with Python's ``email`` package and ``tomllib`` and written back as Karpenter-AWS
writes them.

Karpenter-AWS reads user data in ``pkg/providers/amifamily/bootstrap``: text that starts with
``MIME-Version:`` or ``Content-Type:`` (after white space) is a MIME archive, which must be
``multipart/*`` with a boundary (``mime/mime.go`` ``NewArchive``, ``eksbootstrap.go``
``getMultiPartReader``); Bottlerocket user data must be TOML (``bottlerocketsettings.go``
``UnmarshalTOML``). Anything else fails Karpenter's launch-template build for every launch of
the NodeClass; Joiner checks it when the manifest is loaded (``check``), so such a NodeClass
is an ``InputError`` and nothing is launched.

``email`` and ``tomllib`` are imported by the functions that use them: most manifests carry
no user data, and every manifest load imports this module (``joiner plan``'s start-up).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from joiner.api import jsontext
from joiner.api.errors import InputError

#: EC2's user data limit: "User data is limited to 16 KB, in raw form, before it is
#: base64-encoded" (Amazon EC2 User Guide, "Run commands when you launch an EC2 instance with
#: user data input").
MAX_USER_DATA_BYTES = 16 * 1024

#: Karpenter's boundary for the archives it writes (``mime.go`` ``boundary``).
BOUNDARY = "//"
SHELL_SCRIPT = 'text/x-shellscript; charset="us-ascii"'
NODE_CONFIG = "application/node.eks.aws"


@dataclass(frozen=True, slots=True)
class MIMEPart:
    """One part of a MIME archive: its headers (name, value) in order and its body text."""

    headers: tuple[tuple[str, str], ...]
    body: str

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` header as written ('' when absent)."""
        return next((v for k, v in self.headers if k.lower() == "content-type"), "")


def is_mime(text: str) -> bool:
    """Karpenter's test: the stripped text starts with ``MIME-Version:`` or
    ``Content-Type:``."""
    stripped = text.strip()
    return stripped.startswith("MIME-Version:") or stripped.startswith("Content-Type:")


def mime_parts(text: str, *, field: str = "spec.userData") -> list[MIMEPart]:
    """The parts of a MIME multi-part archive, in order.

    Raises:
        InputError: not a multi-part archive, no boundary, or the boundary never opens a part
            (Karpenter: "user data is not in multipart MIME format").
    """
    from email import errors, policy
    from email.message import Message
    from email.parser import Parser

    fatal = (
        errors.NoBoundaryInMultipartDefect,
        errors.StartBoundaryNotFoundDefect,
        errors.CloseBoundaryNotFoundDefect,
        errors.MultipartInvariantViolationDefect,
    )
    msg = Parser(policy=policy.compat32).parsestr(text)
    if msg.get_content_maintype() != "multipart":
        raise InputError(
            f"MIME user data must be multipart (Content-Type {msg.get_content_type()!r})",
            field=field,
        )
    if msg.get_param("boundary") is None:
        raise InputError("MIME user data has no boundary parameter", field=field)
    defects = [d for d in msg.defects if isinstance(d, fatal)]
    if defects:
        raise InputError(f"malformed MIME user data: {defects[0].__doc__}", field=field)
    payload = msg.get_payload()
    if not isinstance(payload, list):
        raise InputError("malformed MIME user data: no parts", field=field)
    out = []
    for part in payload:
        if not isinstance(part, Message):
            raise InputError("malformed MIME user data: a part is not a message", field=field)
        body = part.get_payload()
        if not isinstance(body, str):
            raise InputError("malformed MIME user data: a nested multi-part part", field=field)
        out.append(MIMEPart(tuple((k, str(v)) for k, v in part.items()), body))
    return out


def write_mime(parts: Sequence[MIMEPart]) -> str:
    """A ``multipart/mixed`` archive with boundary ``//``, byte for byte as Karpenter's
    ``mime.Archive.Serialize`` writes it (LF line ends)."""
    from email import policy
    from email.generator import Generator
    from email.message import Message

    outer = Message(policy=policy.compat32)
    outer["MIME-Version"] = "1.0"
    outer["Content-Type"] = f'multipart/mixed; boundary="{BOUNDARY}"'
    for part in parts:
        inner = Message(policy=policy.compat32)
        for key, value in part.headers:
            inner[key] = value
        inner.set_payload(part.body)
        outer.attach(inner)
    buf = io.StringIO()
    Generator(buf, mangle_from_=False, maxheaderlen=0).flatten(outer)
    return buf.getvalue()


def parse_toml(text: str, *, field: str = "spec.userData") -> dict[str, Any]:
    """Bottlerocket user data as a TOML document.

    Raises:
        InputError: not valid TOML (the parser's message, with line and column).
    """
    return jsontext.parse_toml(text, what="Bottlerocket user data", field=field)


def reads_as_node_config(text: str, *, field: str = "spec.userData") -> bool:
    """Whether AL2023 user data that is not MIME reads as one YAML mapping (or no document):
    Karpenter-AWS passes such text as an ``application/node.eks.aws`` NodeConfig part and
    anything else as a shell script (``bootstrap.py``).

    Raises:
        InputError: YAML nested too deeply to read (a ``RecursionError`` otherwise).
    """
    import yaml

    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    except RecursionError as exc:
        raise InputError("AL2023 user data is YAML nested too deeply", field=field) from exc
    return loaded is None or isinstance(loaded, dict)


def check(ami_family: str, text: str | None, *, field: str = "spec.userData") -> None:
    """Reject user data Karpenter-AWS could not merge for ``ami_family`` (module docstring).

    Raises:
        InputError: larger than EC2 takes (``MAX_USER_DATA_BYTES``), malformed MIME (AL2,
            AL2023), TOML (Bottlerocket), or AL2023 YAML nested too deeply to read.
    """
    if not text:
        return
    size = len(text.encode("utf-8"))
    if size > MAX_USER_DATA_BYTES:
        raise InputError(
            f"user data is {size:,} bytes; EC2 takes at most {MAX_USER_DATA_BYTES:,} "
            "(16 KB before base64 encoding), and Karpenter adds its bootstrap to it",
            field=field,
        )
    if ami_family == "Bottlerocket":
        parse_toml(text, field=field)
    elif ami_family in ("AL2", "AL2023") and is_mime(text):
        mime_parts(text, field=field)
    elif ami_family == "AL2023":
        reads_as_node_config(text, field=field)
