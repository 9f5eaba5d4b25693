"""Named choices (backends, strategies, layouts) and the one place their names are parsed.

>>> from engine.batched.backend import Backend
>>> Backend.parse(" CPU ")
<Backend.CPU: 'cpu'>
"""

from __future__ import annotations

import enum

from engine.errors import BackendError

__all__ = ["Choice"]


class Choice(str, enum.Enum):
    """An enum of lower-case names. ``parse`` accepts a member or its name (any case, spaces
    trimmed) and raises :class:`~engine.errors.BackendError` listing the choices otherwise."""

    @classmethod
    def label(cls) -> str:
        """What the choice is called in messages."""
        return cls.__name__.lower()

    @classmethod
    def parse(cls, name):
        if isinstance(name, cls):
            return name
        try:
            return cls(str(name).strip().lower())
        except ValueError:
            choices = ", ".join(c.value for c in cls)
            raise BackendError(f"unknown {cls.label()} {name!r}; choose one of: {choices}") from None
