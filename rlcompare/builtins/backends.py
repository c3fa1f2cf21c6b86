"""Built-in plugin registering the ``local`` and ``ray`` execution backends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcompare import hookimpl
from rlcompare.execution.local import LocalBackend
from rlcompare.execution.ray_backend import RayBackend

if TYPE_CHECKING:
    from rlcompare.plugins.register import Register


@hookimpl
def rlcompare_register_backends(register: Register) -> None:
    register.add_backend(LocalBackend)
    register.add_backend(RayBackend)
