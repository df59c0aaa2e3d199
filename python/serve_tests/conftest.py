def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: starts a two-node Ray cluster on this machine (about a minute); run alone with -m cluster")
