"""steps/checks."""
