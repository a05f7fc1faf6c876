"""pytest plugin: --shard k/n keeps every n-th collected test from the k-th (device runs split
test_cuda.py over concurrent processes)."""
def pytest_addoption(parser):
    parser.addoption("--shard", default=None)

def pytest_collection_modifyitems(config, items):
    s = config.getoption("--shard")
    if s:
        k, n = map(int, s.split("/"))
        items[:] = [it for i, it in enumerate(items) if i % n == k]
