"""Built-in adapter plugins, one module per framework."""
