"""The intermediate representation and its tables (functions, includes, known headers, dependent types,
integer folding, demangled names). May import kernlint.model and below (the layers: tests/test_layers.py)."""
