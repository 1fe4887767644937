"""Errors raised for bad input, each naming where the bad value came from."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input (manifest, scenario, flag): the CLI exits 2 and nothing runs.

    The message names the file, the object (``Kind/name``) and the field path, so a person
    can find and fix the value without reading a traceback.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        obj: str | None = None,
        field: str | None = None,
    ) -> None:
        self.file = file
        self.obj = obj
        self.field = field
        self.detail = message
        where = [p for p in (file, obj, f"field {field}" if field else None) if p]
        super().__init__(f"{': '.join(where)}: {message}" if where else message)

    def located(
        self, *, file: str | None = None, obj: str | None = None, field_prefix: str | None = None
    ) -> InputError:
        """Return a copy with missing location parts filled in (inner layers know less)."""
        field = self.field
        if field_prefix:
            field = f"{field_prefix}.{field}" if field else field_prefix
        return InputError(self.detail, file=self.file or file, obj=self.obj or obj, field=field)
