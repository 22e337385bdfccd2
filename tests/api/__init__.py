"""Options, errors and the simplest round trip: what a user meets first."""
