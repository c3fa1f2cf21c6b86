"""Parity: whether a framework's own update is the canonical one. Reference updates written from the
papers' equations (one module per family), the probes built from them, the verdicts that compare an
adapter's answer with the reference and name the variant that explains a difference, and the
runner that asks each adapter in its own environment, cached per framework version."""
