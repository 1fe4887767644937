"""The AWS adapter's optional dependencies, checked when the package is first imported.

boto3 and tomli-w (the TOML of Bottlerocket user data) come with the ``aws`` extra; the
package's ``__init__`` imports this module before any module that imports them, so a
missing one is a ``MissingExtraError`` naming the extra (``pip install 'joiner[aws]'``)
rather than a bare ``ModuleNotFoundError`` from deep inside the adapter.
"""

from joiner.api.extras import require

#: The modules the ``aws`` extra brings, in the order they are checked.
EXTRA_MODULES = ("boto3", "tomli_w")

for _module in EXTRA_MODULES:
    require(_module, "aws", "The AWS cloud provider (--cloud aws)")
