"""Shared by the tests that need a package index: what pip and pre-commit print when it cannot be reached."""

NETWORK_HINTS = (
    "Could not find a version that satisfies",
    "No matching distribution found",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Max retries exceeded",
    "ConnectionError",
    "ReadTimeoutError",
    "getaddrinfo failed",
    "SSLError",
)
