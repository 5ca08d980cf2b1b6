"""Provenance records: component specs name the code and its distribution; the environment names the software."""

from __future__ import annotations

import platform
from importlib import metadata

from h2hmem._version import __version__
from h2hmem.records import ComponentSpec, Environment, capture_environment, component_spec, distribution_of


class _Local:
    """A class defined in a test module, which no installed distribution provides."""


def test_component_spec_of_an_installed_class_names_its_distribution() -> None:
    from pydantic import BaseModel

    spec = component_spec("scorer", "demo", BaseModel, {"k": 5})
    assert spec.target == "pydantic.main:BaseModel"
    assert spec.distribution == "pydantic"
    assert spec.version == metadata.version("pydantic")
    assert spec.options == {"k": 5}


def test_component_spec_of_h2hmem_code_and_of_a_string_target() -> None:
    spec = component_spec("memory", "naive-rag", "h2hmem.memory.naive_rag._memory:NaiveRAGMemory")
    assert (spec.distribution, spec.version) == ("h2hmem", __version__)
    assert spec.target == "h2hmem.memory.naive_rag._memory:NaiveRAGMemory"


def test_component_spec_without_distribution_and_without_target() -> None:
    local = component_spec("memory", "mine", _Local)
    assert local.target == f"{__name__}:_Local"
    assert (local.distribution, local.version) == (None, None)
    model = component_spec("answer_model", "openai:gpt-4o-mini")
    assert (model.target, model.distribution, model.options) == (None, None, {})
    assert distribution_of("no_such_top_level_module_xyz") == (None, None)


def test_capture_environment_records_this_process() -> None:
    env = capture_environment(extra_distributions=("pydantic", "no-such-distribution-xyz"))
    assert env.h2hmem == __version__
    assert env.python == platform.python_version()
    assert env.distributions["pydantic"] == metadata.version("pydantic")
    assert "no-such-distribution-xyz" not in env.distributions
    assert list(env.distributions) == sorted(env.distributions)
    # the test suite runs from a git checkout of h2hmem: the revision is a 40-hex commit
    assert env.git is not None and len(env.git.commit) == 40
    again = Environment.model_validate(env.model_dump(mode="json"))
    assert again == env
    assert ComponentSpec.model_validate({"kind": "judge", "name": "x", "extra_field": 1}).model_extra == {
        "extra_field": 1
    }
