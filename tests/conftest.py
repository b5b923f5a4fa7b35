"""Test-process set-up shared by every test module.

TensorFlow's logical CPU devices can only be configured before the first op runs, once
per process, so it happens here, at collection time, before any test module imports
code that touches TensorFlow.

GPUs are hidden, from this process and from the subprocesses tests start (they inherit
`CUDA_VISIBLE_DEVICES`): the tests compare numbers bit for bit between runs, strategies
and processes, and expect the devices of a CPU-only machine (the default strategy and
`num_gpus=0` on the CPU, `_fake_gpus` on logical CPUs), so they hold on a GPU machine too.
"""

import os
import random

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import numpy as np
import pytest

NUM_LOGICAL_CPUS = 2


def _configure_logical_cpus():
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")  # in case CUDA was initialised already
    cpus = tf.config.list_physical_devices("CPU")
    # Listing *logical* devices would initialise the runtime, so configure first.
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * NUM_LOGICAL_CPUS
    )


_configure_logical_cpus()


@pytest.fixture(autouse=True)
def _seed_everything():
    """Every test starts from the same numpy, Python and TF random state."""
    import tensorflow as tf

    random.seed(0)
    np.random.seed(0)
    tf.random.set_seed(0)
    yield


# ------------------------------------------------------------------ one Ray per process

#: `ray.init` arguments of the tests' Ray runtime. address="local": a Ray of this test
#: process's own. Without it, a second pytest-xdist worker's tests connected to the first
#: one's 2-CPU Ray, and two sweeps waited for each other's CPUs (seen: a PBT sweep
#: spinning for 10+ minutes).
RAY_INIT = {"address": "local", "num_cpus": 2, "log_to_driver": False,
            "configure_logging": False}
RAY_FIXTURE = "ray_runtime"
#: started: whether `ray_runtime` started the running Ray; modules: those with a test that
#: uses `ray_runtime` (set at collection).
_ray_state = {"started": False, "modules": set()}


@pytest.fixture(scope="module")
def ray_runtime():
    """This test process's local Ray runtime (2 CPUs), for tests that run Ray actors.

    The modules that use it run one after the other (`pytest_collection_modifyitems`)
    and share one runtime: it starts on first use and stops after the last test of those
    modules (`pytest_runtest_teardown`), so a Ray start (seconds, more under load) is paid
    once per run of Ray modules, not once per module, and no idle Ray lingers beside the
    other tests. A test must leave no actor or placement group behind (stop its algorithm
    or worker set), since the next module's tests share the runtime. Module-scoped, so
    that a module's own fixtures (a worker set) can use it; Ray is started at most once a
    module and stopped only by `pytest_runtest_teardown`."""
    ray = pytest.importorskip("ray")
    from tfrl.backends.ray import init_ray

    if init_ray(**RAY_INIT):
        _ray_state["started"] = True
    yield ray


def _module_name(item):
    return getattr(getattr(item, "module", None), "__name__", None)


def pytest_collection_modifyitems(session, config, items):
    """Moves the modules with a test that uses `ray_runtime` to the front, together (their
    own order and every other test's order kept), so that they share one Ray runtime;
    long tests first also suits pytest-xdist's scheduling."""
    modules = {_module_name(item) for item in items
               if RAY_FIXTURE in getattr(item, "fixturenames", ())}
    modules.discard(None)
    _ray_state["modules"] = modules
    first = [item for item in items if _module_name(item) in modules]
    if first and len(first) < len(items):
        ids = {id(item) for item in first}
        items[:] = first + [item for item in items if id(item) not in ids]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the fixtures' teardown (so a module's worker set has stopped): stops the Ray
    runtime `ray_runtime` started when the next test is not in one of its modules."""
    yield
    if _ray_state["started"] and (nextitem is None
                                  or _module_name(nextitem) not in _ray_state["modules"]):
        import ray

        _ray_state["started"] = False
        if ray.is_initialized():
            ray.shutdown()
