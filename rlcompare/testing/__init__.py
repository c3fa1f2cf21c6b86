"""The conformance kit for adapter authors: every rule of the adapter contract, checked against one
adapter the way ``rlcompare run`` judges it.

In an adapter package's own CI::

    pytest --rlcompare-adapter myfw          # or several ids, comma-separated, or 'all'

The pytest plugin (:mod:`rlcompare.testing.pytest_plugin`, entry point ``pytest11``) then adds one
test per rule (:data:`rlcompare.testing.conformance.RULES`), named after the rule and the adapter.
Importing this package stays light: the kit's machinery loads only when the option is given.
"""

from __future__ import annotations
