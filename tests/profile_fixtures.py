"""Module-scoped fixtures of the profile tests: the shipped proteome, as codes and as pyhmmer's block.

Import them into a test module (``from profile_fixtures import block, proteome``) after its
``pytest.importorskip("pyhmmer")``.
"""
import pytest

from hmmbench.profile import datasets


@pytest.fixture(scope="module")
def proteome():
    return datasets.load_proteome()


@pytest.fixture(scope="module")
def block(proteome):
    return proteome.to_pyhmmer()
