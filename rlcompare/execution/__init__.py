"""Execution: the driver (plan in, stored runs out) and the backends runs execute on.

:mod:`rlcompare.execution.driver` is backend-agnostic and the only writer of the store;
:mod:`rlcompare.execution.backend` is the seam; ``local`` and ``ray`` are built-in backends,
registered through the ``rlcompare_register_backends`` hook like any outside one.
"""
