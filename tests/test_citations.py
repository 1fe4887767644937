"""Every citation in the code is one a reader can follow: the upstream project, file and
function, or the AWS documentation page. Notes that live outside the repository (the
``karpenter-semantics``/``aws-semantics`` reference documents) are not citations."""

from __future__ import annotations

from pathlib import Path

import joiner

#: Names of documents kept outside the repository, which a reader cannot open.
UNREACHABLE = ("karpenter-semantics", "aws-semantics")


def test_no_module_cites_a_document_outside_the_repository():
    root = Path(joiner.__file__).parent
    found = [
        f"{path.relative_to(root.parent)}:{number}: {line.strip()}"
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".yml", ".json", ".j2"}
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if any(name in line for name in UNREACHABLE)
    ]
    assert not found, "cite the upstream file and function instead:\n" + "\n".join(found)


def test_no_doc_cites_a_document_outside_the_repository():
    repo = Path(joiner.__file__).parent.parent
    pages = [repo / "README.md", *sorted((repo / "docs").rglob("*.md"))]
    found = [
        f"{page.relative_to(repo)}:{number}: {line.strip()}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if any(name in line for name in UNREACHABLE)
    ]
    assert not found, "cite the upstream source instead:\n" + "\n".join(found)
