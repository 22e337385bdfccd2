"""Installing and shipping the package: auto-registration, --py-files on a cluster."""
