"""rlcompare's own plugins: hook implementations that register the built-in algorithm families,
workloads and suites, registry entries, report formats and execution backends through the same
hooks an outside package uses. The core never imports them; the plugin manager loads them by name
(:data:`rlcompare.plugins.manager.BUILTIN_PLUGINS`)."""
