"""Built-in criteria plugins (performance and development facilitation)."""
