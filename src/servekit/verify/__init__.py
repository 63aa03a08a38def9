"""Verification: kits (manifest, signature, subjects) and model weights.

Every verifier raises a specific :class:`~servekit.errors.VerificationError`
subclass naming the file, the expected and the actual value; none returns a bool.
"""
