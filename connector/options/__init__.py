"""Options: the catalog of every option, parsing shared by reads and writes, the key/value layout."""
