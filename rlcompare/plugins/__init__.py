"""The plugin machinery, rlcompare's composition root: where each registered object comes from
(:mod:`~rlcompare.plugins.origin`), the typed tables registration hooks fill and check
(:mod:`~rlcompare.plugins.register`), and the plugin manager that runs them and hands each layer
the narrow catalogue it needs (:mod:`~rlcompare.plugins.manager`). Only the command line and the
testing kit build the manager."""
