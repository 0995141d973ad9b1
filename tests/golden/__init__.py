"""Golden files and the scripts that wrote them (a package, so that tools see one module
name for make_golden.py: `tests.golden.make_golden`, as the tests import it)."""
