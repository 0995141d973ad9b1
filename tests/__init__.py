"""The tests, a package mirroring the source tree (tests/README.md): each module has one
name, `tests.domain.test_decider`, so that no test folder shadows the package it tests."""
