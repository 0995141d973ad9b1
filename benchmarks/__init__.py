def engine_form() -> str:
    """ "compiled" when the rules engine runs as mypyc-compiled modules (a build with
    LUDO_COMPILE=1, see setup.py), else "interpreted": benchmarks print it beside their
    figures, since the two differ by 1.5-2.5x."""
    import domain.decider

    compiled = domain.decider.__file__.endswith((".so", ".pyd"))
    return "compiled" if compiled else "interpreted"
