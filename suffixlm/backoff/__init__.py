"""The back-off family: models that are ARPA files in memory, their index and queries."""
