"""The built-in studies (package data: one TOML file per study)."""
