"""One module per scenario of the suite; each returns a JSON-ready dict of what it measured."""
