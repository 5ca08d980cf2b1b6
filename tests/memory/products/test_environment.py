"""A product run records the product's version among the manifest's environment distributions
(before: only in method_description, while environment.distributions listed openai alone)."""

from importlib import metadata

import pytest

from h2hmem.memory import resolve_method
from h2hmem.run._facts import run_environment


@pytest.mark.parametrize("name", ["mem0", "langmem", "graphiti", "cognee"])
def test_the_product_distribution_is_in_the_environment(name):
    cls = resolve_method(name)
    (dist,) = cls.third_party()
    try:
        want = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed (extra h2hmem[{name}])")
    assert run_environment(cls).distributions[dist] == want


def test_a_builtin_method_adds_no_third_party_distribution():
    assert resolve_method("naive-rag").third_party() == ()
