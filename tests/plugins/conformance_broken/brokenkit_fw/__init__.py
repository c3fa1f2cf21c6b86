"""Stands for a framework that is heavy to import (tests only)."""

LOADED = True
