"""Fixtures shared by the integration tests."""

from tests.integration.browser import browser

__all__ = ["browser"]
