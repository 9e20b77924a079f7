"""A pytest plugin that `git cutile-perf` loads (`-p`) into benchmark runs: a paired round after the first
runs only the cases of the configs still open. `--cutile-perf-cases=FILE` names them, one JUnit id
(`classname::name`, as the tool reads the JUnit file back) a line; the other collected cases are
deselected. The warm worker picks a command's cases with the same ids (`junit_id`).
"""


def pytest_addoption(parser):
    parser.addoption(
        "--cutile-perf-cases",
        default=None,
        help="a file of JUnit ids, one a line: only those cases run",
    )


def junit_id(item):
    """The case's id as the JUnit file names it (`classname::name`)."""
    from _pytest.junitxml import mangle_test_address

    names = mangle_test_address(item.nodeid)
    return ".".join(names[:-1]) + "::" + names[-1]


def pytest_collection_modifyitems(config, items):
    path = config.getoption("--cutile-perf-cases")
    if not path:
        return
    with open(path) as f:
        wanted = {line.strip() for line in f if line.strip()}
    kept = [item for item in items if junit_id(item) in wanted]
    dropped = [item for item in items if junit_id(item) not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
